"""The OpenAI Agents SDK (``openai-agents``) with ``ToolSearchTool``: its own runner, run and
streamed, through each door to the strict upstream.

Its standard setup: top-level ``@function_tool(defer_loading=True)`` tools (the SDK dispatches
a deferred top-level tool's call only when it comes back under its reserved synthetic
namespace, the tool's own name) and ``tool_namespace(...)`` groups. A second turn goes by
history (``result.to_input_list()``) or by ``previous_response_id``.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelSettings,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    ToolSearchTool,
    function_tool,
    tool_namespace,
)
from agents.result import RunResult, RunResultStreaming
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseInProgressEvent,
)

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

INSTRUCTIONS = "You are a weather assistant."
WIRE_DELIMITER = "-_-"


@function_tool(defer_loading=True)
def get_weather_forecast(city: str) -> str:
    """Forecast the weather for a city."""
    return f"{city}: sunny"


@function_tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"{city}: noon"


@function_tool(defer_loading=True)
def forecast(city: str) -> str:
    """Forecast the weather for a city."""
    return f"{city}: rain"


WEATHER = tool_namespace(
    name="weather", description="Weather forecasts and conditions.", tools=[forecast]
)

SETUPS: dict[str, tuple[list[FunctionTool], str, str]] = {
    # setup -> (the agent's function tools, the tool to search for, its name on the wire)
    "top_level": ([get_weather_forecast, get_time], "get_weather_forecast", "get_weather_forecast"),
    "namespace": ([*WEATHER, get_time], "weather.forecast", f"weather{WIRE_DELIMITER}forecast"),
}


def _agent(client: openai.AsyncOpenAI, tools: list[FunctionTool]) -> Agent[Any]:
    return Agent(
        name="assistant",
        instructions=INSTRUCTIONS,
        model=OpenAIResponsesModel(model="m", openai_client=client),
        tools=[ToolSearchTool(), *tools],
    )


async def _run(agent: Agent[Any], streamed: bool, given: Any, **kwargs: Any) -> RunResult | Any:
    config = RunConfig(tracing_disabled=True, model_settings=ModelSettings())
    if not streamed:
        return await Runner.run(agent, given, run_config=config, **kwargs)
    result: RunResultStreaming = Runner.run_streamed(agent, given, run_config=config, **kwargs)
    kinds = (ResponseCreatedEvent, ResponseInProgressEvent, ResponseCompletedEvent)
    shown = [
        event.data
        for event in [e async for e in result.stream_events()]
        if event.type == "raw_response_event" and isinstance(event.data, kinds)
    ]
    result.shown = shown  # type: ignore[attr-defined]  # the events carrying the response
    return result


def _types(result: Any) -> list[str]:
    return [item.type for item in result.new_items]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
@pytest.mark.parametrize("setup", list(SETUPS))
async def test_a_deferred_tool_found_and_run_then_a_second_turn_by_history(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer, setup: str, streamed: bool
) -> None:
    tools, searched, wire = SETUPS[setup]
    strict.script(
        call("tool_search", query=f"select:{searched}"),
        call(wire, city="Oslo"),
        text("Sunny in Oslo."),
        text("You are welcome."),
    )
    agent = _agent(door_client, tools)
    result = await _run(agent, streamed, "Weather in Oslo?")
    assert result.final_output == "Sunny in Oslo."
    assert _types(result) == [
        "tool_search_call_item",
        "tool_search_output_item",
        "tool_call_item",
        "tool_call_output_item",
        "message_output_item",
    ]
    ran = next(item for item in result.new_items if item.type == "tool_call_output_item")
    assert "Oslo" in ran.output

    history = [*result.to_input_list(), {"role": "user", "content": "Thanks!"}]
    again = await _run(agent, streamed, history)
    assert again.final_output == "You are welcome."
    # The history's call of the found tool reached the upstream under its wire name.
    last = strict.requests[-1].body
    called = [item for item in last["input"] if item.get("type") == "function_call"]
    assert [item["name"] for item in called if item["name"] != "tool_search"] == [wire]
    assert wire in strict.requests[-1].tool_names


@pytest.mark.parametrize("door", ["serve"])
async def test_serve_in_a_subprocess_runs_a_deferred_top_level_tool(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    tools, searched, wire = SETUPS["top_level"]
    strict.script(
        call("tool_search", query=f"select:{searched}"),
        call(wire, city="Oslo"),
        text("Sunny in Oslo."),
        text("You are welcome."),
    )
    agent = _agent(door_client, tools)
    result = await _run(agent, True, "Weather in Oslo?")
    assert result.final_output == "Sunny in Oslo."
    assert "tool_call_output_item" in _types(result)
    again = await _run(agent, False, [*result.to_input_list(), {"role": "user", "content": "Ta"}])
    assert again.final_output == "You are welcome."
    called = [i for i in strict.requests[-1].body["input"] if i.get("type") == "function_call"]
    assert [item["name"] for item in called] == ["tool_search", wire]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
async def test_a_second_turn_by_previous_response_id(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer, streamed: bool
) -> None:
    tools, searched, wire = SETUPS["top_level"]
    strict.script(
        call("tool_search", query=f"select:{searched}"),
        call(wire, city="Oslo"),
        text("Sunny in Oslo."),
        # The doors keep no state: behind previous_response_id the model loads it again.
        call("tool_search", query=f"select:{searched}"),
        call(wire, city="Bergen"),
        text("Sunny in Bergen too."),
    )
    agent = _agent(door_client, tools)
    first = await _run(agent, streamed, "Weather in Oslo?")
    assert first.final_output == "Sunny in Oslo."
    again = await _run(agent, streamed, "And Bergen?", previous_response_id=first.last_response_id)
    assert again.final_output == "Sunny in Bergen too."
    assert _types(again) == [
        "tool_search_call_item",
        "tool_search_output_item",
        "tool_call_item",
        "tool_call_output_item",
        "message_output_item",
    ]
    ran = [item.output for item in again.new_items if item.type == "tool_call_output_item"]
    assert ran == ["Bergen: sunny"]
    # The second turn continued the first's stored conversation upstream.
    assert strict.requests[3].body.get("previous_response_id") == "resp_3"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
async def test_items_come_in_the_order_they_happened(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer, streamed: bool
) -> None:
    tools, searched, _ = SETUPS["top_level"]
    strict.script(call("tool_search", query=f"select:{searched}"), text("I can forecast it."))
    result = await _run(_agent(door_client, tools), streamed, "Can you forecast?")
    assert _types(result) == [
        "tool_search_call_item",
        "tool_search_output_item",
        "message_output_item",
    ]
    (response,) = result.raw_responses
    assert [item.type for item in response.output] == [
        "tool_search_call",
        "tool_search_output",
        "message",
    ]


async def test_the_streamed_reply_echoes_the_callers_own_instructions_and_tools(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    tools, searched, _ = SETUPS["top_level"]
    strict.script(call("tool_search", query=f"select:{searched}"), text("I can forecast it."))
    result = await _run(_agent(door_client, tools), True, "Can you forecast?")
    # The upstream got the directory; the caller gets back what it sent.
    assert "<available_deferred_tools>" in strict.requests[0].body["instructions"]
    shown = [event.response for event in result.shown]
    assert len(shown) == 3  # response.created, response.in_progress, response.completed
    for echoed in shown:
        assert echoed.instructions == INSTRUCTIONS
        sent = [tool.model_dump(exclude_none=True) for tool in echoed.tools]
        assert [tool["type"] for tool in sent] == ["tool_search", "function", "function"]
        assert [tool.get("name") for tool in sent[1:]] == ["get_weather_forecast", "get_time"]
        assert sent[1]["defer_loading"] is True
