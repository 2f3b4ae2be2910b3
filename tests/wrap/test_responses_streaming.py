"""``responses.create(stream=True)`` through the wrapper: one well-formed event stream."""

from __future__ import annotations

import itertools
import json
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, call, text
from tests.wrap._tools import loaded, responses_tools


def _check_well_formed(events: list[Any]) -> Any:
    """The stream's shape; returns the terminal event's response."""
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds.count("response.created") == 1
    assert kinds.count("response.completed") == 1
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    added = [e.output_index for e in events if e.type == "response.output_item.added"]
    assert added == list(range(len(added)))
    for event in events[2:-1]:  # the opening events echo the request's tools
        assert "tool_search" not in json.dumps(event.to_dict())
    return events[-1].response


async def test_hidden_search_is_consumed_and_the_real_call_streams(
    server: ScriptedOpenAIServer,
) -> None:
    tools = responses_tools()
    server.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), text="Looking it up."),
        call("get_weather", city="Oslo"),
    )
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    stream = await client.responses.create(model="m", input="Weather?", tools=tools, stream=True)
    events = [event async for event in stream]
    await client.close()

    final = _check_well_formed(events)
    text_shown = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text_shown == "Looking it up."
    calls = [i for i in final.output if i.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    # What was streamed and what completed agree: the text of the hidden round is in it.
    assert [i.type for i in final.output] == ["message", "function_call"]
    assert final.usage is not None
    search, after = server.requests
    assert search.body["stream"] is True
    assert search.tool_names == ["tool_search"]
    assert after.tool_names == ["tool_search", "get_weather"]
    assert loaded(after.tool_outputs[-1][1]) == ["get_weather"]
    assert final.usage.input_tokens > search.body.get("max_output_tokens", 0)
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [json.loads(e.arguments) for e in done] == [{"city": "Oslo"}]


async def test_usage_is_summed_over_the_hidden_rounds(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:get_weather"), text("Sunny."))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    stream = await client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    )
    events = [event async for event in stream]
    await client.close()
    final = _check_well_formed(events)
    assert final.output_text == "Sunny."
    # The scripted server reports each request's usage; the caller sees their sum.
    assert final.usage.input_tokens > 0
    assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens
    assert len(server.requests) == 2


def test_the_sync_client_streams_the_same(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="weather"), call("get_weather", city="Bergen"))
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    ) as stream:
        events = list(stream)
    client.close()
    final = _check_well_formed(events)
    assert [i.name for i in final.output if i.type == "function_call"] == ["get_weather"]


async def test_a_text_envelope_is_held_and_read_as_a_call(server: ScriptedOpenAIServer) -> None:
    envelope = '{"name": "tool_search", "arguments": {"query": "select:get_weather"}}'
    server.script(text(envelope), text("It is sunny."))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    stream = await client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True, store=False
    )
    events = [event async for event in stream]
    await client.close()
    final = _check_well_formed(events)
    shown = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert shown == "It is sunny."
    assert final.output_text == "It is sunny."
    assert server.requests[1].tool_names == ["tool_search", "get_weather"]


async def test_bridge_mode_returns_the_real_tool_in_the_stream(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(
        call("tool_search", query="select:get_weather"),
        call("call_tool", name="get_weather", arguments={"city": "Oslo"}),
    )
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_loading": "bridge"}}
    )
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner, settings=settings)
    stream = await client.responses.create(
        model="m", input="Weather?", tools=responses_tools(), stream=True
    )
    events = [event async for event in stream]
    await client.close()
    final = _check_well_formed(events)
    calls = [i for i in final.output if i.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert all("call_tool" not in json.dumps(e.to_dict()) for e in events[2:-1])


async def test_an_upstream_error_raises_from_create(server: ScriptedOpenAIServer) -> None:
    from bot_toolsearch.testing import error

    server.script(error(429, "slow down"))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with pytest.raises(openai.RateLimitError):
        await client.responses.create(
            model="m", input="Weather?", tools=responses_tools(), stream=True
        )
    await client.close()


async def test_openai_agents_streams_over_the_responses_model(
    server: ScriptedOpenAIServer,
) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return f"{city}: sunny"

    tools = [function_tool(get_weather, description_override="Get the weather for a city.")]
    tools += [function_tool(_lookup(i), name_override=f"inventory_item_{i:03d}") for i in range(65)]
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("It is sunny in Oslo."),
    )
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0)
    client = wrap_openai(inner)
    model = OpenAIResponsesModel(model="scripted-model", openai_client=client)
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=tools)
    result = Runner.run_streamed(agent, "Weather in Oslo?")
    seen: list[str] = []
    async for event in result.stream_events():
        item = getattr(event, "item", None)
        raw = getattr(item, "raw_item", None)
        name = getattr(raw, "name", None)
        if isinstance(name, str):
            seen.append(name)
    await client.close()

    assert ran == ["Oslo"]
    assert result.final_output == "It is sunny in Oslo."
    assert "tool_search" not in seen
    assert "get_weather" in seen
    assert all(r.body.get("stream") is True for r in server.requests)
    assert max(len(r.tool_names) for r in server.requests) == 2


