"""What tool search did, on every tool-searched reply of the proxy: ``x-toolsearch-*`` headers,
and a stream's closing SSE comment, read with the real openai SDK over HTTP."""

from __future__ import annotations

import logging

import httpx
import openai
import pytest

from bot_toolsearch._protocol.trace import CallTrace, RoundTrace
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.exchange import Exchange
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, text
from tests.proxy._raw import Upstream, answer, post, request, served
from tests.wrap._tools import chat_tools, responses_tools

USER = {"role": "user", "content": "Weather in Oslo?"}


def _script(server: ScriptedOpenAIServer) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="weather city"),), usage=Usage(100, 5, 0)),
        ToolCallsTurn((call("send_email", to="a", body="b"),), usage=Usage(110, 6, 0)),
        ToolCallsTurn((call("get_weather", city="Oslo"),), usage=Usage(120, 7, 0)),
    )


def test_a_chat_reply_says_what_tool_search_did(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    _script(server)
    client = openai.OpenAI(base_url=proxy_url, api_key="sk-client-key", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=[USER], tools=chat_tools()
    )
    headers = raw.headers
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"
    assert headers["x-toolsearch-rounds"] == "3"
    assert headers["x-toolsearch-hidden-rounds"] == "2"
    assert headers["x-toolsearch-searches"] == "1"
    assert "get_weather" in headers["x-toolsearch-loaded"].split(",")
    assert headers["x-toolsearch-refusals"] == "1"  # send_email: not loaded yet
    assert headers["x-toolsearch-input-tokens"] == "330"
    assert headers["x-toolsearch-output-tokens"] == "18"
    assert all("sk-client-key" not in value for value in headers.values())
    client.close()


def test_a_responses_reply_says_it_too(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    server.script(call("tool_search", query="select:get_weather"), text("Sunny."))
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    raw = client.responses.with_raw_response.create(
        model="m", input="Weather?", tools=responses_tools()
    )
    assert raw.parse().output_text == "Sunny."
    assert (raw.headers["x-toolsearch-rounds"], raw.headers["x-toolsearch-loaded"]) == (
        "2",
        "get_weather",
    )
    client.close()


def test_a_reply_without_tools_has_no_tool_search_headers(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    server.script(text("Hi."))
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(model="m", messages=[USER])
    assert not [k for k in raw.headers if k.startswith("x-toolsearch")]
    client.close()


def test_a_stream_ends_with_the_summary_as_an_sse_comment(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    _script(server)
    body = {
        "model": "m",
        "messages": [USER],
        "tools": chat_tools(),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream(
        "POST", f"{proxy_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
    ) as response:
        assert response.headers["x-toolsearch-summary"] == "sse-comment"
        assert "x-toolsearch-rounds" not in response.headers
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert lines[-2] == (
        ": x-toolsearch rounds=3 hidden-rounds=2 searches=1 loaded="
        + _loaded(lines[-2])
        + " refusals=1 input-tokens=330 output-tokens=18"
    )
    assert "get_weather" in _loaded(lines[-2]).split(",")
    # The SDK reads the same stream and skips the comment.
    _script(server)
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    chunks = list(
        client.chat.completions.create(model="m", messages=[USER], tools=chat_tools(), stream=True)
    )
    names = [c.function.name for chunk in chunks for c in (chunk.choices[0].delta.tool_calls or ())]
    assert names == ["get_weather"]
    client.close()


def _loaded(comment: str) -> str:
    return comment.partition(" loaded=")[2].partition(" ")[0]


def test_the_loaded_header_is_ascii_and_bounded() -> None:
    names = [f"ns.tööl_{i:04d}" for i in range(400)]
    exchange = Exchange("POST", "/v1/chat/completions", route="chat_completions")
    exchange.add(RoundTrace(1, (), (), None, loaded=tuple(names), hidden=True))
    headers = dict(exchange.headers())
    value = headers[b"x-toolsearch-loaded"].decode("ascii")
    assert len(value) <= 1100
    assert value.startswith("ns.t%C3%B6%C3%B6l_0000,")
    shown = value.split(",")[:-1]
    assert value.split(",")[-1] == f"...+{len(names) - len(shown)}"
    assert len(shown) > 10


def test_a_plain_round_counts_its_tokens_and_nothing_else() -> None:
    exchange = Exchange("POST", "/v1/chat/completions", route="chat_completions")
    assert exchange.add(RoundTrace(1, ("a",), (), "hi", 7, 2, output_tokens=3)) == (0, 0)
    searched = CallTrace("c1", "tool_search", "{}", "answered", None, "r")
    refused = CallTrace("c2", "nope", "{}", "refused", "unknown", "no")
    round_two = RoundTrace(2, (), (searched, refused), None, 5, loaded=("x",), hidden=True)
    assert exchange.add(round_two) == (1, 1)
    assert exchange.summary() == {
        "rounds": 2,
        "hidden_rounds": 1,
        "searches": 1,
        "loaded": ["x"],
        "refusals": 1,
        "input_tokens": 12,
        "output_tokens": 3,
    }


def test_a_request_the_proxy_refuses_is_logged_and_counted_with_its_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The proxy's own refusals (415, 413) are logged and counted as what was sent, not as a
    client that left (499)."""
    upstream = Upstream(answer({"data": []}))
    app = ProxyApp(f"{upstream.url}/v1", max_body=64)
    caplog.set_level(logging.INFO, logger="bot_toolsearch.access")
    with served(app) as port:
        not_json = request(
            port,
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 2",
            b"hi",
        )
        too_large = post(port, "/v1/chat/completions", {"messages": ["x" * 100]})
    assert (not_json.status, too_large.status) == (415, 413)
    logged = [r.access["status"] for r in caplog.records if hasattr(r, "access")]
    assert logged == [415, 413]
    assert app.metrics.requests.value(route="chat_completions", code="4xx") == 2
    upstream.close()


def test_the_target_is_read_only_for_the_access_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the access log off nothing of the target is formatted; with it on, the record's
    path is the target as sent, its secret query values redacted."""
    from bot_toolsearch._proxy import exchange as module
    from bot_toolsearch._proxy.metrics import ProxyMetrics

    read: list[str] = []
    logged_target = module.logged_target
    monkeypatch.setattr(module, "logged_target", lambda s: read.append("x") or logged_target(s))
    observer = module.Observer(ProxyMetrics(lambda: 0, lambda: 0))
    scope = {"method": "GET", "path": "/v1/models", "raw_path": b"/v1/models"}
    scope["query_string"] = b"api-key=sk-secret&limit=3"
    log = logging.getLogger(module.ACCESS_LOGGER)
    level, propagate = log.level, log.propagate
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log.addHandler(handler)
    try:
        log.setLevel(logging.WARNING)
        observer.finish(observer.begin("GET", scope))
        assert read == []
        assert records == []
        log.setLevel(logging.INFO)
        log.propagate = False
        observer.finish(observer.begin("GET", scope))
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate
    assert read == ["x"]
    assert records[0].access["path"] == "/v1/models?api-key=REDACTED&limit=3"  # type: ignore[attr-defined]
    assert records[0].getMessage() == "GET /v1/models?api-key=REDACTED&limit=3 499"


def test_nothing_loaded_is_the_empty_list_of_names() -> None:
    from bot_toolsearch._proxy.exchange import _names

    exchange = Exchange("POST", "/v1/chat/completions", route="chat_completions")
    exchange.add(RoundTrace(1, ("a",), (), "hi", 7, 2, output_tokens=3))
    headers = dict(exchange.headers())
    assert headers[b"x-toolsearch-loaded"] == _names([]).encode("ascii") == b""
    assert headers[b"x-toolsearch-rounds"] == b"1"
    exchange.add(RoundTrace(2, (), (), None, 5, loaded=("x", "y"), hidden=True))
    assert dict(exchange.headers())[b"x-toolsearch-loaded"] == _names(["x", "y"]).encode()
