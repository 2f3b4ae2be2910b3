"""A `Bot` over the `ToolRegistry` that ``[tools]`` configures: folders added and removed while
it runs, ``[tools] dirs`` edits, reserved names refused at reload time, a real ``tool_search`` from
code or a folder (skipped while searching, ordinary without), ``catalog list``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, CatalogError, Tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from bot_toolsearch.tools import ToolRegistry
from tests._cli_runner import run_cli
from tests._helpers import write_config

TIMEOUT = 10.0


def write_tool(root: Path, rel: str, result: str, **config: object) -> Path:
    """A tool folder ``root/rel`` (``a/b`` is ``a.b``) whose handler returns ``result``."""
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    schema = {"description": f"The {rel} tool.", **config}
    (folder / "config.json").write_text(json.dumps(schema), encoding="utf-8")
    (folder / "handler.py").write_text(f"def execute(**kw):\n    return {result!r}\n")
    return folder


def add_tool(tmp_path: Path, root: Path, rel: str, result: str) -> None:
    """Build a tool folder aside and move it in, so the watcher sees it complete."""
    write_tool(tmp_path / "staging", rel, result)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    os.rename(tmp_path / "staging" / rel, root / rel)


async def wait_for_tool(registry: ToolRegistry, name: str, *, present: bool = True) -> None:
    snap = await registry.wait_for_generation(registry.snapshot().generation, timeout=TIMEOUT)
    while (name in snap.tools) != present:
        snap = await registry.wait_for_generation(snap.generation + 1, timeout=TIMEOUT)


def registry_of(bot: Bot) -> ToolRegistry:
    registry = bot.registry
    assert registry is not None
    return registry


def directory(server: ScriptedOpenAIServer, index: int) -> str:
    texts = [t for t in server.requests[index].system_texts if "available_deferred_tools" in t]
    assert texts, server.requests[index].system_texts
    return texts[0]


async def test_a_folder_added_while_running_is_in_the_next_ask_and_a_removed_one_stays_for_its_ask(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    tools = tmp_path / "tools"
    write_tool(tools, "notes/add", "added")
    path = write_config(
        tmp_path / "config.toml",
        server.base_url,
        api,
        '[tools]\ndirs = ["tools"]\n[skills]\ntool_search_enabled = true\n'
        'tool_search_always_loaded = ["send_message", "end", "hold"]\n',
    )
    entered, release = asyncio.Event(), asyncio.Event()

    async def hold() -> str:
        entered.set()
        await release.wait()
        return "held"

    async with Bot.from_config(path, [Tool("hold", "Hold.", None, hold)]) as bot:
        registry = registry_of(bot)
        server.script(call("end"))
        await bot.ask("one")
        add_tool(tmp_path, tools, "notes/find", "found")
        await wait_for_tool(registry, "notes.find")
        server.script(call("end"))
        await bot.ask("two")

        # Removed (disabled) while the third ask runs: that ask still finds and runs it.
        server.script(
            call("hold"),
            call("tool_search", query="select:notes.find"),
            call("notes-_-find"),
            call("end"),
        )
        third = asyncio.create_task(bot.ask("three"))
        await asyncio.wait_for(entered.wait(), TIMEOUT)
        write_tool(tools, "notes/find", "found", enabled=False)
        await wait_for_tool(registry, "notes.find", present=False)
        release.set()
        result = await asyncio.wait_for(third, TIMEOUT)

        server.script(call("notes-_-find"), call("end"))
        fourth = await bot.ask("four")

    assert "notes.find" not in directory(server, 0)
    assert "notes.find" in directory(server, 1)
    ran = [(c.name, c.outcome, c.result) for r in result.trace for c in r.calls]
    assert ("notes.find", "ran", "found") in ran
    assert "notes.find" not in directory(server, 6)
    refused = fourth.trace[0].calls[0]
    assert (refused.outcome, refused.reason) == ("refused", "unknown")
    assert "found" not in refused.result


async def test_a_dirs_edit_in_config_toml_moves_the_registry(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    write_tool(tmp_path / "one", "alpha", "a")
    write_tool(tmp_path / "two", "beta", "b")
    path = write_config(tmp_path / "config.toml", server.base_url, api, '[tools]\ndirs = ["one"]\n')
    bot = Bot.from_config(path)
    try:
        server.script(call("alpha"), call("end"))
        await bot.ask("x")
        registry = registry_of(bot)
        reloader = bot._reloader
        assert reloader is not None
        write_config(path, server.base_url, api, '[tools]\ndirs = ["two"]\n')
        await reloader.wait_for_generation(2, timeout=TIMEOUT)
        await registry.wait_for_generation(1, timeout=TIMEOUT)
        server.script(call("beta"), call("end"))
        second = await bot.ask("y")
    finally:
        await bot.aclose()

    assert registry.dirs == (tmp_path / "two",)
    assert server.requests[0].tool_names == ["send_message", "end", "alpha"]
    assert server.requests[2].tool_names == ["send_message", "end", "beta"]
    assert second.trace[0].calls[0].result == "b"


async def test_tool_dirs_first_configured_while_running_create_the_registry(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str, ran_tool: Tool
) -> None:
    write_tool(tmp_path / "tools", "late", "late ok")
    path = write_config(tmp_path / "config.toml", server.base_url, api)
    async with Bot.from_config(path, [ran_tool]) as bot:
        assert bot.registry is None
        write_config(path, server.base_url, api, '[tools]\ndirs = ["tools"]\n')
        follower = bot._follower
        assert follower is not None
        await follower.wait_synced(2, timeout=TIMEOUT)
        server.script(call("late"), call("end"))
        result = await bot.ask("x")
        assert bot.registry is not None

    assert server.requests[0].tool_names == ["send_message", "end", "code", "late"]
    assert result.trace[0].calls[0].result == "late ok"


@pytest.fixture
def ran_tool() -> Tool:
    return Tool("code", "A code tool.", None, lambda: "code ok")


def test_a_folder_tool_with_a_builtin_name_fails_at_construction(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    write_tool(tmp_path / "tools", "send_message", "x")
    path = write_config(
        tmp_path / "config.toml",
        server.base_url,
        "chat_completions",
        '[tools]\ndirs = ["tools"]\n[bot]\nhot_reload = false\n',
    )
    with pytest.raises(CatalogError, match=r"'send_message' from folder:.*send_message"):
        Bot.from_config(path)


async def test_a_reload_bringing_a_builtin_name_keeps_the_last_good_tools(
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    api: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = tmp_path / "tools"
    write_tool(tools, "notes", "notes ok")
    path = write_config(
        tmp_path / "config.toml", server.base_url, api, '[tools]\ndirs = ["tools"]\n'
    )
    async with Bot.from_config(path) as bot:
        registry = registry_of(bot)
        kept = bot.toolset
        add_tool(tmp_path, tools, "end", "hijacked")
        await wait_for_tool(registry, "end")
        server.script(call("notes"), call("end"))
        result = await bot.ask("x")
        assert bot.toolset is kept

    assert server.requests[0].tool_names == ["send_message", "end", "notes"]
    assert [c.result for r in result.trace for c in r.calls] == ["notes ok", "ended"]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("'end' from folder:tools/end" in e and "built-in" in e for e in errors), errors


async def test_aclose_closes_the_registry_and_its_watcher(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    write_tool(tmp_path / "tools", "notes", "ok")
    path = write_config(
        tmp_path / "config.toml", server.base_url, "chat_completions", '[tools]\ndirs = ["tools"]\n'
    )
    bot = Bot.from_config(path)
    registry = registry_of(bot)
    await bot.start()
    assert registry._watcher is not None
    await bot.aclose()
    assert registry._watcher is None
    assert bot.registry is None


def test_catalog_list_prints_the_merged_catalog(tmp_path: Path) -> None:
    write_tool(tmp_path / "tools", "music/search_songs", "x")
    write_tool(tmp_path / "more", "notes", "y")
    config = tmp_path / "config.toml"
    config.write_text('[tools]\ndirs = ["tools", "more"]\ndot_delimiter = "__"\n', encoding="utf-8")
    done = run_cli("catalog", "list", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows == [
        ["SOURCE", "CANONICAL", "WIRE"],
        ["built-in", "send_message", "send_message"],
        ["built-in", "end", "end"],
        ["folder:tools/music/search_songs", "music.search_songs", "music__search_songs"],
        ["folder:more/notes", "notes", "notes"],
        ["4", "tools"],
    ]


def no_directory(server: ScriptedOpenAIServer) -> bool:
    return all(
        "<available_deferred_tools>" not in text
        for request in server.requests
        for text in request.system_texts
    )


def reserved_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The catalog's summary warnings of a skipped real ``tool_search``."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "(1 reserved)" in r.getMessage()
    ]


@pytest.fixture
def real_tool_search() -> tuple[Tool, list[dict[str, object]]]:
    """A code tool named ``tool_search`` and the list of arguments it ran with."""
    runs: list[dict[str, object]] = []

    def handler(**arguments: object) -> str:
        runs.append(arguments)
        return "the real tool_search ran"

    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    return Tool("tool_search", "A real tool with the reserved name.", parameters, handler), runs


async def test_a_code_tool_search_with_a_registry_is_skipped_and_search_stays_on(
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    api: str,
    caplog: pytest.LogCaptureFixture,
    real_tool_search: tuple[Tool, list[dict[str, object]]],
) -> None:
    real, runs = real_tool_search
    write_tool(tmp_path / "tools", "notes", "notes ok")
    path = write_config(
        tmp_path / "config.toml",
        server.base_url,
        api,
        '[tools]\ndirs = ["tools"]\n[skills]\ntool_search_enabled = true\n'
        'tool_search_loading = "append"\n',
    )
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        async with Bot.from_config(path, [real]) as bot:
            assert bot.toolset.reserved.present
            server.script(call("tool_search", query="select:notes"), call("notes"), call("end"))
            first = await bot.ask("one")
            server.script(call("tool_search", q="x"), call("end"))
            await bot.ask("two")

    assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
    assert "<available_deferred_tools>\nnotes\n</available_deferred_tools>" in directory(server, 0)
    assert "A real tool with the reserved name" not in json.dumps(server.requests[0].body)
    assert runs == []
    ran = [(c.name, c.outcome, c.result) for r in first.trace for c in r.calls]
    assert ran[1] == ("notes", "ran", "notes ok")
    assert first.stats.searches == 1
    assert "the real tool_search ran" not in server.requests[4].tool_outputs[0][1]
    assert len(reserved_warnings(caplog)) == 1  # once for the tool set, not per ask


async def test_a_registry_source_passed_to_bot_keeps_a_code_tool_search_callable_without_search(
    server: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    real_tool_search: tuple[Tool, list[dict[str, object]]],
) -> None:
    real, runs = real_tool_search
    write_tool(tmp_path / "tools", "notes", "notes ok")
    registry = ToolRegistry([tmp_path / "tools"], extra_tools=[real])
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": False}})
    server.script(call("tool_search", q="y"), call("end"))
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        result = await Bot(settings, registry, client=client).ask("x")

    assert server.requests[0].tool_names == ["send_message", "end", "notes", "tool_search"]
    assert no_directory(server)
    assert runs == [{"q": "y"}]
    assert result.trace[0].calls[0].result == "the real tool_search ran"
    assert not reserved_warnings(caplog)


@pytest.mark.parametrize("searching", [True, False])
async def test_a_folder_named_tool_search_follows_the_same_rule_as_a_code_one(
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    api: str,
    caplog: pytest.LogCaptureFixture,
    searching: bool,
) -> None:
    write_tool(tmp_path / "tools", "tool_search", "folder ran")
    write_tool(tmp_path / "tools", "notes", "notes ok")
    path = write_config(
        tmp_path / "config.toml",
        server.base_url,
        api,
        '[tools]\ndirs = ["tools"]\n[bot]\nhot_reload = false\n'
        f"[skills]\ntool_search_enabled = {str(searching).lower()}\n"
        'tool_search_loading = "append"\n',
    )
    if searching:
        server.script(call("tool_search", query="select:notes"), call("notes"), call("end"))
    else:
        server.script(call("tool_search", query="anything"), call("notes"), call("end"))
    with caplog.at_level(logging.WARNING):
        async with Bot.from_config(path) as bot:
            result = await bot.ask("x")

    outcomes = [(c.name, c.result) for r in result.trace for c in r.calls]
    assert ("notes", "notes ok") in outcomes
    if searching:  # skipped, with the one warning: search stays on for every other tool
        assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
        assert "<available_deferred_tools>" in directory(server, 0)
        assert server.requests[1].tool_names == ["send_message", "end", "tool_search", "notes"]
        assert "folder ran" not in json.dumps(outcomes)
        assert result.stats.searches == 1
        assert len(reserved_warnings(caplog)) == 1
    else:  # an ordinary tool
        assert server.requests[0].tool_names == ["send_message", "end", "notes", "tool_search"]
        assert ("tool_search", "folder ran") in outcomes
        assert not reserved_warnings(caplog)
