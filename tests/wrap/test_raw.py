"""``with_raw_response`` / ``with_streaming_response`` of the wrapped ``create`` methods."""

from __future__ import annotations

import openai

from bot_toolsearch import wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.wrap._tools import chat_tools, responses_tools

USER = [{"role": "user", "content": "Weather in Oslo?"}]


async def test_raw_response_does_tool_search_and_passes_the_rest_through(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("hi"),
    )
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner)
    handled = await client.chat.completions.with_raw_response.create(
        model="m", messages=USER, tools=chat_tools()
    )
    completion = handled.parse()
    assert [c.function.name for c in completion.choices[0].message.tool_calls] == ["get_weather"]
    assert server.requests[0].tool_names == ["tool_search"]

    plain = await client.chat.completions.with_raw_response.create(model="m", messages=USER)
    assert plain.headers["content-type"].startswith("application/json")  # the real response
    assert plain.parse().choices[0].message.content == "hi"
    await client.close()


async def test_streaming_response_streams_responses_with_tool_search(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner)
    async with client.responses.with_streaming_response.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    ) as response:
        assert response.request_id is None  # several upstream requests: no single one
        events = [event async for event in await response.parse()]
    await client.close()
    final = events[-1].response
    assert [i.name for i in final.output if i.type == "function_call"] == ["get_weather"]
    assert all("tool_search" not in str(e.to_dict()) for e in events[2:-1])


def test_sync_twins(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.chat.completions.with_streaming_response.create(
        model="m", messages=USER, tools=chat_tools(), stream=True
    ) as response:
        chunks = list(response.parse())
    names = [
        d.function.name
        for c in chunks
        for choice in c.choices
        for d in choice.delta.tool_calls or ()
        if d.function is not None and d.function.name
    ]
    assert names == ["get_weather"]
    server.script(text("plain"))
    raw = client.responses.with_raw_response.create(model="m", input="hi")
    assert raw.parse().output_text == "plain"
    client.close()
