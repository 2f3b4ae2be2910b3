"""The tool-search middleware: wire spellings, blind-call policy, directory bytes, no leaks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bot_toolsearch import Tool
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
