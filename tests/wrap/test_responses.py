"""The wrapped client's ``responses.create``: chained hidden rounds, stateless when asked."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from bot_toolsearch import wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, call, error, text
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


LOST = "No tool call found for function call output with call_id call_1."


def _lost_call_script(server: ScriptedOpenAIServer) -> None:
    # The hidden round is chained on resp_1; the server has lost its calls (HTTP 400), so the
    # round is resent once with the whole input and no previous id.
    server.script(
        call("tool_search", query="select:get_weather"),
        error(400, LOST, param="input"),
        call("get_weather", city="Oslo"),
    )


def _assert_resent_statelessly(server: ScriptedOpenAIServer) -> None:
    first, chained, resent = server.requests
    assert chained.previous_response_id == "resp_1"
    assert [item["type"] for item in chained.messages] == ["function_call_output"]
    assert resent.previous_response_id is None
    kinds = [item.get("type", item.get("role")) for item in resent.messages]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert resent.tool_names == chained.tool_names == ["tool_search", "get_weather"]
    assert first.tool_names == ["tool_search"]


def _calls(output: list[Any]) -> list[tuple[str, str]]:
    return [(i.name, i.arguments) for i in output if i.type == "function_call"]


async def test_a_lost_chain_is_resent_statelessly(server: ScriptedOpenAIServer) -> None:
    _lost_call_script(server)
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    result = await client.responses.create(model="m", input="Weather?", tools=responses_tools())
    assert _calls(result.output) == [("get_weather", '{"city":"Oslo"}')]
    _assert_resent_statelessly(server)
    await client.close()


def test_a_lost_chain_is_resent_statelessly_by_the_sync_client(
    server: ScriptedOpenAIServer,
) -> None:
    _lost_call_script(server)
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    result = client.responses.create(model="m", input="Weather?", tools=responses_tools())
    assert _calls(result.output) == [("get_weather", '{"city":"Oslo"}')]
    _assert_resent_statelessly(server)
    client.close()


async def test_a_lost_chain_is_resent_statelessly_when_streamed(
    server: ScriptedOpenAIServer,
) -> None:
    _lost_call_script(server)
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    stream = await client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert _calls(events[-1].response.output) == [("get_weather", '{"city":"Oslo"}')]
    _assert_resent_statelessly(server)
    await client.close()


def test_a_lost_chain_is_resent_statelessly_when_streamed_by_the_sync_client(
    server: ScriptedOpenAIServer,
) -> None:
    _lost_call_script(server)
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    stream = client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    )
    events = list(stream)
    assert events[-1].type == "response.completed"
    assert _calls(events[-1].response.output) == [("get_weather", '{"city":"Oslo"}')]
    _assert_resent_statelessly(server)
    client.close()


async def test_another_400_is_not_retried(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:get_weather"), error(400, "Invalid 'input'."))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with pytest.raises(openai.BadRequestError, match="Invalid 'input'"):
        await client.responses.create(model="m", input="Weather?", tools=responses_tools())
    assert len(server.requests) == 2
    await client.close()
