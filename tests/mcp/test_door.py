"""The MCP door's sessions, driven by the official ``mcp`` client (in-process, handshake era).

A real catalog: tool folders (one denied, one that raises), the third-party ``mcp-server-time``
and an upstream server that grows its tool list or dies on request.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

from bot_toolsearch._mcp.door import IDLE_SECONDS, McpDoor
from bot_toolsearch._mcp.server import LIST_TTL_MS, build_server
from tests.mcp.conftest import write_config

LIST_CHANGED = "notifications/tools/list_changed"


class Seen:
    """The notifications one client received."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.event = anyio.Event()

    async def __call__(self, message: object) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self.event.set()

    def count(self) -> int:
        return self.methods.count(LIST_CHANGED)


@asynccontextmanager
async def connect(door: McpDoor, name: str = "test-client") -> AsyncIterator[tuple[Client, Seen]]:
    """A handshake-era client session on the door (its own connection)."""
    seen = Seen()
    info = types.Implementation(name=name, version="1")
    async with Client(
        build_server(door), mode="legacy", message_handler=seen, client_info=info
    ) as client:
        yield client, seen


def names(result: types.ListToolsResult) -> list[str]:
    return [t.name for t in result.tools]


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def search(client: Client, query: str) -> dict[str, Any]:
    result = await client.call_tool("tool_search", {"query": query})
    assert not result.is_error
    loaded: dict[str, Any] = json.loads(text(result))
    return loaded


