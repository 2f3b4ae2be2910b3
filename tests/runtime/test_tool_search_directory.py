"""The budgeted, grouped directory in a `Bot`: rules only when grouped, namespace selects,
``[tools.namespaces]`` descriptions, and a hot-reloaded budget (next ask)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

from bot_toolsearch import Bot, Tool
from bot_toolsearch.core import GROUPED_DIRECTORY_RULES, TOOL_SEARCH_RULES
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from tests._helpers import write_config

if TYPE_CHECKING:
    from tests.conftest import BotFactory

TIMEOUT = 10.0


def many_tools() -> list[Tool]:
    tools = [
        Tool(f"repo.op_{i:02d}", "Change a repository.", None, lambda: "ok") for i in range(40)
    ]
    tools += [
        Tool(f"pets.{verb}", f"{verb} the pet.", None, lambda: "ok") for verb in ("feed", "walk")
    ]
    return tools


def directory_of(server: ScriptedOpenAIServer, index: int = 0) -> str:
    (text,) = [t for t in server.requests[index].system_texts if "<available_deferred_tools>" in t]
    return text


async def test_over_budget_the_directory_is_grouped_and_the_rules_say_how_to_use_it(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    server.script(call("tool_search", query="select:repo.*"), call("end"))
    bot = make_bot(
        many_tools(),
        skills={"tool_search_directory_budget": 60},
        tools_table={"namespaces": {"repo": "Source repositories: branches and commits"}},
    )
    await bot.ask("x")

    text = directory_of(server)
    assert "repo.* (40 tools): Source repositories: branches and commits" in text
    assert f"</available_deferred_tools>\n\n{TOOL_SEARCH_RULES} {GROUPED_DIRECTORY_RULES}" in text
    result = json.loads(server.requests[1].tool_outputs[0][1])
    assert result["loaded"] == []
    assert result["names"][:2] == ["repo.op_00", "repo.op_01"]
    assert len(result["names"]) == 40
    assert "next_query" not in result  # one page holds them all


async def test_within_budget_the_directory_is_todays_list_without_grouped_rules(
    server: ScriptedOpenAIServer, make_bot: BotFactory
) -> None:
    server.script(call("tool_search", query="pets.*"), call("pets-_-feed"), call("end"))
    await make_bot(many_tools()).ask("x")

    text = directory_of(server)
    names = sorted(t.name for t in many_tools())
    block = "\n".join(["<available_deferred_tools>", *names, "</available_deferred_tools>"])
    assert f"{block}\n\n{TOOL_SEARCH_RULES}" in text
    assert GROUPED_DIRECTORY_RULES not in text
    assert json.loads(server.requests[1].tool_outputs[0][1])["loaded"] == ["pets.feed", "pets.walk"]
    assert "pets-_-feed" in server.requests[1].tool_names


async def test_the_budget_is_hot_reloaded_for_the_next_ask(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    skills = "[skills]\ntool_search_enabled = true\n"
    path = write_config(tmp_path / "config.toml", server.base_url, api, skills)
    bot = Bot.from_config(path, many_tools())
    try:
        server.script(call("end"))
        await bot.ask("one")
        write_config(path, server.base_url, api, skills + "tool_search_directory_budget = 60\n")
        reloader = bot._reloader
        assert reloader is not None
        await asyncio.wait_for(reloader.wait_for_generation(2, timeout=TIMEOUT), TIMEOUT)
        server.script(call("end"))
        await bot.ask("two")
    finally:
        await bot.aclose()

    assert "repo.op_00" in directory_of(server, 0)
    assert GROUPED_DIRECTORY_RULES not in directory_of(server, 0)
    assert "repo.* (40 tools)" in directory_of(server, 1)
    assert GROUPED_DIRECTORY_RULES in directory_of(server, 1)


async def test_a_folder_readme_describes_its_namespace_and_the_config_wins(
    server: ScriptedOpenAIServer, tmp_path: Path, api: str
) -> None:
    for i in range(30):
        folder = tmp_path / "tools" / "songs" / f"op_{i:02d}"
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(f'{{"description": "Song op {i}."}}', "utf-8")
        (folder / "handler.py").write_text("def execute(**kw):\n    return 'ok'\n", "utf-8")
    (tmp_path / "tools" / "songs" / "README.md").write_text("Songs from the README.\n", "utf-8")
    (tmp_path / "tools" / "pets").mkdir()
    for verb in ("feed", "walk"):
        folder = tmp_path / "tools" / "pets" / verb
        folder.mkdir()
        (folder / "config.json").write_text('{"description": "A pet."}', "utf-8")
        (folder / "handler.py").write_text("def execute(**kw):\n    return 'ok'\n", "utf-8")
    (tmp_path / "tools" / "pets" / "README").write_text("Pets from the README.\n", "utf-8")
    extra = (
        "[skills]\ntool_search_enabled = true\ntool_search_directory_budget = 70\n"
        '[tools]\ndirs = ["tools"]\n[tools.namespaces]\npets = "Pets from the config."\n'
    )
    bot = Bot.from_config(write_config(tmp_path / "config.toml", server.base_url, api, extra))
    try:
        server.script(call("end"))
        await bot.ask("x")
    finally:
        await bot.aclose()

    text = directory_of(server)
    assert "songs.* (30 tools): Songs from the README." in text
    assert "pets.* (2 tools): Pets from the config." in text