def _lookup(number: int) -> Any:
    def lookup(item: str) -> str:
        """Look up a stock level."""
        return str(number)

    return lookup


def _one_identity(events: list[Any]) -> str:
    """One response id from the first event to the last, sequence numbers strictly
    increasing, output indexes contiguous; returns the id."""
    ids = {e.response.id for e in events if getattr(e, "response", None) is not None}
    assert len(ids) == 1, ids
    numbers = [e.sequence_number for e in events]
    assert all(a < b for a, b in itertools.pairwise(numbers))
    indexes = sorted({e.output_index for e in events if hasattr(e, "output_index")})
    assert indexes == list(range(len(indexes)))
    (identity,) = ids
    return identity


async def test_the_sdk_stream_helper_keeps_one_identity_and_the_chain_works(
    server: ScriptedOpenAIServer,
) -> None:
    """The stream's id is the final round's: the one a follow-up can continue from."""
    tools = responses_tools()
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    async with client.responses.stream(model="m", input="Weather?", tools=tools) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    identity = _one_identity(events)
    assert final.id == identity
    assert events[0].type == "response.created"
    assert events[0].response.previous_response_id is None  # not the hidden round's
    hidden_round = server.requests[1].previous_response_id
    assert hidden_round is not None
    assert identity != hidden_round
    (weather,) = [item for item in final.output if item.type == "function_call"]

    server.script(text("Sunny in Oslo."))
    answer = await client.responses.create(
        model="m",
        previous_response_id=identity,
        input=[{"type": "function_call_output", "call_id": weather.call_id, "output": "sunny"}],
        tools=tools,
    )
    await client.close()
    assert answer.output_text == "Sunny in Oslo."
    assert server.requests[-1].previous_response_id == identity  # the server knows the call


async def test_a_round_that_streamed_text_then_searched_keeps_its_id_for_the_chain(
    server: ScriptedOpenAIServer,
) -> None:
    """Text was shown before the search was known: the stream keeps that round's id, and a
    follow-up naming it continues from the final round upstream."""
    tools = responses_tools()
    server.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), text="Looking it up."),
        call("get_weather", city="Oslo"),
    )
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.responses.stream(model="m", input="Weather?", tools=tools) as stream:
        events = list(stream)
        final = stream.get_final_response()
    identity = _one_identity(events)
    assert final.id == identity == server.requests[1].previous_response_id  # the first round
    assert final.output_text == "Looking it up."
    (weather,) = [item for item in final.output if item.type == "function_call"]

    server.script(text("Sunny in Oslo."))
    answer = client.responses.create(
        model="m",
        previous_response_id=identity,
        input=[{"type": "function_call_output", "call_id": weather.call_id, "output": "sunny"}],
        tools=tools,
    )
    client.close()
    assert answer.output_text == "Sunny in Oslo."
    assert answer.previous_response_id == identity  # as the caller sent it
    assert server.requests[-1].previous_response_id not in (None, identity)  # the final round


async def test_a_non_streamed_answer_shows_the_callers_previous_id(
    server: ScriptedOpenAIServer,
) -> None:
    tools = responses_tools()
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    response = await client.responses.create(model="m", input="Weather?", tools=tools)
    assert response.previous_response_id is None  # the hidden round is not the caller's
    (weather,) = [item for item in response.output if item.type == "function_call"]
    server.script(text("Sunny."))
    answer = await client.responses.create(
        model="m",
        previous_response_id=response.id,
        input=[{"type": "function_call_output", "call_id": weather.call_id, "output": "sunny"}],
        tools=tools,
    )
    await client.close()
    assert answer.output_text == "Sunny."
    assert answer.previous_response_id == response.id


def test_a_passed_through_follow_up_resolves_the_stream_id_too(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), text="Looking it up."),
        text("Sunny."),
    )
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.responses.stream(model="m", input="Weather?", tools=responses_tools()) as stream:
        final = stream.get_final_response()
    server.script(text("You are welcome."))
    answer = client.responses.create(model="m", previous_response_id=final.id, input="Thanks!")
    client.close()
    assert answer.output_text == "You are welcome."
    final_round = server.requests[-1].previous_response_id
    assert final_round not in (None, final.id)  # no tools: passed through, to the final round
