"""``[[proxy.clients]]`` at the MCP door over HTTP: each client key sees its own tool set.

The official ``mcp`` client, over streamable HTTP with each of two keys (handshake era and
2026-07-28): a tool the client's ``allow``/``deny`` leaves out is never listed, never in the
directory, never found by a search and never callable; the client's name (never its key) is in
the door's log; a key of no client gets 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION

from bot_toolsearch._mcp.door import McpDoor
from tests.mcp.conftest import write_config
from tests.mcp.test_door import names, text
from tests.mcp.test_server import ACCEPT, INITIALIZE, serving
from tests.mcp.test_sessions import redis_url, shared

KEYS = {"support": "sk-support-8c1f0e", "ops": "sk-ops-5d2a91"}
DESCRIPTIONS = {
    "notes-_-shout": "Shout a note in capitals.",
    "notes-_-boom": "A note that explodes.",
}


def _clients_config(tmp_path: Path, loading: str = "append") -> Path:
    config = write_config(tmp_path, loading, upstream=False)
    digest = {name: hashlib.sha256(key.encode()).hexdigest() for name, key in KEYS.items()}
    with config.open("a", encoding="utf-8") as extra:
        extra.write(
            "[[proxy.clients]]\n"
            f'name = "support"\nkey_sha256 = "{digest["support"]}"\ndeny = ["notes.boom"]\n'
            "[[proxy.clients]]\n"
            f'name = "ops"\nkey_sha256 = "{digest["ops"]}"\nallow = ["notes.boom"]\n'
        )
    return config


async def test_two_client_keys_see_their_own_tool_sets(
    tmp_path: Path, door_factory: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot_toolsearch.mcp_door")
    door: McpDoor = await door_factory(_clients_config(tmp_path))
    async with serving(door) as (url, _):
        cases = (
            ("support", "notes-_-shout", "notes-_-boom"),
            ("ops", "notes-_-boom", "notes-_-shout"),
        )
        for client, mine, theirs in cases:
            bearer = {"authorization": f"Bearer {KEYS[client]}"}
            async with (
                httpx2.AsyncClient(headers=bearer) as keyed,
                streamable_http_client(url, http_client=keyed) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                first = await session.list_tools()
                assert names(first) == ["tool_search"]
                directory = first.tools[0].description or ""
                assert mine in directory
                assert theirs not in directory
                hidden = await session.call_tool("tool_search", {"query": f"select:{theirs}"})
                assert json.loads(text(hidden))["loaded"] == []
                assert DESCRIPTIONS[theirs] not in text(hidden)
                broad = await session.call_tool("tool_search", {"query": "note"})
                assert json.loads(text(broad))["loaded"] == [mine]
                assert DESCRIPTIONS[theirs] not in text(broad)
                assert names(await session.list_tools()) == ["tool_search", mine]
                ran = await session.call_tool(mine, {"text": "hi"})
                assert "no tool named" not in text(ran)  # run (notes.boom fails as it should)
                refused = await session.call_tool(theirs, {"text": "hi"})
                assert refused.is_error
                assert f"no tool named {theirs}" in text(refused)
            async with (
                httpx2.AsyncClient(headers=bearer) as keyed,
                Client(streamable_http_client(url, http_client=keyed)) as modern,
            ):
                listed = await modern.list_tools()
                assert names(listed) == ["tool_search", "call_tool"]
                assert listed.cache_scope == "private"
                assert mine in (listed.tools[0].description or "")
                assert theirs not in (listed.tools[0].description or "")
                bridged = await modern.call_tool("call_tool", {"name": theirs, "arguments": {}})
                assert bridged.is_error
                assert "no tool named" in text(bridged)
                found = await modern.call_tool("tool_search", {"query": f"select:{mine}"})
                assert DESCRIPTIONS[mine] in text(found)
        async with httpx.AsyncClient(timeout=30) as http:
            for auth in ({}, {"authorization": "Bearer sk-someone-else"}):
                denied = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth})
                assert denied.status_code == 401
    logged = caplog.text
    assert "client support: tools/call" in logged
    assert "client ops: tools/call" in logged
    assert all(key not in logged for key in KEYS.values())


async def test_a_client_policy_holds_under_bridge_loading(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """Under ``bridge`` an HTTP session keeps nothing, and ``call_tool`` runs any permitted
    tool at once: a tool the client's ``deny`` covers is not one of them."""
    door: McpDoor = await door_factory(_clients_config(tmp_path, "bridge"))
    async with serving(door) as (url, _):
        bearer = {"authorization": f"Bearer {KEYS['support']}"}
        async with (
            httpx2.AsyncClient(headers=bearer) as keyed,
            streamable_http_client(url, http_client=keyed) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            shout = {"name": "notes-_-shout", "arguments": {"text": "hi"}}
            assert text(await session.call_tool("call_tool", shout)) == "HI"
            boom = {"name": "notes-_-boom", "arguments": {"text": "hi"}}
            refused = await session.call_tool("call_tool", boom)
            assert refused.is_error
            assert "no tool named" in text(refused)


@pytest.mark.parametrize("redis", [False, True], ids=["one process", "shared state"])
async def test_a_session_is_its_opening_clients_own(
    tmp_path: Path, door_factory: Callable[..., Any], redis: bool
) -> None:
    """Another client's key with a session's id gets 404, as if the session did not exist (as
    the SDK does for its own credentials); the opening client's key is served."""
    door: McpDoor = await door_factory(_clients_config(tmp_path))
    async with contextlib.AsyncExitStack() as stack:
        state = await stack.enter_async_context(shared(redis_url())) if redis else None
        url, _ = await stack.enter_async_context(serving(door, state=state))
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        support = {"authorization": f"Bearer {KEYS['support']}"}
        ops = {"authorization": f"Bearer {KEYS['ops']}"}
        opened = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **support})
        session = {
            **ACCEPT,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=note, headers={**session, **support})).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        stolen = await http.post(url, json=listing, headers={**session, **ops})
        assert stolen.status_code == 404
        own = await http.post(url, json=listing, headers={**session, **support})
        assert own.status_code == 200
        assert "notes-_-shout" in own.text
        assert "notes-_-boom" not in own.text


