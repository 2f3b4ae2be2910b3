"""Responses mode: previous_response_id with only new outputs, and the stateless fallback."""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai
import pytest

from bot_toolsearch import Tool
from bot_toolsearch.testing import ScriptedOpenAIServer, call, error

if TYPE_CHECKING:
    from tests.conftest import BotFactory, Ran

LOST = "No tool call found for function call output with call_id call_1."


@pytest.fixture
def api() -> str:
    return "responses"


async def test_follow_ups_send_only_new_outputs_and_the_expanded_tools(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call("tool_search", id="s1", query="select:weather.forecast"),
        call("weather-_-forecast", id="w1", city="Oslo"),
        call("end"),
    )
    await make_bot(weather_tools).ask("x")

    first, second, third = server.requests
    assert first.previous_response_id is None
    assert first.messages == [{"role": "user", "content": "x"}]
    assert second.previous_response_id == "resp_1"
    assert [item["type"] for item in second.messages] == ["function_call_output"]
    assert second.tool_outputs[0][0] == "s1"
    loaded = next(t for t in second.body["tools"] if t["name"] == "weather-_-forecast")
    assert loaded["parameters"]["properties"]["city"]["type"] == "string"
    assert third.previous_response_id == "resp_2"
    assert third.tool_outputs == [("w1", "weather.forecast ok [('city', 'Oslo')]")]
    assert all("<available_deferred_tools>" in r.body["instructions"] for r in server.requests)


async def test_a_lost_call_is_resent_statelessly_once_and_stays_stateless(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool], ran: Ran
) -> None:
    server.script(
        call("tool_search", id="call_1", query="select:weather.forecast"),
        error(400, LOST, param="input"),
        call("weather-_-forecast", id="w1", city="Oslo"),
        call("end"),
    )
    result = await make_bot(weather_tools).ask("x")

    _, lost, replay, after = server.requests
    assert lost.previous_response_id == "resp_1"
    assert replay.previous_response_id is None
    assert [(i.get("type"), i.get("role")) for i in replay.messages] == [
        (None, "user"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    assert replay.tool_names == lost.tool_names
    assert "weather-_-forecast" in replay.tool_names
    assert after.previous_response_id is None
    assert len(after.messages) == 5  # the whole history again
    assert ran.names == ["weather.forecast"]
    assert result.rounds == 3


async def test_other_errors_are_not_caught(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(
        call("tool_search", query="select:weather.forecast"),
        error(400, "Previous response not found.", param="previous_response_id"),
    )
    with pytest.raises(openai.BadRequestError, match="Previous response not found"):
        await make_bot(weather_tools).ask("x")


async def test_the_lost_call_error_without_a_previous_id_is_not_retried(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(error(400, LOST, param="input"))
    with pytest.raises(openai.BadRequestError):
        await make_bot(weather_tools).ask("x")


async def test_force_stateless_replay_always_sends_the_full_history(
    server: ScriptedOpenAIServer, make_bot: BotFactory, weather_tools: list[Tool]
) -> None:
    server.script(call("tool_search", query="select:music.play"), call("end"))
    await make_bot(weather_tools, model={"responses_force_stateless_replay": True}).ask("x")

    assert [r.previous_response_id for r in server.requests] == [None, None]
    assert len(server.requests[1].messages) == 3
