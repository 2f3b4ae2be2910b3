"""Past one process (issue 39): a conversation store's cost per ask, PostgreSQL against SQLite,
and what the shared Redis state adds to a proxied Responses follow-up and to a ``tools/call``
of the MCP door over HTTP, as ratios of one run.

Needs the servers `.ci/services.sh` starts (``BOT_TOOLSEARCH_TEST_POSTGRES`` and
``BOT_TOOLSEARCH_TEST_REDIS``); without them its rows say so.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bot_toolsearch.conversations import (
    ConversationStore,
    ConversationTurn,
    PostgreSQLConversationStore,
    SQLiteConversationStore,
)

from ._table import Row

ASKS = 200
"""Asks per store, each one load of the last 20 turns and one append."""
FOLLOW_UPS = 150


def _turn(i: int) -> ConversationTurn:
    messages = (
        {"role": "user", "content": f"question {i} " * 20},
        {"role": "assistant", "content": f"answer {i} " * 40},
    )
    return ConversationTurn(
        user_text=f"question {i}", reply=f"answer {i}", messages=messages, tools_called=("t",)
    )


async def _per_ask(store: ConversationStore) -> float:
    """Median seconds of one ask's store work: load the newest 20 turns, append one."""
    for i in range(30):
        await store.append("bench", _turn(i))
    samples = []
    for i in range(ASKS):
        start = time.perf_counter()
        await store.load("bench", max_turns=20)
        await store.append("bench", _turn(i))
        samples.append(time.perf_counter() - start)
    await store.aclose()
    return statistics.median(samples)


async def _postgres(url: str) -> str:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


async def _stores() -> list[Row]:
    url = os.environ.get("BOT_TOOLSEARCH_TEST_POSTGRES", "")
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = await _per_ask(SQLiteConversationStore(Path(tmp) / "bench.db"))
    rows = [Row("state", "store per ask, SQLite", f"{sqlite * 1000:.2f} ms", "load 20 + append")]
    if not url:
        return [*rows, Row("state", "store per ask, PostgreSQL", "skipped", "no server")]
    postgres = await _per_ask(PostgreSQLConversationStore(await _postgres(url)))
    return [
        *rows,
        Row("state", "store per ask, PostgreSQL", f"{postgres * 1000:.2f} ms", "loopback"),
        Row("state", "PostgreSQL / SQLite per ask", f"x{postgres / sqlite:.2f}", "median"),
    ]


async def _follow_ups() -> list[Row]:
    url = os.environ.get("BOT_TOOLSEARCH_TEST_REDIS", "")
    if not url:
        return [Row("state", "Redis lookup per follow-up", "skipped", "no server")]
    import httpx

    from bot_toolsearch import BotSettings
    from bot_toolsearch._proxy.app import ProxyApp
    from bot_toolsearch.testing import ScriptedOpenAIServer, text

    async def median(send: Callable[[], Awaitable[object]]) -> float:
        samples = []
        for _ in range(FOLLOW_UPS):
            start = time.perf_counter()
            await send()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    figures: dict[str, float] = {}
    with ScriptedOpenAIServer() as upstream:
        for name, proxy in (("without", {}), ("with", {"state": url}), ("without again", {})):
            settings = BotSettings.model_validate(
                {"skills": {"tool_search_enabled": True}, "proxy": proxy}
            )
            app = ProxyApp(upstream.base_url, settings=settings)
            upstream.script(*(text("ok") for _ in range(FOLLOW_UPS + 6)))
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                first = await client.post("/v1/responses", json={"model": "m", "input": "hi"})
                first.raise_for_status()
                body = {"model": "m", "input": "and?", "previous_response_id": first.json()["id"]}

                async def send(
                    client: httpx.AsyncClient = client, body: dict[str, str] = body
                ) -> object:
                    reply = await client.post("/v1/responses", json=body)
                    reply.raise_for_status()
                    return reply

                for _ in range(5):
                    await send()
                figures[name] = await median(send)
            await app.aclose()
            upstream.assert_consumed()
    base = statistics.fmean((figures["without"], figures["without again"]))
    added = figures["with"] - base
    return [
        Row("state", "follow-up through the proxy", f"{base * 1000:.2f} ms", "no shared state"),
        Row("state", "with [proxy] state (Redis)", f"{figures['with'] * 1000:.2f} ms", "loopback"),
        Row(
            "state",
            "Redis lookup added",
            f"{added * 1000:.2f} ms",
            f"x{figures['with'] / base:.2f}",
        ),
    ]