async def test_a_search_loads_into_this_session_only(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door = await door_factory(write_config(tmp_path, upstream=False))
    async with connect(door) as (client, seen):
        first = await client.list_tools()
        assert names(first) == ["tool_search"]
        description = first.tools[0].description or ""
        assert "<available_deferred_tools" in description
        assert "notes-_-boom\nnotes-_-shout" in description  # the wire spelling (#38)
        assert "notes.secret" not in json.dumps(first.model_dump(mode="json"))

        found = await search(client, "shout")
        assert found["loaded"] == ["notes-_-shout"]
        assert seen.count() == 1  # before the search's result
        tools = await client.list_tools()
        assert names(tools) == ["tool_search", "notes-_-shout"]
        assert tools.tools[1].input_schema["required"] == ["text"]
        ran = await client.call_tool("notes.shout", {"text": "hello"})
        assert (text(ran), ran.is_error) == ("HELLO", False)

        again = await search(client, "select:notes.shout")
        assert again["already_loaded"] == ["notes-_-shout"]
        assert seen.count() == 1  # nothing new: no notification

    async with connect(door) as (other, _):
        assert names(await other.list_tools()) == ["tool_search"]  # a new session starts clean


async def test_upstream_calls_and_a_dying_server(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door = await door_factory(write_config(tmp_path))
    async with connect(door) as (client, _):
        found = await search(client, "select:time.get_current_time,up.crash,up.echo,notes.shout")
        assert found["loaded"] == [
            "time-_-get_current_time",
            "up-_-crash",
            "up-_-echo",
            "notes-_-shout",
        ]
        now = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
        assert not now.is_error
        assert json.loads(text(now))["timezone"] == "UTC"

        died = await client.call_tool("up.crash", {})
        assert died.is_error
        assert "MCP server 'up' is unavailable" in text(died)
        echo = await client.call_tool("up.echo", {"text": "hi"})
        assert echo.is_error  # the server is gone (or restarting): a clear error, no hang
        assert "up-_-echo" in text(echo)
        # The session and the other sources keep working.
        again = await client.call_tool("time.get_current_time", {"timezone": "Europe/Oslo"})
        assert not again.is_error
        shout = await client.call_tool("notes.shout", {"text": "still here"})
        assert text(shout) == "STILL HERE"


async def test_bad_calls_get_clear_error_results(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door = await door_factory(write_config(tmp_path, upstream=False))
    async with connect(door) as (client, _):
        hidden = await client.call_tool("notes.secret", {"text": "x"})
        assert hidden.is_error
        assert "no tool named notes.secret" in text(hidden)
        refused = await search(client, "select:notes.secret")
        assert refused["loaded"] == []
        assert refused["not_found"] == ["notes.secret"]
        assert "Reveal" not in json.dumps(refused)

        unknown = await client.call_tool("nothing.here", {})
        assert unknown.is_error
        assert "no tool named nothing.here" in text(unknown)

        early = await client.call_tool("notes.shout", {"text": "x"})
        assert early.is_error
        assert "tool_search" in text(early)  # not loaded yet: search first

        await search(client, "select:notes.shout,notes.boom")
        wrong = await client.call_tool("notes.shout", {"text": 3})
        assert wrong.is_error
        assert "expected a string" in text(wrong)
        missing = await client.call_tool("notes.shout", {})
        assert missing.is_error
        failed = await client.call_tool("notes.boom", {"text": "x"})
        assert failed.is_error
        assert "ZeroDivisionError" in text(failed)
        fine = await client.call_tool("notes.shout", {"text": "ok"})
        assert (text(fine), fine.is_error) == ("OK", False)


async def test_bridge_mode_calls_through_call_tool(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door = await door_factory(write_config(tmp_path, "bridge"))
    async with connect(door) as (client, seen):
        assert names(await client.list_tools()) == ["tool_search", "call_tool"]
        found = await search(client, "select:time.get_current_time,notes.shout")
        assert [t["name"] for t in found["tools"]] == ["time-_-get_current_time", "notes-_-shout"]
        assert found["tools"][0]["parameters"]["required"] == ["timezone"]
        assert seen.count() == 0  # the list is fixed: no notification
        assert names(await client.list_tools()) == ["tool_search", "call_tool"]

        now = await client.call_tool(
            "call_tool", {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert not now.is_error
        assert json.loads(text(now))["timezone"] == "UTC"
        bad = await client.call_tool(
            "call_tool", {"name": "time.get_current_time", "arguments": {"timezone": 5}}
        )
        assert bad.is_error
        assert "The schema of time-_-get_current_time" in text(bad)
        hidden = await client.call_tool("call_tool", {"name": "notes.secret", "arguments": {}})
        assert hidden.is_error
        assert "no tool named notes.secret" in text(hidden)
        malformed = await client.call_tool("call_tool", {"arguments": {}})
        assert malformed.is_error
        assert "'name'" in text(malformed)
    async with connect(door) as (fresh, _):  # a new session: no search first (#38)
        shout = await fresh.call_tool(
            "call_tool", {"name": "notes.shout", "arguments": {"text": "hi"}}
        )
        assert (text(shout), shout.is_error) == ("HI", False)
        wrong = await fresh.call_tool("call_tool", {"name": "notes.shout", "arguments": {}})
        assert wrong.is_error
        assert "The schema of notes-_-shout" in text(wrong)


async def test_an_upstream_list_change_reindexes_and_tells_the_client(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    door = await door_factory(write_config(tmp_path))
    generation = door.registry.snapshot().generation
    async with connect(door) as (client, seen):
        assert "up.extra" not in (await client.list_tools()).tools[0].description
        await search(client, "select:up.grow")
        before = seen.count()
        grown = await client.call_tool("up.grow", {})
        assert text(grown) == "grown"
        await door.registry.wait_for_generation(generation + 1)
        with anyio.fail_after(10):
            while seen.count() == before:
                seen.event = anyio.Event()
                await seen.event.wait()
        tools = await client.list_tools()
        assert "up-_-extra" in (tools.tools[0].description or "")
        found = await search(client, "tardigrade census")
        assert found["loaded"] == ["up-_-extra"]
        ran = await client.call_tool("up.extra", {"count": 3})
        assert text(ran) == "counted 3 tardigrades"


async def test_keep_loaded_conversation_keeps_a_clients_called_tools(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    config = write_config(tmp_path, upstream=False, tool_search_keep_loaded='"conversation"')
    door = await door_factory(config)
    async with connect(door, "ide") as (client, _):
        await search(client, "select:notes.shout,notes.boom")
        await client.call_tool("notes.shout", {"text": "x"})
    async with connect(door, "ide") as (client, _):
        assert names(await client.list_tools()) == ["tool_search", "notes-_-shout"]
    async with connect(door, "another") as (client, _):
        assert names(await client.list_tools()) == ["tool_search"]


async def test_a_config_edit_reaches_the_session(tmp_path: Path) -> None:
    from bot_toolsearch._config.reload import ConfigReloader

    config = write_config(tmp_path, upstream=False, hot_reload="true")
    reloader = ConfigReloader(config, debounce=0.05)
    reloader.start()
    door = McpDoor(reloader, base_dir=tmp_path)
    await door.start()
    try:
        async with connect(door) as (client, seen):
            await search(client, "select:notes.shout")
            before = seen.count()
            assert "notes-_-boom" in ((await client.list_tools()).tools[0].description or "")
            edited = config.read_text().replace(
                'deny = ["notes.secret"]', 'deny = ["notes.secret", "notes.boom"]'
            )
            config.write_text(edited)
            await reloader.wait_for_generation(2)
            with anyio.fail_after(10):
                while seen.count() == before:
                    seen.event = anyio.Event()
                    await seen.event.wait()
            tools = await client.list_tools()
            assert names(tools) == ["tool_search", "notes-_-shout"]  # the session kept its load
            assert "notes.boom" not in (tools.tools[0].description or "")
            gone = await client.call_tool("notes.boom", {"text": "x"})
            assert gone.is_error
            assert "no tool named notes.boom" in text(gone)
    finally:
        await door.aclose()
        reloader.stop()


async def test_2026_clients_get_one_stable_bridge_list_and_share_no_loads(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """Clients on the 2026-07-28 protocol have no session: under ``append`` in the config
    they get the ``bridge`` list, the same for each (ttlMs, cacheScope, order), unchanged by
    anyone's searches; any permitted tool is callable through ``call_tool`` without a search
    (a wrong call gets the schema); the door keeps nothing of them; a catalog change reaches
    their listen streams."""
    door = await door_factory(write_config(tmp_path))
    server = build_server(door)
    generation = door.registry.snapshot().generation
    events: list[object] = []
    heard = anyio.Event()
    async with (
        Client(server) as first,  # mode "auto": the 2026-07-28 protocol
        Client(server) as second,
        second.listen(tools_list_changed=True) as subscription,
        anyio.create_task_group() as group,
    ):
        assert subscription.honored.tools_list_changed

        async def read() -> None:
            async for event in subscription:
                events.append(event)
                heard.set()

        group.start_soon(read)
        listed = await first.list_tools()
        assert names(listed) == ["tool_search", "call_tool"]
        assert (listed.ttl_ms, listed.cache_scope) == (LIST_TTL_MS, "public")
        found = await search(first, "select:notes.shout,time.get_current_time")
        assert [t["name"] for t in found["tools"]] == ["notes-_-shout", "time-_-get_current_time"]
        for client in (first, second):
            assert (await client.list_tools()).model_dump() == listed.model_dump()
        shout = await second.call_tool(
            "call_tool", {"name": "notes.shout", "arguments": {"text": "hi"}}
        )
        assert (text(shout), shout.is_error) == ("HI", False)
        wrong = await second.call_tool(
            "call_tool", {"name": "notes.shout", "arguments": {"text": 5}}
        )
        assert wrong.is_error
        assert "The schema of notes-_-shout" in text(wrong)
        hidden = await first.call_tool("call_tool", {"name": "notes.secret", "arguments": {}})
        assert hidden.is_error
        assert "no tool named notes.secret" in text(hidden)
        assert door.client_sessions == 0
        assert events == []  # loads change no list
        grown = await first.call_tool("call_tool", {"name": "up.grow", "arguments": {}})
        assert text(grown) == "grown"
        await door.registry.wait_for_generation(generation + 1)
        with anyio.fail_after(10):
            await heard.wait()
        assert "up-_-extra" in ((await second.list_tools()).tools[0].description or "")
        group.cancel_scope.cancel()


async def test_the_bots_timeout_and_result_cap_apply() -> None:
    import asyncio

    from bot_toolsearch import BotSettings, Tool

    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    def long() -> str:
        return "x" * 500

    settings = BotSettings.model_validate(
        {
            "bot": {"hot_reload": False},
            "skills": {"tool_search_enabled": True, "tool_search_always_loaded": ["t.slow"]},
            "tools": {"call_timeout": 0.2, "max_result_chars": 100},
        }
    )
    tools = [
        Tool("t.slow", "Slow.", None, slow),
        Tool("t.long", "Long.", None, long),
        Tool("t.other", "Other.", None, long),
    ]
    door = McpDoor(settings, tools)
    async with door, connect(door) as (client, _):
        assert names(await client.list_tools()) == ["t-_-slow", "tool_search"]
        late = await client.call_tool("t.slow", {})
        assert late.is_error
        assert "0.2" in text(late)
        await search(client, "select:t.long")
        cut = await client.call_tool("t.long", {})
        assert not cut.is_error
        assert text(cut).startswith("x" * 100 + "\n[truncated: this tool result has 500")


def thousand_tools() -> list[Any]:
    """1,000 tools: 300 in ten namespaces of 30, and 700 alone in a namespace each (loose
    names in a grouped directory, each longer in its wire spelling)."""
    from bot_toolsearch import Tool

    def run(**arguments: Any) -> str:
        return json.dumps(arguments)

    tools = [Tool(f"team_{i // 30}.action_{i}", f"Action {i}.", None, run) for i in range(300)]
    tools += [Tool(f"solo_{i}.lookup_{i}", f"Look up record {i}.", None, run) for i in range(700)]
    return tools


@pytest.mark.parametrize(("budget", "delimiter"), [(4000, "-_-"), (1000, "__dot__")])
async def test_the_directory_a_client_reads_holds_the_budget_in_wire_names(
    budget: int, delimiter: str
) -> None:
    from bot_toolsearch import BotSettings
    from bot_toolsearch._core.directory import CLOSE, OPEN, count_tokens

    settings = BotSettings.model_validate(
        {
            "bot": {"hot_reload": False},
            "skills": {"tool_search_enabled": True, "tool_search_directory_budget": budget},
            "tools": {"dot_delimiter": delimiter},
        }
    )
    door = McpDoor(settings, thousand_tools())
    async with door, connect(door) as (client, _):
        listed = await client.list_tools()
    description = listed.tools[0].description or ""
    block = description[description.index(OPEN) : description.index(CLOSE) + len(CLOSE)]
    assert count_tokens(block) <= budget  # 5,103 tokens at 4,000 when dotted names were counted
    lines = block.splitlines()[1:-1]
    loose = [line for line in lines if ".* (" not in line and not line.startswith("(")]
    assert len(loose) > 50
    assert all(line.startswith("solo_") and delimiter in line for line in loose)
    assert any(line.startswith("team_") and ".* (30 tools)" in line for line in lines)
    assert lines[-1].endswith("not listed here; keyword search finds them.)")


async def test_with_tool_search_off_every_permitted_tool_is_listed() -> None:
    from bot_toolsearch import BotSettings, Tool

    def run(**arguments: Any) -> str:
        return json.dumps(arguments)

    settings = BotSettings.model_validate(
        {"bot": {"hot_reload": False}, "tools": {"deny": ["admin.*"]}}
    )
    tools = [Tool(n, f"The {n} tool.", None, run) for n in ("a.one", "a.two", "admin.wipe")]
    door = McpDoor(settings, tools)
    async with door, connect(door) as (client, _):
        assert names(await client.list_tools()) == ["a-_-one", "a-_-two"]
        ran = await client.call_tool("a.two", {})
        assert (text(ran), ran.is_error) == ("{}", False)
        hidden = await client.call_tool("admin.wipe", {})
        assert hidden.is_error
        assert "no tool named admin.wipe" in text(hidden)
        virtual = await client.call_tool("tool_search", {"query": "wipe"})
        assert virtual.is_error  # no tool search: no virtual tool either


async def test_a_tool_folder_added_while_serving_reaches_the_session(tmp_path: Path) -> None:
    from bot_toolsearch._config.reload import ConfigReloader
    from tests.mcp.conftest import write_folder_tool

    config = write_config(tmp_path, upstream=False, hot_reload="true")
    reloader = ConfigReloader(config, debounce=0.05)
    door = McpDoor(reloader, base_dir=tmp_path)
    await door.start()
    try:
        generation = door.registry.snapshot().generation
        async with connect(door) as (client, seen):
            assert "notes.whisper" not in ((await client.list_tools()).tools[0].description or "")
            write_folder_tool(
                tmp_path / "tools", "notes", "whisper", "Whisper a note.", "text.lower()"
            )
            await door.registry.wait_for_generation(generation + 1)
            with anyio.fail_after(10):
                while seen.count() == 0:
                    seen.event = anyio.Event()
                    await seen.event.wait()
            listed = await client.list_tools()
            assert "notes-_-whisper" in (listed.tools[0].description or "")
            await search(client, "select:notes.whisper")
            ran = await client.call_tool("notes.whisper", {"text": "QUIET"})
            assert text(ran) == "quiet"
    finally:
        await door.aclose()


# -- a real tool named tool_search: skipped while the door offers the virtual one ------------

REAL = "A real tool that happens to use the reserved name."


def reserved_door(searching: bool, runs: list[dict[str, Any]]) -> McpDoor:
    from bot_toolsearch import BotSettings, Tool

    def real(**arguments: Any) -> str:
        runs.append(arguments)
        return "the real tool_search ran"

    def run(**arguments: Any) -> str:
        return json.dumps(arguments)

    settings = BotSettings.model_validate(
        {"bot": {"hot_reload": False}, "skills": {"tool_search_enabled": searching}}
    )
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        Tool("a.one", "The first tool.", None, run),
        Tool("tool_search", REAL, parameters, real),
        Tool("a.two", "The second tool.", None, run),
    ]
    return McpDoor(settings, tools)


async def test_a_real_tool_search_is_skipped_and_the_virtual_one_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[dict[str, Any]] = []
    door = reserved_door(True, runs)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        async with door:
            for _ in range(2):  # two sessions: the warning is the snapshot's, logged once
                async with connect(door) as (client, _):
                    listed = await client.list_tools()
                    assert names(listed) == ["tool_search"]
                    description = listed.tools[0].description or ""
                    block = description.split("<available_deferred_tools>\n")[1]
                    assert block.split("\n</available_deferred_tools>")[0] == "a-_-one\na-_-two"
                    assert REAL not in json.dumps(listed.model_dump(mode="json"))
                    found = await search(client, "select:a.two,tool_search")
                    assert found["loaded"] == ["a-_-two"]
                    assert names(await client.list_tools()) == ["tool_search", "a-_-two"]
                    own = await client.call_tool("tool_search", {"q": "x"})  # the real one's
                    assert "the real tool_search ran" not in text(own)
                    assert "query" in text(own)
    assert runs == []
    warnings = [r.getMessage() for r in caplog.records if "(1 reserved)" in r.getMessage()]
    assert warnings == [
        "tool catalog: skipping 1 of 3 entries (1 reserved): entry 2 ('tool_search'): "
        "the reserved name of the virtual search tool"
    ]


async def test_with_tool_search_off_a_real_tool_search_is_listed_and_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[dict[str, Any]] = []
    door = reserved_door(False, runs)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        async with door, connect(door) as (client, _):
            listed = await client.list_tools()
            assert names(listed) == ["a-_-one", "a-_-two", "tool_search"]
            assert listed.tools[2].description == REAL
            ran = await client.call_tool("tool_search", {"q": "x"})
            assert (text(ran), ran.is_error) == ("the real tool_search ran", False)
    assert runs == [{"q": "x"}]
    assert not [r for r in caplog.records if "(1 reserved)" in r.getMessage()]


async def test_idle_expiring_sessions_are_forgotten(
    tmp_path: Path, door_factory: Callable[..., Any]
) -> None:
    """A streamable-HTTP session (``expires``) idle for `IDLE_SECONDS` is forgotten at the
    next request of any session; a stdio connection's state never is."""
    door: McpDoor = await door_factory(write_config(tmp_path, upstream=False))
    stdio = object()
    old_http, old_stdio = door.client("http:old", expires=True), door.client(stdio)
    old_http.loaded.append("notes.shout")
    fresh = door.client("http:fresh", expires=True)
    assert door.client_sessions == 3
    long_ago = time.monotonic() - IDLE_SECONDS - 1
    old_http.used = old_stdio.used = long_ago
    door.client("http:fresh", expires=True)  # any request sweeps
    assert door.client_sessions == 2
    assert door.client(stdio) is old_stdio
    assert door.client("http:fresh", expires=True) is fresh
    assert door.client("http:old", expires=True).loaded == []  # a new, empty state
