"""The SDK's own helpers (``stream()``, ``parse()``) against ``serve``: tool search holds."""

from __future__ import annotations

import openai
import pydantic

from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, call, text
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


def _follow_up(
    client: openai.OpenAI, previous: str, call_id: str
) -> openai.types.responses.Response:
    return client.responses.create(
        model="m",
        previous_response_id=previous,
        input=[{"type": "function_call_output", "call_id": call_id, "output": "sunny"}],
        tools=responses_tools(),
    )


def test_responses_stream_helper_through_serve_keeps_one_id_for_the_chain(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    for first in (
        call("tool_search", query="select:get_weather"),
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), text="Looking."),
    ):
        server.reset()
        server.script(first, call("get_weather", city="Oslo"))
        with client.responses.stream(model="m", input="Weather?", tools=responses_tools()) as s:
            events = list(s)
            final = s.get_final_response()
        ids = {e.response.id for e in events if getattr(e, "response", None) is not None}
        assert ids == {final.id}
        numbers = [e.sequence_number for e in events]
        assert numbers == sorted(set(numbers))
        _searched_first(server)
        (weather,) = [i for i in final.output if i.type == "function_call"]
        server.script(text("Sunny in Oslo."))
        assert _follow_up(client, final.id, weather.call_id).output_text == "Sunny in Oslo."
    client.close()
