"""The proxy's HTTP edge, with raw sockets on 127.0.0.1: request targets, limits, errors."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from bot_toolsearch._config.settings import BotSettings, SkillsSettings, ToolsSettings
from bot_toolsearch._proxy.app import ProxyApp, redact_query
from bot_toolsearch._wrap import caller_tools
from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.proxy._raw import Upstream, answer, post, request, served, status
from tests.proxy.test_limits import COMPLETION
from tests.wrap._tools import chat_tools

USER = {"role": "user", "content": "hi"}
ADMIN = {
    "type": "function",
    "function": {
        "name": "admin.wipe",
        "description": "Wipe every record.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def _error(reply: Any, status: int) -> dict[str, Any]:
    assert reply.status == status, reply
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str)
    assert error["message"]
    return dict(error)


@pytest.mark.parametrize("path", ["", "/"])
def test_a_target_that_is_not_a_path_reaches_no_other_host(path: str) -> None:
    victim = Upstream(answer({"secret": True}), host="127.0.0.2")
    upstream = Upstream(answer({"data": []}))
    app = ProxyApp(f"http://user:pw@127.0.0.1:{upstream.port}{path}")
    with served(app) as port:
        for target in (f"@127.0.0.2:{victim.port}/secret", f"@127.0.0.2:{victim.port}"):
            reply = request(port, f"GET {target} HTTP/1.1\r\nHost: x".encode())
            _error(reply, 400)
        # An origin-form path that looks like userinfo stays a path on the upstream.
        reply = request(port, f"GET /@127.0.0.2:{victim.port}/x HTTP/1.1\r\nHost: x".encode())
        assert reply.status == 200
    assert not victim.connected.is_set()
    assert upstream.paths == [f"/@127.0.0.2:{victim.port}/x"]
    assert b"authorization: basic " in upstream.received[0].lower()  # the upstream's own
    victim.close()
    upstream.close()


def test_dot_segments_never_leave_the_base_path() -> None:
    upstream = Upstream(answer({"data": []}))
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        for target in ("/v1/../../admin", "/v1/%2e%2e/%2e%2e/admin", "/../admin", "/v1/%2E%2E/.."):
            _error(request(port, f"GET {target} HTTP/1.1\r\nHost: x".encode()), 404)
        for target in ("/v1%2f..%2f..%2fadmin", "/v1/..%5cadmin"):
            _error(request(port, f"GET {target} HTTP/1.1\r\nHost: x".encode()), 400)
        assert not upstream.received
        # Inside the root, a path is normalised and stays under the upstream's base path.
        for target in ("/v1/../admin", "/v1/./x/../models/", "//v1//models"):
            assert request(port, f"GET {target} HTTP/1.1\r\nHost: x".encode()).status == 200
    assert upstream.paths == ["/v1/admin", "/v1/models", "/v1/models"]
    upstream.close()


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/v1/./chat/completions",
        "/v1/../v1/chat/completions",
        "//v1//chat/completions",
        "/v1/chat/completions/",
        "/chat/completions",
        "/v1/chat/%63ompletions",
    ],
)
def test_every_spelling_of_the_chat_endpoint_goes_through_tool_search(path: str) -> None:
    settings = BotSettings(
        skills=SkillsSettings(tool_search_enabled=True), tools=ToolsSettings(deny=("admin.*",))
    )
    with ScriptedOpenAIServer() as server:
        server.script(text("ok"))
        with served(ProxyApp(server.base_url, settings=settings)) as port:
            payload = {"model": "m", "messages": [USER], "tools": [ADMIN, *chat_tools()]}
            reply = post(port, path, payload)
        assert reply.status == 200, reply
        (seen,) = server.requests
        assert seen.tool_names == ["tool_search"]
        assert "admin" not in json.dumps(seen.body)


def test_a_body_over_the_cap_is_refused_never_cut() -> None:
    upstream = Upstream(answer({"ok": True}))
    with ScriptedOpenAIServer() as server, served(ProxyApp(upstream.url, max_body=2000)) as port:
        big = {"model": "m", "messages": [USER], "pad": "x" * 3000}
        _error(post(port, "/v1/chat/completions", big), 413)
        _error(post(port, "/v1/embeddings", big), 413)
        # Announced small, sent large in chunks: refused as it arrives.
        chunk = b"x" * 1500
        head = (
            b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked"
        )
        body = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2 + b"0\r\n\r\n"
        _error(request(port, head, body), 413)
        small = {"model": "m", "input": "x" * 100}
        assert post(port, "/v1/embeddings", small).status == 200
        assert not server.requests
    assert upstream.paths == ["/embeddings"]
    upstream.close()


def test_more_tools_than_the_cap_is_a_clear_400() -> None:
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url, max_tools=70)) as port:
        payload = {"model": "m", "messages": [USER], "tools": chat_tools(71)}
        error = _error(post(port, "/v1/chat/completions", payload), 400)
        assert error["param"] == "tools"
        assert "70" in error["message"]
        server.script(text("ok"))
        payload["tools"] = chat_tools(70)
        assert post(port, "/v1/chat/completions", payload).status == 200
        assert len(server.requests) == 1


def test_healthz_answers_while_a_new_tool_list_is_indexed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    building, release = threading.Event(), threading.Event()
    build = caller_tools.CallerTools.build

    def slow_build(tools: Any, api: Any, dot_delimiter: str) -> caller_tools.CallerTools:
        building.set()
        assert release.wait(30)
        return build(tools, api, dot_delimiter)

    monkeypatch.setattr(caller_tools.CallerTools, "build", slow_build)
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url)) as port:
        server.script(text("ok"))
        replies: list[Any] = []
        payload = {"model": "m", "messages": [USER], "tools": chat_tools()}
        big = threading.Thread(
            target=lambda: replies.append(post(port, "/v1/chat/completions", payload))
        )
        big.start()
        assert building.wait(30)
        # The list is being indexed; the event loop still answers.
        health = request(port, b"GET /healthz HTTP/1.1\r\nHost: x", timeout=10)
        assert health.json() == {"status": "ok"}
        assert not replies
        release.set()
        big.join(30)
        assert replies[0].status == 200


def test_the_tool_cache_is_bounded_by_what_its_lists_hold() -> None:
    cache = caller_tools.ToolsCache(size=100, max_bytes=250_000)
    lists = [chat_tools(70 + i) for i in range(6)]  # about 15 kB of JSON each, ~90 kB held
    first = cache.get(lists[0], "chat", "-_-")
    first.pin()  # accepted lists: only the byte bound applies
    for tools in lists[1:]:
        cache.get(tools, "chat", "-_-").pin()
    assert 1 < len(cache) < 6
    assert cache.cached_bytes <= 250_000
    assert cache.lookup(lists[0], "chat", "-_-") is None  # the oldest went first
    assert cache.get(lists[0], "chat", "-_-") is not first
    # One list larger than the bound is kept while it is the newest.
    huge = chat_tools(400)
    indexed = cache.get(huge, "chat", "-_-")
    assert len(cache) == 1
    assert cache.cached_bytes > 250_000
    assert cache.get(huge, "chat", "-_-") is indexed


BAD_BODIES: list[tuple[str, bytes]] = [
    ("deep", b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("stream", json.dumps({"model": "m", "messages": [USER], "stream": "yes"}).encode()),
    ("infinity", b'{"model": "m", "messages": [], "temperature": Infinity}'),
    ("nan", b'{"model": "m", "messages": [], "temperature": NaN}'),
    ("not json", b"{'model': 'm'}"),
    ("not utf-8", b'{"model": "\xff"}'),
    ("array", b"[1, 2]"),
    ("messages", b'{"model": "m", "messages": "hi"}'),
    ("tools", b'{"model": "m", "messages": [], "tools": {"a": 1}}'),
]


@pytest.mark.parametrize(("name", "body"), BAD_BODIES, ids=[n for n, _ in BAD_BODIES])
def test_a_bad_body_is_a_json_400(name: str, body: bytes, caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url)) as port:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}"
        )
        _error(request(port, head.encode(), body), 400)
        assert not server.requests
    assert not [r for r in caplog.records if r.exc_info]


UPSTREAM_REPLIES: list[tuple[str, bytes, str]] = [
    ("html", b"<html>oops</html>", "text/html"),
    ("garbage json", b"{not json", "application/json"),
    ("message null", b"", "application/json"),
    ("not an object", b"[1]", "application/json"),
]


def _completion(**changes: Any) -> bytes:
    completion: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hi"},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    completion.update(changes)
    return json.dumps(completion).encode()


@pytest.mark.parametrize(
    ("name", "raw", "kind"), UPSTREAM_REPLIES, ids=[r[0] for r in UPSTREAM_REPLIES]
)
def test_an_unusable_upstream_answer_is_a_json_502(
    name: str, raw: bytes, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    if name == "message null":
        raw = _completion(choices=[{"index": 0, "finish_reason": "stop", "message": None}])
    upstream = Upstream(answer(raw, content_type=kind))
    with served(ProxyApp(upstream.url)) as port:
        payload = {"model": "m", "messages": [USER], "tools": chat_tools()}
        reply = post(port, "/v1/chat/completions", payload)
    assert reply.status == 502, reply
    _error(reply, 502)
    assert not [r for r in caplog.records if r.exc_info]
    upstream.close()


def test_an_answer_with_a_count_that_is_no_number_is_served_with_the_count_as_zero(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As in the Bot and the wrapper: the answer is good, only its accounting is not.
    raw = _completion(usage={"prompt_tokens": "lots", "completion_tokens": 1, "total_tokens": 1})
    upstream = Upstream(answer(raw))
    with served(ProxyApp(upstream.url)) as port:
        payload = {"model": "m", "messages": [USER], "tools": chat_tools()}
        reply = post(port, "/v1/chat/completions", payload)
    assert reply.status == 200, reply
    body = reply.json()
    assert body["choices"][0]["message"]["content"] == "hi"
    assert body["usage"]["prompt_tokens"] == 0
    assert any("usage count that is no number" in r.getMessage() for r in caplog.records)
    upstream.close()


def test_a_non_ascii_key_is_a_json_401_and_reaches_no_upstream() -> None:
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url)) as port:
        body = json.dumps({"model": "m", "messages": [USER]}).encode()
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer sk-\xe9\xff\r\nContent-Length: %d" % len(body)
        )
        _error(request(port, head, body), 401)
        forwarded = request(port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Note: \xe9")
        assert forwarded.status == 200
        assert not server.requests


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
def test_the_json_endpoints_require_a_json_content_type(content_type: str) -> None:
    with ScriptedOpenAIServer() as server, served(ProxyApp(server.base_url)) as port:
        body = json.dumps({"model": "m", "messages": [USER]}).encode()
        for path in ("/v1/chat/completions", "/v1/responses"):
            header = f"\r\nContent-Type: {content_type}" if content_type else ""
            head = f"POST {path} HTTP/1.1\r\nHost: x{header}\r\nContent-Length: {len(body)}"
            _error(request(port, head.encode(), body), 415)
        assert not server.requests


def test_keys_in_query_strings_are_redacted_in_the_access_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = Upstream(answer({"data": []}))
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    with served(ProxyApp(upstream.url), access_log=True) as port:
        target = "/v1/models?api-key=sk-one&key=sk-two&limit=3&access_token=sk-three"
        assert request(port, f"GET {target} HTTP/1.1\r\nHost: x".encode()).status == 200
    logged = caplog.text
    assert "limit=3" in logged
    assert "api-key=REDACTED" in logged
    assert "sk-one" not in logged
    assert "sk-two" not in logged
    assert "sk-three" not in logged
    assert b"sk-one" in upstream.received[0]  # forwarded as the client sent it
    upstream.close()


def test_redact_query_leaves_other_parameters() -> None:
    assert (
        redact_query("/a?x=1&API_KEY=s&sig=t&plain") == "/a?x=1&API_KEY=REDACTED&sig=REDACTED&plain"
    )
    assert redact_query("/a") == "/a"


@pytest.mark.parametrize("code", [301, 302, 307, 308])
@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/models"])
def test_an_upstream_redirect_is_never_followed_to_another_host(code: int, route: str) -> None:
    """The SDK's HTTP client follows redirects; the proxy's must not: a redirect would take
    the request (its body, and any header the client library keeps) off the upstream."""
    victim = Upstream(answer({"secret": True}), host="127.0.0.2")
    elsewhere = f"http://127.0.0.2:{victim.port}/v1/chat/completions"
    upstream = Upstream(status(code, {}, f"Location: {elsewhere}\r\n"))
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        if route == "/v1/models":
            reply = request(port, b"GET /v1/models HTTP/1.1\r\nHost: x")
        else:
            reply = post(port, route, {"model": "m", "messages": [USER]})
        assert reply.status >= 300
        assert reply.status != 200
    assert not victim.connected.is_set()
    assert len(upstream.received) >= 1
    victim.close()
    upstream.close()


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/models"])
def test_a_cookie_the_upstream_sets_is_never_sent_with_another_clients_request(
    route: str,
) -> None:
    """The proxy's HTTP client is shared by every client: a cookie the upstream set in its
    answer to one client must not ride along with the next client's request."""
    upstream = Upstream(status(200, COMPLETION, "Set-Cookie: session=alice; Path=/\r\n"))
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        for key in ("alice", "bob"):
            auth = f"\r\nAuthorization: Bearer {key}"
            if route == "/v1/models":
                reply = request(port, f"GET /v1/models HTTP/1.1\r\nHost: x{auth}".encode())
            else:
                reply = post(port, route, {"model": "m", "messages": [USER]}, extra=auth)
            assert reply.status == 200
    assert len(upstream.received) == 2
    assert all(b"\r\ncookie:" not in sent.lower() for sent in upstream.received)
    upstream.close()
