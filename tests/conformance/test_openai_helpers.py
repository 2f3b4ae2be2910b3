"""The openai SDK's own helpers (``responses.stream()``, ``responses.parse()``) sending OpenAI's
tool-search dialect through each door to the strict upstream."""

from __future__ import annotations

from typing import Any

import openai
import pydantic

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

FORECAST = {
    "type": "function",
    "name": "get_weather_forecast",
    "description": "Forecast the weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
    "defer_loading": True,
}
TOOLS: list[Any] = [{"type": "tool_search"}, FORECAST]


class Weather(pydantic.BaseModel):
    city: str
    temp: int


async def test_responses_stream_helper(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        call("get_weather_forecast", city="Oslo"),
    )
    async with door_client.responses.stream(
        model="m", input="Weather in Oslo?", tools=TOOLS
    ) as stream:
        final = await stream.get_final_response()
    assert [item.type for item in final.output] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]
    forecast = final.output[-1]
    assert forecast.type == "function_call"
    assert forecast.parsed_arguments == {"city": "Oslo"}  # type: ignore[union-attr]
    first, second = strict.requests
    assert first.tool_names == ["tool_search"]
    assert second.tool_names == ["tool_search", "get_weather_forecast"]


async def test_responses_parse_helper(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        text('{"city": "Oslo", "temp": 3}'),
    )
    parsed = await door_client.responses.parse(
        model="m", input="Weather in Oslo?", tools=TOOLS, text_format=Weather
    )
    assert parsed.output_parsed == Weather(city="Oslo", temp=3)
    assert len(strict.requests) == 2


INSTRUCTIONS = "Answer briefly."


async def test_the_reply_echoes_the_callers_own_instructions_and_tools(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        text("I can."),
        call("tool_search", query="select:get_weather_forecast"),
        text("I can."),
    )
    reply = await door_client.responses.create(
        model="m", input="Forecast?", instructions=INSTRUCTIONS, tools=TOOLS
    )
    stream = await door_client.responses.create(
        model="m", input="Forecast?", instructions=INSTRUCTIONS, tools=TOOLS, stream=True
    )
    events = [event async for event in stream]
    shown = [
        reply,
        *(e.response for e in events if e.type.startswith("response.") and hasattr(e, "response")),
    ]
    assert [e.type for e in events if hasattr(e, "response")] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    # The upstream got the directory and its own tool list; the caller gets its own back.
    assert "<available_deferred_tools>" in strict.requests[0].body["instructions"]
    assert strict.requests[1].tool_names == ["tool_search", "get_weather_forecast"]
    for echoed in shown:
        assert echoed.instructions == INSTRUCTIONS
        assert [tool.model_dump(exclude_none=True) for tool in echoed.tools] == TOOLS


async def test_items_come_in_the_order_they_happened(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        text("I can."),
        call("tool_search", query="select:get_weather_forecast"),
        text("I can."),
    )
    order = ["tool_search_call", "tool_search_output", "message"]
    reply = await door_client.responses.create(model="m", input="Forecast?", tools=TOOLS)
    assert [item.type for item in reply.output] == order
    stream = await door_client.responses.create(
        model="m", input="Forecast?", tools=TOOLS, stream=True
    )
    events = [event async for event in stream]
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    assert added == order
    assert [e.output_index for e in events if e.type == "response.output_item.added"] == [0, 1, 2]
    assert [item.type for item in events[-1].response.output] == order  # type: ignore[union-attr]


async def test_chat_stream_helper_with_a_deferred_tool(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    # Chat Completions: defer_loading inside function, as vLLM and SGLang accept it.
    function = {k: v for k, v in FORECAST.items() if k not in ("type", "defer_loading")}
    tools: list[Any] = [{"type": "function", "function": {**function, "defer_loading": True}}]
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        call("get_weather_forecast", city="Oslo"),
    )
    async with door_client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=tools
    ) as stream:
        final = await stream.get_final_completion()
    (forecast,) = final.choices[0].message.tool_calls or ()
    assert forecast.function.parsed_arguments == {"city": "Oslo"}  # type: ignore[union-attr]
    first, second = strict.requests
    assert first.tool_names == ["tool_search"]
    assert second.tool_names == ["tool_search", "get_weather_forecast"]
