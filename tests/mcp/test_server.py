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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bot_toolsearch._mcp.door import McpDoor
from bot_toolsearch._mcp.server import run_http
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
    assert "time.get_current_time" in (first.tools[0].description or "")
    found = await session.call_tool("tool_search", {"query": "select:time.get_current_time"})
    assert json.loads(text(found))["loaded"] == ["time.get_current_time"]
    with anyio.fail_after(10):
        while seen.count() == 0:
            seen.event = anyio.Event()
            await seen.event.wait()
    assert names(await session.list_tools()) == ["tool_search", "time.get_current_time"]
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


@pytest.fixture(scope="module")
def http_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``bot-toolsearch mcp --http`` on a free 127.0.0.1 port (one per module: every test
    opens its own client sessions)."""
    tmp_path = tmp_path_factory.mktemp("http_door")
    config = _time_only(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [*DOOR, "--http", "--port", str(port), "--config", str(config)],
        env=_environment(),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(600):  # the door is up once its port answers
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                if process.poll() is not None:
                    raise AssertionError("bot-toolsearch mcp --http exited") from None
                anyio.run(anyio.sleep, 0.05)
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
        assert names(await first.list_tools()) == ["tool_search", "time.convert_time"]
        async with (
            streamable_http_client(http_door) as (read2, write2),
            ClientSession(read2, write2) as second,
        ):
            await second.initialize()
            assert names(await second.list_tools()) == ["tool_search"]


async def test_an_ended_http_session_is_forgotten(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """A streamable-HTTP session's state (its loads) goes when the client ends the session
    (its DELETE), so the door keeps nothing of clients that left; a live session keeps its
    loads meanwhile."""
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    servers: list[Any] = []
    serving = asyncio.create_task(run_http(door, "127.0.0.1", port, ready=servers.append))
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(600):
            if servers and servers[0].started:
                break
            await anyio.sleep(0.05)
        async with (
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
            assert names(await staying.list_tools()) == ["tool_search", "notes.shout"]
    finally:
        servers[0].should_exit = True
        with anyio.fail_after(30):
            await serving