MCP_CALLS = 150
"""``tools/call`` requests of one MCP door session timed per set-up."""


def _door_config(root: Path) -> Path:
    folder = root / "tools" / "notes" / "shout"
    folder.mkdir(parents=True)
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    function = {"name": "shout", "description": "Shout a note.", "parameters": schema}
    (folder / "config.json").write_text(json.dumps({"type": "function", "function": function}))
    (folder / "handler.py").write_text("def execute(text):\n    return text.upper()\n")
    config = root / "config.toml"
    config.write_text(
        '[skills]\ntool_search_enabled = true\ntool_search_loading = "append"\n'
        '[tools]\ndirs = ["tools"]\n'
    )
    return config


async def _door_median(config: Path, state: str | None) -> float:
    """Median seconds of one ``tools/call`` of a loaded tool, over loopback HTTP."""
    import socket

    import httpx
    from mcp.types.version import LATEST_HANDSHAKE_VERSION

    from bot_toolsearch._config.file import load_settings
    from bot_toolsearch._mcp.door import McpDoor
    from bot_toolsearch._mcp.server import run_http

    accept = {"accept": "application/json, text/event-stream"}
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{bound.getsockname()[1]}/mcp"
    servers: list[Any] = []
    async with McpDoor(load_settings(config), base_dir=config.parent) as door:
        task = asyncio.create_task(
            run_http(door, "127.0.0.1", 0, state=state, ready=servers.append, sock=bound)
        )
        for _ in range(600):  # until it listens
            if servers and servers[0].started:
                break
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(timeout=30) as http:
            init = {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            }
            opened = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                headers=accept,
            )
            headers = {
                **accept,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(url, json=note, headers=headers)

            async def call(name: str, arguments: dict[str, str]) -> None:
                body = {"name": name, "arguments": arguments}
                message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": body}
                reply = await http.post(url, json=message, headers=headers)
                reply.raise_for_status()

            await call("tool_search", {"query": "select:notes.shout"})
            samples = []
            for i in range(MCP_CALLS + 5):
                start = time.perf_counter()
                await call("notes-_-shout", {"text": "hi"})
                if i >= 5:
                    samples.append(time.perf_counter() - start)
            await http.delete(url, headers=headers)
        servers[0].should_exit = True
        await task
    bound.close()
    return statistics.median(samples)


async def _door_calls() -> list[Row]:
    url = os.environ.get("BOT_TOOLSEARCH_TEST_REDIS", "")
    if not url:
        return [Row("state", "MCP door: Redis per tools/call", "skipped", "no server")]
    with tempfile.TemporaryDirectory() as tmp:
        config = _door_config(Path(tmp))
        without = await _door_median(config, None)
        shared = await _door_median(config, url)
        again = await _door_median(config, None)
    base = statistics.fmean((without, again))
    return [
        Row("state", "MCP door tools/call over HTTP", f"{base * 1000:.2f} ms", "per process"),
        Row("state", "with [proxy] state (Redis)", f"{shared * 1000:.2f} ms", "loopback"),
        Row(
            "state",
            "Redis session lookup added",
            f"{(shared - base) * 1000:.2f} ms",
            f"x{shared / base:.2f}",
        ),
    ]


def run() -> list[Row]:
    async def both() -> list[Row]:
        return [*(await _stores()), *(await _follow_ups()), *(await _door_calls())]

    return asyncio.run(both())
