"""``[tools] allow``/``deny`` through the proxy: every spelling of a tool, every path (issue 27).

Raw sockets on 127.0.0.1: the client writes bytes, a recording upstream answers. Before, with
``deny = ["admin.*"]``, ``admin.wipe`` reached the upstream through ``functions``,
``function_call``, ``tool_choice``, a ``custom`` tool, and the verbatim ``/v1/assistants`` and
``/v1/realtime/sessions`` bodies.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.passthrough import refusal
from tests.proxy._raw import Upstream, answer, drip, post, request, served
from tests.wrap._tools import chat_tools

DENY = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"deny": ["admin.*"]}}
)
USER = {"role": "user", "content": "hi"}
CHAT_TEXT = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}
ADMIN_FUNCTION = {"name": "admin.wipe", "parameters": {"type": "object", "properties": {}}}
ADMIN_TOOL = {"type": "function", "function": ADMIN_FUNCTION}


def _refused(reply: Any, param: str | None = None) -> dict[str, Any]:
    assert reply.status == 403, reply
    error = reply.json()["error"]
    assert error["code"] == "tool_not_permitted"
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    return dict(error)


@pytest.mark.parametrize(
    "extra",
    [
        {"function_call": {"name": "admin.wipe"}, "functions": [ADMIN_FUNCTION]},
        {"tools": chat_tools(), "tool_choice": {"type": "function", "function": ADMIN_FUNCTION}},
    ],
    ids=["function_call", "tool_choice"],
)
def test_a_choice_of_a_denied_tool_is_a_403_and_reaches_no_upstream(extra: dict[str, Any]) -> None:
    upstream = Upstream(answer(CHAT_TEXT))
    with served(ProxyApp(upstream.url, settings=DENY)) as port:
        reply = post(port, "/v1/chat/completions", {"model": "m", "messages": [USER], **extra})
    _refused(reply, next(k for k in extra if k in ("function_call", "tool_choice")))
    assert upstream.received == []
    upstream.close()


def test_denied_functions_and_custom_tools_never_reach_the_upstream() -> None:
    upstream = Upstream(answer(CHAT_TEXT))
    custom = {"type": "custom", "custom": {"name": "admin.wipe"}}
    with served(ProxyApp(upstream.url, settings=DENY)) as port:
        for body in (
            {"functions": [ADMIN_FUNCTION, {"name": "get_weather"}]},
            {"tools": [*chat_tools(), custom, ADMIN_TOOL]},
        ):
            reply = post(port, "/v1/chat/completions", {"model": "m", "messages": [USER], **body})
            assert reply.status == 200, reply
    assert len(upstream.received) == 2
    for sent in upstream.received:
        assert b"admin.wipe" not in sent
    upstream.close()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/assistants", {"model": "m", "tools": [ADMIN_TOOL]}),
        ("/v1/assistants/asst_1", {"tools": [ADMIN_TOOL]}),
        ("/v1/threads/thread_1/runs", {"assistant_id": "a", "tools": [ADMIN_TOOL]}),
        ("/v1/realtime/sessions", {"model": "m", "tools": [ADMIN_FUNCTION]}),
        ("/v1/realtime/client_secrets", {"session": {"type": "realtime"}}),
        ("/v1/batches", {"input_file_id": "f", "endpoint": "/v1/chat/completions"}),
        ("/v1/some/new/endpoint", {"deep": [{"config": {"tool_choice": "auto"}}]}),
    ],
)
def test_a_pass_through_body_that_carries_tools_is_refused(path: str, body: object) -> None:
    upstream = Upstream(answer({"ok": True}))
    with served(ProxyApp(upstream.url, settings=DENY)) as port:
        reply = post(port, path, body)
    _refused(reply)
    assert upstream.received == []
    upstream.close()


def test_pass_through_reads_and_tool_free_writes_are_forwarded() -> None:
    upstream = Upstream(answer({"ok": True}))
    with served(ProxyApp(upstream.url, settings=DENY)) as port:
        assert request(port, b"GET /v1/assistants HTTP/1.1\r\nHost: x").status == 200
        assert post(port, "/v1/embeddings", {"model": "e", "input": "tools"}).status == 200
    assert upstream.paths == ["/assistants", "/embeddings"]
    upstream.close()


def test_with_no_list_configured_pass_through_is_verbatim() -> None:
    upstream = Upstream(answer({"ok": True}))
    plain = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    with served(ProxyApp(upstream.url, settings=plain)) as port:
        assert post(port, "/v1/assistants", {"model": "m", "tools": [ADMIN_TOOL]}).status == 200
    assert b"admin.wipe" in upstream.received[0]
    upstream.close()


def test_refusal_walks_escaped_keys_and_deep_bodies() -> None:
    escaped = b'{"\\u0074ools": []}'
    assert refusal("POST", "/assistants", escaped) is not None
    deep = json.dumps({"a": [[[[[[[[[[{"b": 1}]]]]]]]]]]}).encode()
    assert refusal("POST", "/x", deep) is None
    hidden = b"[" * 200 + b'{"tools": 1}' + b"]" * 200
    assert refusal("POST", "/x", hidden) is not None
    assert refusal("DELETE", "/assistants/a", b'{"tools": []}') is None
    assert refusal("POST", "/files", b"--boundary\r\n...") is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "m", "note": "\xff\xfe", "tools": [{"type": "function"}]}',  # not UTF-8
        b"[" * 3000 + b'{"tools": [{"type": "function"}]}' + b"]" * 3000,  # past the limit
        b'\xef\xbb\xbf{"x": "\xff", "tools": []}',  # a BOM, then not UTF-8
        b'\n {"tools": [], "x": "\xc3"}',  # whitespace first, a cut UTF-8 sequence
    ],
)
def test_a_pass_through_body_python_cannot_parse_is_refused_while_a_list_is_set(
    raw: bytes,
) -> None:
    """Issue 41, item 8: such a body was forwarded ("not JSON: the upstream answers it"), its
    tools unchecked, to an upstream whose parser may be more lenient."""
    upstream = Upstream(answer({"ok": True}))
    head = (
        f"POST /v1/assistants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(raw)}"
    ).encode()
    with served(ProxyApp(upstream.url, settings=DENY)) as port:
        reply = request(port, head, raw)
        form = request(
            port,
            b"POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Length: 14",
            b"--boundary\r\n..",
        )
    _refused(reply)
    assert "cannot be read" in str(reply.json()["error"])
    assert form.status == 200  # a body that is not JSON at all is the upstream's to read
    assert upstream.paths == ["/files"]
    upstream.close()


def test_a_pass_through_answer_that_never_ends_is_cut_at_the_timeout() -> None:
    """Every outbound call has a total deadline: an upstream that drips its answer a byte at
    a time (each read well within any per-read timeout) is a 502 at ``timeout``."""
    stop = threading.Event()
    upstream = Upstream(drip(stop, every=0.1))
    try:
        with served(ProxyApp(f"{upstream.url}/v1", timeout=1.0)) as port:
            reply = request(port, b"GET /v1/models HTTP/1.1\r\nHost: x")
        assert reply.status == 502
        assert reply.json()["error"]["code"] == "upstream_timeout"
    finally:
        stop.set()
        upstream.close()