async def test_a_clients_max_in_flight_bounds_its_requests_only(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """``max_in_flight = 1``: while its call runs, the client's next request gets 429 (with
    ``Retry-After``); another client is served meanwhile, and the first once its call is done."""
    config = _clients_config(tmp_path, "bridge")
    folder = tmp_path / "tools" / "notes" / "slow"
    folder.mkdir(parents=True)
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    function = {"name": "slow", "description": "A slow note.", "parameters": schema}
    (folder / "config.json").write_text(json.dumps({"type": "function", "function": function}))
    started, release = tmp_path / "started", tmp_path / "release"
    (folder / "handler.py").write_text(
        "import pathlib, time\n"
        "def execute(text=''):\n"
        f"    pathlib.Path({str(started)!r}).write_text('1')\n"
        "    for _ in range(600):\n"
        f"        if pathlib.Path({str(release)!r}).exists():\n"
        "            break\n"
        "        time.sleep(0.05)\n"
        "    return 'done'\n"
    )
    ops = config.read_text().replace('name = "ops"\n', 'name = "ops"\nmax_in_flight = 1\n')
    config.write_text(ops.replace('allow = ["notes.boom"]', 'allow = ["notes.boom", "notes.slow"]'))
    door: McpDoor = await door_factory(config)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "call_tool", "arguments": {"name": "notes-_-slow"}},
    }
    async with serving(door) as (url, _), httpx.AsyncClient(timeout=60) as http:
        keyed = {}
        for client in ("ops", "support"):
            bearer = {"authorization": f"Bearer {KEYS[client]}"}
            opened = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **bearer})
            keyed[client] = {
                **ACCEPT,
                **bearer,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
            }
        slow = asyncio.create_task(http.post(url, json=call, headers=keyed["ops"]))
        for _ in range(600):
            if started.exists():
                break
            await asyncio.sleep(0.05)
        assert started.exists()
        refused = await http.post(url, json=listing, headers=keyed["ops"])
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        other = await http.post(url, json=listing, headers=keyed["support"])
        assert other.status_code == 200
        release.write_text("1")
        assert "done" in (await slow).text
        assert (await http.post(url, json=listing, headers=keyed["ops"])).status_code == 200
