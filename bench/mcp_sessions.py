"""Issue 41 item 6: a flood of new MCP sessions over HTTP against a client that loaded tools.

``python -m bench.mcp_sessions [--tree PATH] [--sessions N] [--search]`` starts ``bot-toolsearch
mcp --http`` from ``PATH`` (default: this tree) on 127.0.0.1 over one tool folder, connects a
live client (the official ``mcp`` client, handshake era) that loads ``notes.shout``, then opens
``N`` sessions as strangers would (``initialize``, ``notifications/initialized``,
``tools/list``; with ``--search`` also a ``tool_search`` that loads), 32 at a time. It prints
whether the live client still lists its load after the first 1,100 and after all, the statuses
the strangers and a new client got, and the door's RSS before and after. Not part of
``make bench`` (it floods for about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

VERSION = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream"}


def _config(root: Path) -> Path:
    folder = root / "tools" / "notes" / "shout"
    folder.mkdir(parents=True)
    function = {
        "name": "shout",
        "description": "Shout a note in capitals.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    (folder / "config.json").write_text(json.dumps({"type": "function", "function": function}))
    (folder / "handler.py").write_text("def execute(text=''):\n    return text.upper()\n")
    config = root / "config.toml"
    config.write_text(
        "[bot]\nhot_reload = false\n[skills]\ntool_search_enabled = true\n"
        'tool_search_loading = "append"\n[tools]\ndirs = ["tools"]\n'
    )
    return config


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _stranger(http: httpx.AsyncClient, url: str, search: bool) -> int:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "stranger", "version": "1"},
        },
    }
    try:
        opened = await http.post(url, json=init, headers=ACCEPT)
        if opened.status_code != 200:
            return opened.status_code
        headers = {
            **ACCEPT,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": VERSION,
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=note, headers=headers)
        listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        await http.post(url, json=listed, headers=headers)
        if search:
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "tool_search", "arguments": {"query": "shout"}},
            }
            await http.post(url, json=call, headers=headers)
        return opened.status_code
    except httpx.HTTPError:
        return -1


async def _flood(url: str, count: int, search: bool) -> Counter[int]:
    statuses: Counter[int] = Counter()
    queue = iter(range(count))
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:

        async def worker() -> None:
            for _ in queue:
                statuses[await _stranger(http, url, search)] += 1

        await asyncio.gather(*(worker() for _ in range(32)))
    return statuses


async def _measure(url: str, pid: int, sessions: int, search: bool) -> None:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as live,
    ):
        await live.initialize()
        await live.call_tool("tool_search", {"query": "select:notes.shout"})
        names = [t.name for t in (await live.list_tools()).tools]
        print(f"live client lists {names}; door RSS {_rss_mb(pid):.0f} MB")
        start = time.perf_counter()
        first = await _flood(url, min(1100, sessions), search)
        took = time.perf_counter() - start
        names = [t.name for t in (await live.list_tools()).tools]
        print(
            f"1,100 strangers in {took:.1f} s: {dict(first)}; live client lists {names}; "
            f"door RSS {_rss_mb(pid):.0f} MB"
        )
        if sessions > 1100:
            rest = await _flood(url, sessions - 1100, search)
            names = [t.name for t in (await live.list_tools()).tools]
            print(f"{sessions:,} strangers: {dict(rest)} more; live client lists {names}")
        newcomer = await _flood(url, 1, False)
        print(f"a new client's initialize: {dict(newcomer)}; door RSS {_rss_mb(pid):.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--search", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        config = _config(Path(tmp))
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {**os.environ, "PYTHONPATH": args.tree}
        command = [sys.executable, "-m", "bot_toolsearch", "mcp", "--http"]
        door = subprocess.Popen(
            [*command, "--port", str(port), "--config", str(config)],
            env=env,
            cwd=tmp,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(600):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            url = f"http://127.0.0.1:{port}/mcp"
            asyncio.run(_measure(url, door.pid, args.sessions, args.search))
        finally:
            door.terminate()
            door.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
