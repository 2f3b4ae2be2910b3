"""``bot-toolsearch mcp`` as a client launches it: over stdio and over streamable HTTP.

The official ``mcp`` client (`ClientSession`) drives ``python -m bot_toolsearch mcp`` as a
subprocess (PYTHONPATH inherited) in front of the third-party ``mcp-server-time`` and folder
tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from bot_toolsearch._mcp.door import McpDoor
from bot_toolsearch._mcp.server import Sessions, run_http
from tests.mcp.conftest import write_config
from tests.mcp.test_door import Seen, names, text

DOOR = [sys.executable, "-m", "bot_toolsearch", "mcp"]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


async def _exercise(session: ClientSession, seen: Seen) -> None:
    await session.initialize()
    first = await session.list_tools()
    assert names(first) == ["tool_search"]
    assert "time-_-get_current_time" in (first.tools[0].description or "")
    found = await session.call_tool("tool_search", {"query": "select:time.get_current_time"})
    assert json.loads(text(found))["loaded"] == ["time-_-get_current_time"]
    with anyio.fail_after(10):
        while seen.count() == 0:
            seen.event = anyio.Event()
            await seen.event.wait()
    assert names(await session.list_tools()) == ["tool_search", "time-_-get_current_time"]
    now = await session.call_tool("time.get_current_time", {"timezone": "UTC"})
    assert not now.is_error
    assert json.loads(text(now))["timezone"] == "UTC"
    denied = await session.call_tool("notes.secret", {"text": "x"})
    assert denied.is_error
    assert "no tool named notes.secret" in text(denied)


def _time_only(tmp_path: Path) -> Path:
    """The test config without the changing server (one upstream process is enough here)."""
    config = write_config(tmp_path)
    lines = config.read_text().split("\n")
    config.write_text("\n".join(lines[: lines.index('name = "up"') - 1]) + "\n")
    return config


async def test_over_stdio(tmp_path: Path) -> None:
    config = _time_only(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=[*DOOR[1:], "--config", str(config)],
        env=_environment(),
        cwd=str(tmp_path),
    )
    seen = Seen()
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w", encoding="utf-8") as stream:
        async with (
            stdio_client(params, errlog=stream) as (read, write),
            ClientSession(read, write, message_handler=seen) as session,
        ):
            await _exercise(session, seen)
    assert "mcp: serving" in errlog.read_text()  # stdout carries only the protocol


def _start_door(config: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    """``bot-toolsearch mcp --http`` on a free port, once its port answers and it still runs
    (``None``: it exited, as when another test took the port between probe and bind)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [*DOOR, "--http", "--port", str(port), "--config", str(config)],
        env=_environment(),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):  # the door is up once its port answers
        if process.poll() is not None:
            return None
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                pass
        except OSError:
            anyio.run(anyio.sleep, 0.05)
            continue
        anyio.run(anyio.sleep, 0.5)  # the port may have been another test's
        if process.poll() is None:
            return process, f"http://127.0.0.1:{port}/mcp"
        return None
    process.terminate()
    process.wait(timeout=30)
    return None


