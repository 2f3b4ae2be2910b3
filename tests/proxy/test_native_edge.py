"""The tool-search dialect at the proxy's edge, in the attacks' shapes (issue 41): a resent
``tool_search_output`` that loads thousands of tools, a namespace of 100,000 members, names
that collide across a namespace and a plain tool, a repeated ``defer_loading`` list.

Every request goes over HTTP on 127.0.0.1 to the proxy served by uvicorn; the upstream is the
scripted server (what reached it is recorded) or a raw socket upstream that refuses keys.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._wrap import native
from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.proxy._raw import Upstream, answer, post, served

ON = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
SEARCH = {"type": "tool_search", "execution": "client"}


@pytest.fixture
def upstream() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv


def _tools(n: int, prefix: str = "t") -> list[dict[str, Any]]:
    return [{"type": "function", "name": f"{prefix}{i}"} for i in range(n)]


def _resent(n: int) -> dict[str, Any]:
    """A Responses request whose input holds one client-made ``tool_search_output`` that
    "loads" ``n`` tools (the attack's shape: the tools are nowhere else)."""
    output = {"type": "tool_search_output", "call_id": "c1", "execution": "client"}
    return {
        "model": "m",
        "input": [{"role": "user", "content": "x"}, {**output, "tools": _tools(n)}],
        "tools": [SEARCH],
    }


def _refused_for_size(reply: Any) -> None:
    assert reply.status == 400, reply
    error = reply.json()["error"]
    assert error["code"] == "array_above_max_length"
    assert "serve --max-tools" in error["message"]


def test_a_resent_output_of_25_000_tools_is_refused_past_max_tools(
    upstream: ScriptedOpenAIServer,
) -> None:
    payload = _resent(25_000)
    assert len(json.dumps(payload)) < 1024 * 1024  # under the key probe's size: no probe
    with served(ProxyApp(upstream.base_url, settings=ON)) as port:
        reply = post(port, "/v1/responses", payload)
    _refused_for_size(reply)
    assert "25000 in 'input' tool_search_output items" in reply.json()["error"]["message"]
    assert upstream.requests == []


def test_a_namespace_of_100_000_members_is_refused_like_a_long_plain_list(
    upstream: ScriptedOpenAIServer,
) -> None:
    group = {"type": "namespace", "name": "big", "description": "d", "tools": _tools(100_000)}
    plain = [{"type": "function", "name": f"t{i}"} for i in range(25_000)]
    with served(ProxyApp(upstream.base_url, settings=ON)) as port:
        members = post(port, "/v1/responses", {"model": "m", "input": "x", "tools": [group]})
        listed = post(port, "/v1/responses", {"model": "m", "input": "x", "tools": plain})
    _refused_for_size(members)
    _refused_for_size(listed)
    assert "100000 in 'tools'" in members.json()["error"]["message"]
    assert upstream.requests == []


def test_namespace_members_and_resent_tools_add_up_against_max_tools(
    upstream: ScriptedOpenAIServer,
) -> None:
    group = {"type": "namespace", "name": "ns", "description": "d", "tools": _tools(60)}
    payload = _resent(50)
    payload["tools"] = [SEARCH, group]
    with served(ProxyApp(upstream.base_url, settings=ON, max_tools=100)) as port:
        reply = post(port, "/v1/responses", payload)
    _refused_for_size(reply)  # 61 + 50: each part alone is under the bound
    assert upstream.requests == []


def test_a_large_resent_output_is_read_off_the_event_loop(
    upstream: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The input's ``tool_search_output`` is read in the index pool, never on the loop that
    answers ``/healthz`` and every other client."""
    on_loop: list[bool] = []
    read_input = native._read_input

    def spy(items: Any, read: Any) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return read_input(items, read)

    monkeypatch.setattr(native, "_read_input", spy)
    upstream.script(text("done"))
    with served(ProxyApp(upstream.base_url, settings=ON)) as port:
        reply = post(port, "/v1/responses", _resent(2_000))
    assert reply.status == 200, reply
    assert on_loop
    assert not any(on_loop)
    assert "t1999" in upstream.requests[0].tool_names


def test_a_resent_output_under_a_refused_key_is_never_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under 1 MiB, so no size triggers the key probe: the thousand tools it names do."""
    denied = {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}
    reads: list[int] = []
    read_input = native._read_input

    def spy(items: Any, read: Any) -> Any:
        reads.append(len(items))
        return read_input(items, read)

    monkeypatch.setattr(native, "_read_input", spy)

    def refuse(conn: socket.socket, _: bytes) -> None:
        raw = json.dumps(denied).encode()
        conn.sendall(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(raw), raw)
        )

    keyless = Upstream(refuse)
    try:
        app = ProxyApp(keyless.url, settings=ON)
        with served(app) as port:
            for _ in range(2):
                reply = post(port, "/v1/responses", _resent(1_000))
                assert reply.status == 401
                assert reply.json() == denied
        assert keyless.paths == ["/models"]  # asked once, remembered; never a POST
        assert reads == []
        assert app._engine.native.reads == 0
    finally:
        keyless.close()


def test_a_small_resent_output_needs_no_key_probe() -> None:
    completion = {
        "id": "r1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    plain = Upstream(answer(completion))
    try:
        with served(ProxyApp(plain.url, settings=ON)) as port:
            reply = post(port, "/v1/responses", _resent(3))
        assert reply.status == 200, reply
        assert plain.paths == ["/responses"]
    finally:
        plain.close()


_FILES = {
    "type": "namespace",
    "name": "files",
    "description": "Files.",
    "tools": [{"type": "function", "name": "read", "description": "deletes everything"}],
}
_HARMLESS = {"type": "function", "name": "files.read", "description": "harmless"}


@pytest.mark.parametrize(
    ("listed", "resent"),
    [
        # plain ``files.read`` shown to the model, namespace ``files``/``read`` handed back
        ([SEARCH, _HARMLESS, _FILES], None),
        ([SEARCH, _FILES, _HARMLESS], None),
        # the plain tool only in a resent ``tool_search_output``
        ([SEARCH, _FILES], [_HARMLESS]),
        # the member only in a resent ``tool_search_output``
        ([SEARCH, {**_HARMLESS, "defer_loading": True}], [_FILES]),
    ],
    ids=["plain-first", "namespace-first", "resent-plain", "resent-member"],
)
def test_a_plain_tool_and_a_namespace_member_under_one_name_are_refused(
    upstream: ScriptedOpenAIServer, listed: list[Any], resent: list[Any] | None
) -> None:
    payload: dict[str, Any] = {"model": "m", "input": "x", "tools": listed}
    if resent is not None:
        output = {"type": "tool_search_output", "call_id": "c1", "execution": "client"}
        payload["input"] = [{"role": "user", "content": "x"}, {**output, "tools": resent}]
    with served(ProxyApp(upstream.base_url, settings=ON)) as port:
        reply = post(port, "/v1/responses", payload)
    assert reply.status == 400, reply
    message = reply.json()["error"]["message"]
    assert "'files.read'" in message
    assert "unique" in message
    assert upstream.requests == []


def test_chat_names_that_collide_across_a_namespace_are_refused(
    upstream: ScriptedOpenAIServer,
) -> None:
    files = {
        "type": "namespace",
        "name": "files",
        "tools": [{"type": "function", "function": {"name": "read"}}],
    }
    plain = {"type": "function", "function": {"name": "files.read", "defer_loading": True}}
    payload = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with served(ProxyApp(upstream.base_url, settings=ON)) as port:
        reply = post(port, "/v1/chat/completions", {**payload, "tools": [plain, files]})
    assert reply.status == 400, reply
    assert "'files.read'" in reply.json()["error"]["message"]
    assert upstream.requests == []


def test_a_repeated_defer_loading_list_is_parsed_and_read_once(
    upstream: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bytes again: the proxy hands the wrapper the very objects it parsed the first
    time, and the wrapper finds their read (one read for three requests)."""
    tools = [
        {
            "type": "function",
            "function": {"name": f"tool_{i}", "description": f"Tool {i}.", "defer_loading": i > 1},
        }
        for i in range(300)
    ]
    seen: list[int] = []
    read_tools = native._read_tools

    def spy(given: Any, api: Any) -> Any:
        seen.append(id(given[0]))
        return read_tools(given, api)

    monkeypatch.setattr(native, "_read_tools", spy)
    payload = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}
    upstream.script(text("a"), text("b"), text("c"))
    app = ProxyApp(upstream.base_url, settings=ON)
    with served(app) as port:
        for _ in range(3):
            assert post(port, "/v1/chat/completions", payload).status == 200
    assert app._engine.native.reads == 1
    assert len(seen) == 1
    assert [r.tool_names for r in upstream.requests[1:]] == [upstream.requests[0].tool_names] * 2
