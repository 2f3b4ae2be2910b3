"""``[proxy] native_tool_search = "pass"`` holds ``[tools] allow``/``deny`` (issue 41, item 3):
every spelling of a denied tool in a request in the dialect is left out before it reaches the
upstream, a ``tool_choice`` naming one is refused, and a reply calling one is never handed to
the client. The scripted upstream records what reached it; the client talks HTTP on
127.0.0.1 to the proxy served by uvicorn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.proxy._raw import post, request, served

PASS = BotSettings.model_validate(
    {
        "skills": {"tool_search_enabled": True},
        "proxy": {"native_tool_search": "pass"},
        "tools": {"deny": ["admin.*"]},
    }
)
EMULATE = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"deny": ["admin.*"]}}
)
SEARCH = {"type": "tool_search"}
LIST = {"type": "function", "name": "files.list", "description": "List files."}
WIPE = {"type": "function", "name": "admin.wipe", "description": "Wipe the disk."}
MEMBER = {"type": "function", "name": "wipe", "description": "Wipe the disk."}
CHAT_LIST = {"type": "function", "function": {"name": "files.list", "defer_loading": True}}
CHAT_WIPE = {"type": "function", "function": {"name": "admin.wipe", "description": "Wipe."}}
USER = {"role": "user", "content": "x"}


def _group(*members: dict[str, Any], name: str = "admin") -> dict[str, Any]:
    return {"type": "namespace", "name": name, "description": "Admin.", "tools": list(members)}


def _output(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_search_output", "call_id": "c1", "execution": "client", "tools": tools}


def _responses(tools: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "input": "x", "tools": [SEARCH, LIST, *tools], **extra}


def _chat(tools: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [USER], "tools": [CHAT_LIST, *tools], **extra}


SENT = {
    "function": ("/v1/responses", _responses([WIPE])),
    "function-deferred": ("/v1/responses", _responses([{**WIPE, "defer_loading": True}])),
    "member": ("/v1/responses", _responses([_group(MEMBER)])),
    "member-deferred": ("/v1/responses", _responses([_group({**MEMBER, "defer_loading": True})])),
    "member-beside-a-permitted-one": (
        "/v1/responses",
        _responses([_group(MEMBER, {**MEMBER, "name": "status"}, name="ops")]),
    ),
    "custom-deferred": (
        "/v1/responses",
        _responses([{"type": "custom", "name": "admin.wipe", "defer_loading": True}]),
    ),
    "resent-function": (
        "/v1/responses",
        {**_responses([]), "input": [USER, _output(WIPE)]},
    ),
    "resent-member": (
        "/v1/responses",
        {**_responses([]), "input": [USER, _output(_group(MEMBER))]},
    ),
    "chat-function-deferred": (
        "/v1/chat/completions",
        _chat([{"type": "function", "function": {**CHAT_WIPE["function"], "defer_loading": True}}]),
    ),
    "chat-function": ("/v1/chat/completions", _chat([CHAT_WIPE])),
    "chat-member": (
        "/v1/chat/completions",
        _chat([_group({"type": "function", "function": {"name": "wipe"}})]),
    ),
}
DENIED = {"ops": ["admin.*", "ops.wipe"]}


@pytest.fixture
def upstream() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def _settings(deny: list[str]) -> BotSettings:
    return PASS.model_copy(update={"tools": PASS.tools.model_copy(update={"deny": deny})})


@pytest.mark.parametrize("spelling", list(SENT))
def test_a_denied_tool_never_reaches_the_upstream_in_pass_mode(
    upstream: ScriptedOpenAIServer, spelling: str
) -> None:
    path, payload = SENT[spelling]
    deny = ["admin.*", "ops.wipe"]
    upstream.script(text("ok"))
    with served(ProxyApp(upstream.base_url, settings=_settings(deny))) as port:
        reply = post(port, path, payload)
    assert reply.status == 200, reply
    (sent,) = upstream.requests
    raw = json.dumps(sent.body)
    assert "wipe" not in raw  # in no spelling, under no name
    assert "files.list" in raw  # the permitted tool goes as the client wrote it
    if spelling == "member-beside-a-permitted-one":
        assert '"status"' in raw
    if spelling.startswith("resent"):
        assert any(item.get("type") == "tool_search_output" for item in sent.body["input"])


CHOICES = {
    "function": ("/v1/responses", {"type": "function", "name": "admin.wipe"}),
    "member": ("/v1/responses", {"type": "function", "name": "wipe", "namespace": "admin"}),
    "allowed-member": (
        "/v1/responses",
        {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "function", "name": "wipe", "namespace": "admin"}],
        },
    ),
    "chat-function": (
        "/v1/chat/completions",
        {"type": "function", "function": {"name": "admin.wipe"}},
    ),
}


@pytest.mark.parametrize("mode", ["pass", "emulate"])
@pytest.mark.parametrize("spelling", list(CHOICES))
def test_a_tool_choice_of_a_denied_tool_is_refused_in_either_mode(spelling: str, mode: str) -> None:
    path, choice = CHOICES[spelling]
    tools = [_group(MEMBER), WIPE] if path == "/v1/responses" else [CHAT_WIPE]
    make = _responses if path == "/v1/responses" else _chat
    with ScriptedOpenAIServer(refuse_native=mode == "emulate") as upstream:
        settings = PASS if mode == "pass" else EMULATE
        with served(ProxyApp(upstream.base_url, settings=settings)) as port:
            reply = post(port, path, make(tools, tool_choice=choice))
        assert reply.status == 403, reply
        assert reply.json()["error"]["code"] == "tool_not_permitted"
        assert "admin.wipe" in reply.json()["error"]["message"]
        assert upstream.requests == []


def test_a_permitted_member_choice_passes(upstream: ScriptedOpenAIServer) -> None:
    choice = {"type": "function", "name": "status", "namespace": "ops"}
    upstream.script(text("ok"))
    with served(ProxyApp(upstream.base_url, settings=PASS)) as port:
        payload = _responses([_group({**MEMBER, "name": "status"}, name="ops")], tool_choice=choice)
        assert post(port, "/v1/responses", payload).status == 200
    assert upstream.requests[0].body["tool_choice"] == choice


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
def test_a_call_of_a_denied_tool_is_never_handed_to_the_client(
    upstream: ScriptedOpenAIServer, path: str
) -> None:
    """An upstream that calls a tool it was never sent (made up, or a backend's own search):
    the reply is refused (502), never handed over."""
    payload = _responses([]) if path == "/v1/responses" else _chat([])
    upstream.script(call("admin.wipe"), call("admin.wipe"))
    with served(ProxyApp(upstream.base_url, settings=PASS)) as port:
        reply = post(port, path, payload)
        assert reply.status == 502, reply
        assert "'admin.wipe'" in reply.json()["error"]["message"]
        assert b'"function_call"' not in reply.body
        assert b'"tool_calls"' not in reply.body
        body = json.dumps({**payload, "stream": True}).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}"
        )
        streamed = request(port, head.encode(), body)
    assert streamed.status == 200
    assert b"admin.wipe" in streamed.body  # named in the error event only
    assert b"do not permit" in streamed.body
    assert b'"arguments"' not in streamed.body
    assert b"[DONE]" not in streamed.body