@pytest.fixture(scope="module")
def http_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``bot-toolsearch mcp --http`` on a free 127.0.0.1 port (one per module: every test
    opens its own client sessions)."""
    tmp_path = tmp_path_factory.mktemp("http_door")
    config = _time_only(tmp_path)
    for _ in range(3):
        started = _start_door(config, tmp_path)
        if started is not None:
            break
    else:
        raise AssertionError("bot-toolsearch mcp --http did not start")
    process, url = started
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_over_streamable_http(http_door: str) -> None:
    seen = Seen()
    async with (
        streamable_http_client(http_door) as (read, write),
        ClientSession(read, write, message_handler=seen) as session,
    ):
        await _exercise(session, seen)


async def test_http_sessions_are_separate(http_door: str) -> None:
    async with (
        streamable_http_client(http_door) as (read, write),
        ClientSession(read, write) as first,
    ):
        await first.initialize()
        await first.call_tool("tool_search", {"query": "select:time.convert_time"})
        assert names(await first.list_tools()) == ["tool_search", "time-_-convert_time"]
        async with (
            streamable_http_client(http_door) as (read2, write2),
            ClientSession(read2, write2) as second,
        ):
            await second.initialize()
            assert names(await second.list_tools()) == ["tool_search"]


@asynccontextmanager
async def serving(door: McpDoor, **options: Any) -> AsyncIterator[tuple[str, Sessions]]:
    """``run_http`` of ``door`` on a free 127.0.0.1 port (its URL and its `Sessions`)."""
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))  # kept bound: no other test can take the port meanwhile
    port = bound.getsockname()[1]
    servers: list[Any] = []
    serving = asyncio.create_task(
        run_http(door, "127.0.0.1", port, ready=servers.append, sock=bound, **options)
    )
    try:
        for _ in range(600):
            if servers and servers[0].started:
                break
            await anyio.sleep(0.05)
        app = servers[0].config.app
        while not isinstance(app, Sessions):
            app = app.app
        yield f"http://127.0.0.1:{port}/mcp", app
    finally:
        servers[0].should_exit = True
        with anyio.fail_after(30):
            await serving
        bound.close()


async def test_an_ended_http_session_is_forgotten(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """A streamable-HTTP session's state (its loads) goes when the client ends the session
    (its DELETE), so the door keeps nothing of clients that left; a live session keeps its
    loads meanwhile."""
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    async with (
        serving(door) as (url, _),
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as staying,
    ):
        await staying.initialize()
        await staying.call_tool("tool_search", {"query": "select:notes.shout"})
        for _ in range(3):
            async with (
                streamable_http_client(url) as (read2, write2),
                ClientSession(read2, write2) as leaving,
            ):
                await leaving.initialize()
                await leaving.call_tool("tool_search", {"query": "select:notes.boom"})
                assert door.client_sessions == 2
            for _ in range(600):  # the DELETE's answer reaches the client first
                if door.client_sessions == 1:
                    break
                await anyio.sleep(0.05)
            assert door.client_sessions == 1
        assert names(await staying.list_tools()) == ["tool_search", "notes-_-shout"]


async def test_2026_clients_over_http_and_stdio(http_door: str, tmp_path: Path) -> None:
    """The official client on the 2026-07-28 protocol: over HTTP two concurrent clients get
    the same ``bridge`` list (the config says ``append``) and never see each other's loads;
    search in one client, call in another; over stdio the same."""
    async with Client(http_door) as first, Client(http_door) as second:
        listed = await first.list_tools()
        assert names(listed) == ["tool_search", "call_tool"]
        found = await first.call_tool("tool_search", {"query": "select:time.convert_time"})
        assert json.loads(text(found))["loaded"] == ["time-_-convert_time"]
        for client in (first, second):
            assert (await client.list_tools()).model_dump() == listed.model_dump()
        now = await second.call_tool(
            "call_tool", {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert json.loads(text(now))["timezone"] == "UTC"
    params = StdioServerParameters(
        command=sys.executable,
        args=[*DOOR[1:], "--config", str(_time_only(tmp_path))],
        env=_environment(),
        cwd=str(tmp_path),
    )
    async with Client(params) as over_stdio:
        assert over_stdio.protocol_version == LATEST_MODERN_VERSION
        assert names(await over_stdio.list_tools()) == ["tool_search", "call_tool"]
        now = await over_stdio.call_tool(
            "call_tool", {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert json.loads(text(now))["timezone"] == "UTC"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "stranger", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


async def _open(http: httpx.AsyncClient, url: str, *, search: bool = False) -> int:
    """A raw handshake-era session (initialize only, or with a search that loads): the
    status of its opening request."""
    opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
    if opened.status_code != 200 or not search:
        return opened.status_code
    headers = {
        **ACCEPT,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=headers)).status_code == 202
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "tool_search", "arguments": {"query": "select:notes.boom"}},
    }
    searched = await http.post(url, json=call, headers=headers)
    assert "notes-_-boom" in searched.text
    return opened.status_code


async def test_a_session_flood_never_ends_a_session_that_holds_loads(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """#41: strangers' new sessions (10 times the bound) end only sessions that hold nothing, so
    new clients keep getting in and a live session keeps its loads; once every open session
    holds loads a new one gets 503, and the live session still keeps its own."""
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    async with (
        serving(door, max_sessions=8) as (url, sessions),
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as live,
        httpx.AsyncClient(timeout=30) as http,
    ):
        await live.initialize()
        await live.call_tool("tool_search", {"query": "select:notes.shout"})
        # More than the SDK itself would hold (8 + its margin of 64): the ended sessions are
        # gone from the SDK too, not only from the count.
        statuses = [await _open(http, url) for _ in range(80)]
        assert statuses == [200] * 80
        assert len(sessions.open) <= 8
        assert names(await live.list_tools()) == ["tool_search", "notes-_-shout"]
        assert [await _open(http, url, search=True) for _ in range(7)] == [200] * 7
        assert door.client_sessions == 8
        refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 503
        assert "Too many open sessions" in refused.text
        assert names(await live.list_tools()) == ["tool_search", "notes-_-shout"]
        async with Client(url) as sessionless:  # no session: never refused for room
            assert names(await sessionless.list_tools()) == ["tool_search", "call_tool"]


async def test_with_keys_a_request_without_one_gets_401(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """``--api-key``: no key, a wrong key or another scheme gets 401 before the SDK reads the
    request (nothing is opened); the key's holder is served, its list marked private."""
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    async with serving(door, keys=["k-one", "k-two"]) as (url, sessions):
        async with httpx.AsyncClient(timeout=30) as http:
            for auth in ({}, {"authorization": "Bearer nope"}, {"authorization": "Basic k-one"}):
                denied = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth})
                assert denied.status_code == 401
                assert denied.headers["www-authenticate"].startswith("Bearer")
            assert sessions.open == {}
        bearer = {"authorization": "Bearer k-two"}
        async with (
            httpx2.AsyncClient(headers=bearer) as keyed,
            Client(streamable_http_client(url, http_client=keyed)) as client,
        ):
            listed = await client.list_tools()
            assert names(listed) == ["tool_search", "call_tool"]
            assert listed.cache_scope == "private"
