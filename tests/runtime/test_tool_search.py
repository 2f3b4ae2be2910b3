"""The tool-search middleware: wire spellings, blind-call policy, directory bytes, no leaks,
and a real tool named ``tool_search`` (skipped while the virtual one is offered)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._protocol.messages import BLIND_CALL_LOADED, NO_SUCH_TOOL, NOT_LOADED_YET
from bot_toolsearch._runtime.tool_search import canonical_query, directory_message
from bot_toolsearch._runtime.toolset import ToolSet
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


def wire_names() -> WireNames:
    tools = [Tool(name, "", None, lambda: "") for name in ("music.play", "secret.tool")]
    return ToolSet.build(tools, ()).wire_names("-_-")


def test_select_items_and_bare_names_are_made_canonical_only_when_permitted() -> None:
    names = wire_names()
    permitted = frozenset({"music.play", "send_message", "end"})
    assert canonical_query("select:music-_-play, end", names, permitted) == (
        "select:music.play,end"
    )
    assert canonical_query("music-_-play", names, permitted) == "music.play"
    # A forbidden tool keeps the model's spelling, so not_found cannot reveal the real name.
    assert canonical_query("select:secret-_-tool", names, permitted) == "select:secret-_-tool"
    assert canonical_query("play a song", names, permitted) == "play a song"


def test_directory_message_is_cached_and_byte_identical() -> None:
    one = directory_message(("a", "b"))
    assert one is directory_message(("a", "b"))
    assert one["content"].startswith(
        "<available_deferred_tools>\na\nb\n</available_deferred_tools>"
    )


async def test_select_accepts_the_wire_spelling_and_results_use_canonical_names(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("tool_search", query="select:weather-_-forecast"),
        call("weather.forecast", city="Oslo"),  # the canonical spelling is accepted too
        call("end"),
    )
    await make_bot(weather_tools).ask("x")

    result = json.loads(server.requests[1].tool_outputs[0][1])
    assert result["loaded"] == ["weather.forecast"]
    assert "weather-_-forecast" in server.requests[1].tool_names
    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]


async def test_a_custom_dot_delimiter_is_used_on_the_wire(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("tool_search", query="select:music__play"),
        call("music__play", song="s"),
        call("end"),
    )
    await make_bot(weather_tools, tools_table={"dot_delimiter": "__"}).ask("x")

    assert server.requests[1].tool_names[-1] == "music__play"
    assert ran.names == ["music.play"]


async def test_blind_call_load_refuses_now_loads_for_next_round_and_counts(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("music-_-play", id="m1", song="s"),
        call("music-_-play", id="m2", song="s"),
        call("end"),
    )
    result = await make_bot(weather_tools, skills={"tool_search_blind_call": "load"}).ask("x")

    assert server.requests[1].tool_outputs[0] == ("m1", BLIND_CALL_LOADED.format(name="music.play"))
    assert "music-_-play" not in server.requests[0].tool_names
    assert "music-_-play" in server.requests[1].tool_names
    assert ran.names == ["music.play"]
    stats = result.stats
    assert stats.blind_call_loads == 1
    assert stats.refused_calls == {"blind_call_loaded": 1}
    assert stats.tools_loaded == ("music.play",)
    assert stats.loaded_never_called == ()


async def test_blind_call_reject_is_the_default(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("music-_-play", id="m1", song="s"), call("end"))
    result = await make_bot(weather_tools).ask("x")

    assert server.requests[1].tool_outputs[0] == ("m1", NOT_LOADED_YET.format(name="music.play"))
    assert server.requests[1].tool_names == server.requests[0].tool_names
    assert result.stats.blind_call_loads == 0


async def test_blind_call_load_never_loads_a_forbidden_tool(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(call("music-_-play", id="m1", song="s"), call("end"))
    result = await make_bot(
        weather_tools,
        skills={"tool_search_blind_call": "load"},
        tools_table={"deny": ["music.*"]},
    ).ask("x")

    assert server.requests[1].tool_outputs[0] == ("m1", NO_SUCH_TOOL.format(name="music-_-play"))
    assert server.requests[1].tool_names == server.requests[0].tool_names
    assert result.stats.blind_call_loads == 0
    assert result.stats.tools_loaded == ()
    assert result.stats.refused_calls == {"unknown": 1}


# -- a real tool named tool_search: skipped while tool search offers the virtual one ---------

REAL = "A real tool that happens to use the reserved name."


def real_tool_search(ran: Ran) -> Tool:
    return ran.tool("tool_search", REAL, result="the real tool_search ran", q="Its query.")


def reserved_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "'tool_search'" in r.getMessage()
    ]


def deferred_block(server: ScriptedOpenAIServer, index: int) -> list[str]:
    """The names the directory of request ``index`` lists."""
    for text in server.requests[index].system_texts:
        start = text.find("<available_deferred_tools>\n")
        if start >= 0:
            end = text.index("</available_deferred_tools>", start)
            return text[start:end].splitlines()[1:]
    raise AssertionError("no directory")


async def test_a_real_tool_search_is_skipped_and_every_other_tool_stays_searchable(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script(
        call("tool_search", id="s1", query="weather forecast"),
        call("weather-_-forecast", id="w1", city="Oslo"),
        call("end"),
    )
    server.script(call("tool_search", id="s2", query="select:music.play"), call("end"))
    bot = make_bot(
        [*weather_tools, real_tool_search(ran)], skills={"tool_search_loading": "append"}
    )
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        first = await bot.ask("Weather in Oslo?")
        second = await bot.ask("Play a song")

    # The virtual tool_search is offered (never the real schema); the directory lists every
    # other tool; a search finds them; the real tool never runs.
    assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
    assert REAL not in json.dumps([r.body for r in server.requests])
    assert deferred_block(server, 0) == ["calendar.add", "music.play", "weather.forecast"]
    assert "weather.forecast" in json.loads(server.requests[1].tool_outputs[0][1])["loaded"]
    assert json.loads(server.requests[4].tool_outputs[0][1])["loaded"] == ["music.play"]
    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]
    assert (first.stats.searches, second.stats.searches) == (1, 1)
    # One warning for the tool set, not one per ask, worded as the catalog words its skips.
    assert reserved_warnings(caplog) == [
        "tool catalog: skipping 1 of 6 entries (1 reserved): entry 5 ('tool_search'): "
        "the reserved name of the virtual search tool"
    ]


async def test_the_reserved_warning_is_logged_once_per_tool_set_as_the_catalog_words_it(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = make_bot([*weather_tools, real_tool_search(ran)])
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        for _ in range(3):
            server.script(call("end"))
            await bot.ask("x")
        logged = reserved_warnings(caplog)
        caplog.clear()
        ToolCatalog(bot.toolset.schemas)  # what the wrapper logs for the same tool list
        assert logged == reserved_warnings(caplog)
    assert len(logged) == 1
    assert "(1 reserved)" in logged[0]


async def test_the_model_calling_tool_search_gets_the_virtual_search(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
) -> None:
    # The real tool's own arguments: the virtual tool answers (and says what it needs).
    server.script(call("tool_search", id="s1", q="x"), call("end"))
    server.script(call("tool_search", id="s2", query="select:tool_search,music.play"), call("end"))
    bot = make_bot([*weather_tools, real_tool_search(ran)])
    await bot.ask("x")
    result = await bot.ask("y")

    answer = server.requests[1].tool_outputs[0][1]
    assert "the real tool_search ran" not in answer
    assert "query" in answer
    selected = json.loads(server.requests[3].tool_outputs[0][1])
    assert selected["loaded"] == ["music.play"]
    assert "tool_search" not in selected["loaded"]
    assert ran.calls == []
    assert result.stats.searches == 1


async def test_with_tool_search_off_the_real_tool_search_is_sent_and_runs(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script(call("tool_search", id="t1", q="x"), call("end"))
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        bot = make_bot(
            [*weather_tools, real_tool_search(ran)], skills={"tool_search_enabled": False}
        )
        result = await bot.ask("x")

    full = ["send_message", "end", "weather-_-forecast", "music-_-play", "calendar-_-add"]
    assert server.requests[0].tool_names == [*full, "tool_search"]
    assert REAL in json.dumps(server.requests[0].body)
    assert ran.calls == [("tool_search", {"q": "x"})]
    assert server.requests[1].tool_outputs[0] == ("t1", "the real tool_search ran")
    assert result.stats.searches == 0
    assert not reserved_warnings(caplog)


async def test_with_nothing_deferred_the_real_tool_search_is_an_ordinary_tool(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No virtual tool in the request (every tool always loaded): nothing takes the name, so
    # the real tool is sent and runs, as the wrapper passes such a request through.
    always = ["send_message", "end", "weather.forecast", "music.play", "calendar.add"]
    server.script(call("tool_search", id="t1", q="x"), call("end"))
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        bot = make_bot(
            [*weather_tools, real_tool_search(ran)],
            skills={"tool_search_always_loaded": always},
        )
        await bot.ask("x")

    assert server.requests[0].tool_names[-1] == "tool_search"
    assert REAL in json.dumps(server.requests[0].body)
    assert ran.calls == [("tool_search", {"q": "x"})]
    assert not reserved_warnings(caplog)
