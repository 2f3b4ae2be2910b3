"""Chat Completions mode: the full history with wire names on every request."""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai
import pytest

from bot_toolsearch import Tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call, error

if TYPE_CHECKING:
    from tests.conftest import BotFactory


@pytest.fixture
def api() -> str:
    return "chat_completions"


async def test_every_request_carries_the_full_history_with_wire_names(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call("tool_search", id="s1", query="select:weather.forecast"),
        call("weather-_-forecast", id="w1", city="Oslo"),
        call("end"),
    )
    await make_bot(weather_tools).ask("hello")

    last = server.requests[2].messages
    assert [m["role"] for m in last] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert last[5]["tool_calls"][0]["function"]["name"] == "weather-_-forecast"
    assert last[5]["tool_calls"][0]["function"]["arguments"] == '{"city":"Oslo"}'
    assert last[6] == {
        "role": "tool",
        "tool_call_id": "w1",
        "content": "weather.forecast ok [('city', 'Oslo')]",
    }
    assert server.requests[1].messages == last[:5]
    assert server.requests[0].body["tool_choice"] == "auto"


async def test_api_errors_reach_the_caller(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(error(401, "bad key"))
    with pytest.raises(openai.AuthenticationError):
        await make_bot(weather_tools).ask("x")


async def test_an_empty_answer_gets_one_correction_hint_within_the_round_bound(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    from bot_toolsearch._protocol.messages import CORRECTION_HINT
    from bot_toolsearch.testing import text

    server.script(text(""), call("end"))
    result = await make_bot(weather_tools).ask("x")

    assert server.requests[1].messages[-1] == {"role": "user", "content": CORRECTION_HINT}
    assert result.rounds == 2
    assert result.finish_reason == "end"
