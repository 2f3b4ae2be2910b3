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
