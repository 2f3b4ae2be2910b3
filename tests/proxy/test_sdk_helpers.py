"""The SDK's own helpers (``stream()``, ``parse()``) against ``serve``: tool search holds."""

from __future__ import annotations

import openai
import pydantic

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.wrap._tools import chat_tools, responses_tools

USER = [{"role": "user", "content": "Weather in Oslo?"}]


class Weather(pydantic.BaseModel):
    city: str
    temp: int


def _searched_first(server: ScriptedOpenAIServer) -> None:
    first, second = server.requests[:2]
    assert first.tool_names == ["tool_search"]
    assert second.tool_names == ["tool_search", "get_weather"]


def test_chat_stream_and_parse_helpers_through_serve(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    strict = [{**t, "function": {**t["function"], "strict": True}} for t in chat_tools()]
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    with client.chat.completions.stream(model="m", messages=USER, tools=strict) as stream:
        final = stream.get_final_completion()
    (tool_call,) = final.choices[0].message.tool_calls or ()
    assert tool_call.function.parsed_arguments == {"city": "Oslo"}
    _searched_first(server)

    server.reset()
    server.script(
        call("tool_search", query="select:get_weather"), text('{"city": "Oslo", "temp": 3}')
    )
    completion = client.chat.completions.parse(
        model="m", messages=USER, tools=strict, response_format=Weather
    )
    assert completion.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    _searched_first(server)
    client.close()


def test_responses_parse_helper_through_serve(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    strict = [{**t, "strict": True} for t in responses_tools()]
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    server.script(
        call("tool_search", query="select:get_weather"), text('{"city": "Oslo", "temp": 3}')
    )
    response = client.responses.parse(
        model="m", input="Weather?", tools=strict, text_format=Weather
    )
    client.close()
    assert response.output_parsed == Weather(city="Oslo", temp=3)
    _searched_first(server)
