"""`Bot` construction, settings snapshots per ask, its own client, from_config and aclose."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot_toolsearch import Bot, BotSettings, CatalogError, Tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call
from bot_toolsearch.tools import ToolSetSnapshot
from tests._helpers import write_config

SEARCH_ON = "[skills]\ntool_search_enabled = true\n"
SEARCH_OFF = "[skills]\ntool_search_enabled = false\n"

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


class CountingSource:
    """A settings source whose snapshot changes when a test says so."""

    def __init__(self, *snapshots: BotSettings) -> None:
        self.snapshots = list(snapshots)
        self.reads = 0

    def snapshot(self) -> BotSettings:
        self.reads += 1
        return self.snapshots[0]


def settings(server: ScriptedOpenAIServer, generation: int, **skills: object) -> BotSettings:
    return BotSettings.model_validate(
        {
            "model": {"base_url": server.base_url, "api_key": "test"},
            "skills": {"tool_search_enabled": True, **skills},
            "generation": generation,
        }
    )


def test_duplicate_tool_names_are_a_developer_error(ran: Ran) -> None:
    with pytest.raises(CatalogError, match="duplicate tool name 'end'"):
        Bot(BotSettings(), [ran.tool("end")])


async def test_each_ask_reads_one_snapshot_and_later_asks_see_a_reload(
    server: ScriptedOpenAIServer, weather_tools: list[Tool]
) -> None:
    source = CountingSource(settings(server, 1))
    bot = Bot(source, weather_tools)  # its own client, from [model]
    reads_before = source.reads
    server.script(call("end"))
    first = await bot.ask("x")
    assert source.reads == reads_before + 1
    source.snapshots[0] = settings(server, 2, tool_search_enabled=False)
    server.script(call("end"))
    second = await bot.ask("y")
    await bot.aclose()

    assert (first.settings_generation, second.settings_generation) == (1, 2)
    assert "tool_search" in server.requests[0].tool_names
    assert "tool_search" not in server.requests[1].tool_names
    assert bot._owned == {}


async def test_aclose_closes_only_the_client_the_bot_built(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    bot = make_bot(weather_tools)
    server.script(call("end"))
    await bot.ask("x")
    await bot.aclose()
    server.script(call("end"))
    assert (await bot.ask("still works")).finish_reason == "end"


async def test_set_tools_changes_later_asks(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    bot = make_bot(weather_tools, skills={"tool_search_enabled": False})
    catalog = bot.toolset.catalog
    server.script(call("end"))
    await bot.ask("x")
    assert bot.toolset.catalog is catalog  # built once, reused by every ask
    bot.set_tools([ran.tool("only.one")])
    server.script(call("end"))
    await bot.ask("y")

    assert server.requests[1].tool_names == ["send_message", "end", "only-_-one"]


async def test_from_config_reads_the_file(
    server: ScriptedOpenAIServer, tmp_path: Path, weather_tools: list[Tool]
) -> None:
    path = write_config(
        tmp_path / "config.toml",
        server.base_url,
        "chat_completions",
        "[skills]\ntool_search_enabled = true\n[bot]\nhot_reload = false\n",
    )
    bot = Bot.from_config(path, weather_tools)
    server.script(call("end"))
    await bot.ask("x")
    await bot.aclose()

    assert "tool_search" in server.requests[0].tool_names


async def test_from_config_with_hot_reload_watches_and_aclose_stops_it(
    server: ScriptedOpenAIServer, tmp_path: Path, weather_tools: list[Tool]
) -> None:
    path = write_config(tmp_path / "config.toml", server.base_url, "chat_completions", SEARCH_ON)
    bot = Bot.from_config(path, weather_tools)
    reloader = bot._reloader
    assert reloader is not None
    server.script(call("end"))
    result = await bot.ask("x")
    # The file is watched: an edit reaches the next ask without any call from the test.
    write_config(path, server.base_url, "chat_completions", SEARCH_OFF)
    await reloader.wait_for_generation(2, timeout=10.0)
    server.script(call("end"))
    edited = await bot.ask("y")
    await bot.aclose()

    assert (result.settings_generation, edited.settings_generation) == (1, 2)
    assert "tool_search" in server.requests[0].tool_names
    assert "tool_search" not in server.requests[1].tool_names
    assert bot._reloader is None
    assert reloader._watcher is None  # stopped, not just forgotten


class SwappingSource:
    """A `ToolSource` whose snapshot a test swaps, like a registry reload."""

    def __init__(self, tools: list[Tool]) -> None:
        self.current = ToolSetSnapshot.build((t, "code") for t in tools)

    def snapshot(self) -> ToolSetSnapshot:
        return self.current


async def test_a_tool_source_is_read_once_per_ask_and_its_catalog_reused(
    server: ScriptedOpenAIServer, make_bot: BotFactory, ran: Ran
) -> None:
    source = SwappingSource([ran.tool("one.a")])
    bot = make_bot(source, skills={"tool_search_enabled": False})
    first = bot.toolset
    assert bot.toolset is first  # same snapshot, same catalog
    server.script(call("one-_-a"), call("end"))
    await bot.ask("x")
    source.current = ToolSetSnapshot.build([(ran.tool("two.b"), "code")], generation=1)
    server.script(call("end"))
    await bot.ask("y")

    assert server.requests[0].tool_names == ["send_message", "end", "one-_-a"]
    assert server.requests[2].tool_names == ["send_message", "end", "two-_-b"]
    assert ran.names == ["one.a"]


async def test_a_model_error_mid_ask_raises_and_leaves_no_state_for_the_next_ask(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    import openai

    from bot_toolsearch.testing import error

    bot = make_bot(weather_tools)
    server.script(
        [call("tool_search", query="select:music.play"), call("send_message", text="partial")],
        error(500, "upstream model crashed", type="server_error"),
    )
    with pytest.raises(openai.InternalServerError, match="upstream model crashed"):
        await bot.ask("one")
    server.script(call("end"))
    after = await bot.ask("two")

    # The failed ask's load and its sent text are gone: the next ask starts from scratch.
    assert server.requests[2].tool_names == ["send_message", "end", "tool_search"]
    assert server.requests[2].tool_outputs == []
    assert after.reply == ""
    assert after.stats.tools_loaded == ()
    assert after.stats.searches == 0
    assert after.outbox == ()


async def test_aclose_is_idempotent(
    server: ScriptedOpenAIServer, weather_tools: list[Tool], tmp_path: Path
) -> None:
    path = write_config(tmp_path / "config.toml", server.base_url, "chat_completions", SEARCH_ON)
    bot = Bot.from_config(path, weather_tools)
    server.script(call("end"))
    await bot.ask("x")
    await bot.aclose()
    await bot.aclose()
    async with bot:  # __aexit__ closes a third time
        pass

    assert bot._reloader is None
    assert bot._owned == {}
