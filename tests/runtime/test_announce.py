"""Easter-egg announcements: the mode table, merging, and delivery through the chat channel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._runtime.announce import announcement_text, should_announce
from bot_toolsearch.testing import ScriptedOpenAIServer, call

if TYPE_CHECKING:
    from tests.conftest import BotFactory

ANNOUNCED = "tool_search，我调用你了"  # noqa: RUF001


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("none", False), ("agent", False), ("tools", True), ("clean", True), ("all", True)],
)
def test_tool_search_is_announced_by_mode(mode: Any, expected: bool) -> None:
    assert should_announce(mode, "tool_search", "tool", {}) is expected


def test_clean_mode_mutes_silent_contexts_and_the_builtins() -> None:
    assert not should_announce("clean", "tool_search", "tool", {"easter_egg_silent": True})
    assert should_announce("tools", "tool_search", "tool", {"easter_egg_silent": True})
    assert not should_announce("clean", "send_message", "tool", {})
    assert not should_announce("clean", "end", "tool", {})
    assert should_announce("agent", "helper", "agent", {})
    assert not should_announce("agent", "weather.forecast", "tool", {})


def test_announcement_text_merges_with_a_count() -> None:
    assert announcement_text("tool_search") == ANNOUNCED
    assert announcement_text("tool_search", 3) == ANNOUNCED + " x3"
    assert announcement_text("x", agent="helper") == "helper：x，我调用你了"  # noqa: RUF001


@pytest.mark.parametrize("mode", ["none", "agent", "tools", "clean", "all"])
async def test_search_announcements_per_mode_over_http(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], mode: str
) -> None:
    server.script(call("tool_search", query="select:music.play"), call("end"))
    result = await make_bot(weather_tools, easter_egg={"agent_call_message_enabled": mode}).ask("x")

    searched = [a for a in result.announcements if a.startswith("tool_search")]
    assert searched == ([ANNOUNCED] if mode in ("tools", "clean", "all") else [])


async def test_clean_mode_with_a_silent_context_announces_nothing(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("tool_search", query="select:music.play"), call("end"))
    bot = make_bot(weather_tools, easter_egg={"agent_call_message_enabled": "clean"})
    result = await bot.ask("x", context={"easter_egg_silent": True})

    assert result.announcements == ()


async def test_load_and_later_call_are_announced_separately_and_duplicates_merge(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    sent: list[str] = []

    async def sender(text: str) -> None:
        sent.append(text)

    server.script(
        [
            call("tool_search", query="select:music.play"),
            call("tool_search", query="select:music.play"),
            call("weather-_-forecast", city="x"),  # refused: not loaded, so not announced
        ],
        [
            call("music-_-play", song="a"),
            call("music-_-play", song="b"),
            call("music-_-play", song="c"),
            call("weather-_-forecast", city="x"),  # refused again
            call("send_message", text="done"),
        ],
        call("end"),
    )
    bot = make_bot(weather_tools, easter_egg={"agent_call_message_enabled": "clean"})
    result = await bot.ask("x", context={"sender": sender})

    assert result.announcements == (ANNOUNCED + " x2", "music.play，我调用你了 x3")  # noqa: RUF001
    assert [m.text for m in result.outbox] == [*result.announcements, "done"]
    assert sent == [m.text for m in result.outbox]


async def test_a_failing_sender_loses_nothing(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    def sender(text: str) -> None:
        raise ConnectionError("chat is down")

    server.script(call("send_message", text="hi"), call("end"))
    result = await make_bot(weather_tools).ask("x", context={"sender": sender})

    assert result.reply == "hi"


async def test_a_send_message_that_cannot_be_sent_is_not_announced(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        [call("send_message", id="m1", text=5), call("send_message", id="m2", text="hi")],
        call("end"),
    )
    bot = make_bot(weather_tools, easter_egg={"agent_call_message_enabled": "tools"})
    result = await bot.ask("x")

    outputs = dict(server.requests[1].tool_outputs)
    assert '"text" must be a string' in outputs["m1"]
    assert outputs["m2"] == "sent"
    # One send ran, so no " x2"; the later end is announced on its own.
    assert result.announcements == ("send_message，我调用你了", "end，我调用你了")  # noqa: RUF001
    assert [c.outcome for c in result.trace[0].calls] == ["invalid", "ran"]
