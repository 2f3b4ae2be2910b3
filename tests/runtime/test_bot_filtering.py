"""Per-ask filtering and the fallbacks to the full tool list, in both API modes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._protocol.messages import NO_SUCH_TOOL
from bot_toolsearch.testing import ModelRequest, ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran

FULL = ["send_message", "end", "weather-_-forecast", "music-_-play", "calendar-_-add"]


def no_directory(server: ScriptedOpenAIServer) -> bool:
    return all(
        "<available_deferred_tools>" not in text
        for request in server.requests
        for text in request.system_texts
    )


def sync_filter(context: Mapping[str, Any], names: frozenset[str]) -> Iterable[str]:
    return [n for n in names if not n.startswith("music.") or context.get("vip")]


async def async_filter(context: Mapping[str, Any], names: frozenset[str]) -> Iterable[str]:
    return sync_filter(context, names)


@pytest.mark.parametrize(
    "forbid",
    [
        {"tool_filter": sync_filter},
        {"tool_filter": async_filter},
        {"tools_table": {"deny": ["music.*"]}},
        {"tools_table": {"allow": ["weather.*", "calendar.*"]}},
    ],
    ids=["sync-hook", "async-hook", "deny", "allow"],
)
async def test_a_filtered_tool_is_nowhere_in_directory_search_select_or_errors(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    forbid: dict[str, Any],
) -> None:
    server.script(
        [
            call("tool_search", id="s1", query="select:music.play,music-_-play"),
            call("tool_search", id="s2", query="play song music"),
            call("music-_-play", id="m1", song="x"),
        ],
        call("end"),
    )
    result = await make_bot(weather_tools, **forbid).ask("play")

    select, keywords = (json.loads(out) for _, out in server.requests[1].tool_outputs[:2])
    assert select["loaded"] == []
    assert select["not_found"] == ["music.play", "music-_-play"]
    assert "music.play" not in keywords["loaded"] + keywords["already_loaded"]
    assert server.requests[1].tool_outputs[2] == ("m1", NO_SUCH_TOOL.format(name="music-_-play"))
    for request in server.requests:
        assert not any("music" in text for text in request.system_texts)
        assert not any("music" in name for name in request.tool_names)
        assert "Play a song" not in json.dumps(request.body)
    assert ran.calls == []
    assert result.stats.refused_calls == {"unknown": 1}


async def test_the_hook_sees_the_ask_context(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("tool_search", query="select:music.play"), call("end"))
    await make_bot(weather_tools, tool_filter=sync_filter).ask("x", context={"vip": True})

    assert "music-_-play" in server.requests[1].tool_names


async def test_allow_and_deny_patterns_filter_after_the_hook(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("end"))
    await make_bot(
        weather_tools,
        skills={"tool_search_enabled": False},
        tools_table={"allow": ["weather.*", "calendar.*"], "deny": ["calendar.*"]},
    ).ask("x")

    # The host's send_message and end survive allow; deny and the hook could still remove them.
    assert server.requests[0].tool_names == ["send_message", "end", "weather-_-forecast"]


async def test_disabled_sends_the_full_filtered_list_without_directory(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(call("calendar-_-add", title="t"), call("tool_search", query="x"), call("end"))
    result = await make_bot(weather_tools, skills={"tool_search_enabled": False}).ask("x")

    assert [r.tool_names for r in server.requests] == [FULL, FULL, FULL]
    assert no_directory(server)
    assert ran.names == ["calendar.add"]
    assert server.requests[2].tool_outputs[-1][1] == NO_SUCH_TOOL.format(name="tool_search")
    assert result.stats.searches == 0


async def test_no_deferred_tools_left_means_the_full_list(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("end"))
    always = ["send_message", "end", "weather.forecast", "music.play", "calendar.add"]
    await make_bot(weather_tools, skills={"tool_search_always_loaded": always}).ask("x")

    assert server.requests[0].tool_names == FULL
    assert no_directory(server)


async def test_a_filter_that_leaves_no_deferred_tools_turns_search_off(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("end"))
    await make_bot(weather_tools, tools_table={"deny": ["*.*"]}).ask("x")

    assert server.requests[0].tool_names == ["send_message", "end"]
    assert no_directory(server)


def history_call_names(request: ModelRequest) -> list[str]:
    """Names of the calls the history records (Chat ``tool_calls``, Responses items)."""
    if request.api == "chat_completions":
        return [c["function"]["name"] for m in request.messages for c in m.get("tool_calls") or ()]
    return [m["name"] for m in request.messages if m.get("type") == "function_call"]


async def test_the_history_keeps_the_models_spelling_of_a_forbidden_call(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        [
            call("music.play", id="m1", song="x"),
            call("music-_-play", id="m2", song="x"),
            call("weather.forecast", id="w1", city="Oslo"),
        ],
        call("end"),
    )
    bot = make_bot(
        weather_tools,
        tool_filter=sync_filter,
        skills={"tool_search_enabled": False},
        model={"responses_force_stateless_replay": True},
    )
    await bot.ask("x")

    # The canonical spelling of a forbidden tool must not come back as its wire name (nor
    # the wire spelling as anything else): only a permitted call is mapped.
    names = history_call_names(server.requests[1])
    assert names == ["music_play", "music-_-play", "weather-_-forecast"]
    assert server.requests[1].tool_outputs[:2] == [
        ("m1", NO_SUCH_TOOL.format(name="music.play")),
        ("m2", NO_SUCH_TOOL.format(name="music-_-play")),
    ]
    assert ran.names == ["weather.forecast"]


async def test_a_denied_real_tool_search_is_neither_sent_nor_warned_about(
    server: ScriptedOpenAIServer,
    make_bot: BotFactory,
    weather_tools: list[Tool],
    ran: Ran,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real = ran.tool("tool_search", "A real tool that happens to use the name.", q="query")
    server.script(call("tool_search", id="s1", query="select:music.play"), call("end"))
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        result = await make_bot([*weather_tools, real], tools_table={"deny": ["tool_search"]}).ask(
            "x"
        )

    # The filter runs before the session: the virtual tool serves the ask, the real one never.
    assert server.requests[0].tool_names == ["send_message", "end", "tool_search"]
    assert not no_directory(server)
    assert json.loads(server.requests[1].tool_outputs[0][1])["loaded"] == ["music.play"]
    assert "A real tool that happens" not in json.dumps(server.requests[0].body)
    assert ran.calls == []
    assert result.stats.searches == 1
    assert not any("'tool_search'" in r.getMessage() for r in caplog.records)
