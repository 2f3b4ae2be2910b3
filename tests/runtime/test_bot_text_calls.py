"""Text tool-call recovery in the ask loop: only names exposed this round are accepted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot_toolsearch import Tool
from bot_toolsearch._protocol.messages import NO_SUCH_TOOL, NOT_LOADED_YET
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran


async def test_an_exposed_tool_written_as_text_runs_and_unexposed_ones_are_refused(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        text(
            '{"tool_calls": ['
            '{"id": "t1", "name": "send_message", "arguments": {"text": "hi"}},'
            '{"id": "t2", "name": "music-_-play", "arguments": {"song": "x"}},'
            '{"id": "t3", "name": "ghost", "arguments": {}}]}'
        ),
        call("end"),
    )
    result = await make_bot(weather_tools).ask("x")

    outputs = server.requests[1].tool_outputs
    assert outputs == [
        ("t1", "sent"),
        ("t2", NOT_LOADED_YET.format(name="music.play")),
        ("t3", NO_SUCH_TOOL.format(name="ghost")),
    ]
    assert ran.calls == []
    assert result.reply == "hi"
    assert [c.source for c in result.trace[0].calls] == ["text"] * 3
    # Responses: the server never saw these ids, so the next request replays statelessly.
    assert server.requests[1].previous_response_id is None


async def test_text_recovery_with_tool_search_off_accepts_only_this_rounds_tools(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        text('<tool_call>{"name": "weather.forecast", "arguments": {"city": "Oslo"}}</tool_call>'),
        text("<function=tool_search><parameter=query>x</parameter></function>"),
        call("end"),
    )
    await make_bot(weather_tools, skills={"tool_search_enabled": False}).ask("x")

    assert ran.calls == [("weather.forecast", {"city": "Oslo"})]
    assert server.requests[2].tool_outputs[-1][1] == NO_SUCH_TOOL.format(name="tool_search")


async def test_prose_and_malformed_envelopes_are_replies(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    bot = make_bot(weather_tools)
    server.script(text("Just call end when you are done."))
    prose = await bot.ask("x")
    server.script(text('{"name": "end", "arguments": {"oops": }'))
    broken = await bot.ask("y")

    assert prose.reply == "Just call end when you are done."
    assert prose.finish_reason == "reply"
    assert broken.finish_reason == "reply"
    assert broken.reply == '{"name": "end", "arguments": {"oops": }'
