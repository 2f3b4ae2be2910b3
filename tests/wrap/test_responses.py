"""The wrapped client's ``responses.create``: chained hidden rounds, stateless when asked."""

from __future__ import annotations

import openai

from bot_toolsearch import wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.wrap._tools import directory_for, loaded, responses_tools


async def test_hidden_round_chains_on_the_previous_response(
    server: ScriptedOpenAIServer,
) -> None:
    tools = responses_tools()
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    result = await client.responses.create(
        model="m", input="Weather?", instructions="Be brief.", tools=tools
    )
    assert [i.name for i in result.output if i.type == "function_call"] == ["get_weather"]
    first, second = server.requests
    names = sorted(t["name"] for t in tools)
    assert first.body["instructions"] == "Be brief.\n\n" + directory_for(names)
    assert second.body["instructions"] == first.body["instructions"]
    assert first.tool_names == ["tool_search"]
    assert second.tool_names == ["tool_search", "get_weather"]
    assert second.previous_response_id == "resp_1"
    assert [item["type"] for item in second.messages] == ["function_call_output"]
    assert loaded(second.tool_outputs[0][1]) == ["get_weather"]
    await client.close()


async def test_store_false_resends_the_whole_input(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:play_music"), text("ok"))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    result = await client.responses.create(
        model="m", input="Play x", tools=responses_tools(), store=False
    )
    assert result.output_text == "ok"
    second = server.requests[1]
    assert second.previous_response_id is None
    kinds = [item.get("type", item.get("role")) for item in second.messages]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert second.tool_names == ["tool_search", "play_music"]
    await client.close()
