"""Real frameworks' own agent loops on the wrapped client, 66 tools, a scripted upstream.

The upstream is scripted to search, then call the loaded tool, then reply. Each test checks
that the framework ran the real tool's function, never saw ``tool_search``, and that the
upstream got the projected tool list (``tool_search``, then what was loaded), not all 66.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from bot_toolsearch import wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

from ._tools import loaded

TOOL_COUNT = 66


def _script(server: ScriptedOpenAIServer) -> None:
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("It is sunny in Oslo."),
    )


def _check_upstream(server: ScriptedOpenAIServer) -> None:
    search, first_call, reply = server.requests
    assert search.tool_names == ["tool_search"]
    assert first_call.tool_names == reply.tool_names == ["tool_search", "get_weather"]
    assert loaded(first_call.tool_outputs[-1][1]) == ["get_weather"]
    assert "<available_deferred_tools>" in search.system_texts[-1]
    # The framework resent the call and its result; the tool list was derived from it.
    assert reply.tool_outputs[-1][1] == "Oslo: sunny, 21 C"


@pytest.fixture
async def wrapped(server: ScriptedOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner)
    yield client
    await client.close()


def _functions(ran: list[str]) -> list[tuple[str, str, Callable[..., str]]]:
    """(name, description, function) for the weather tool and 65 distractors."""

    def get_weather(city: str) -> str:
        ran.append(city)
        return f"{city}: sunny, 21 C"

    out: list[tuple[str, str, Callable[..., str]]] = [
        ("get_weather", "Get the current weather for a city.", get_weather)
    ]
    for i in range(TOOL_COUNT - 1):
        out.append((f"inventory_item_{i:03d}", f"Look up stock level number {i}.", _lookup(i, ran)))
    return out


def _lookup(number: int, ran: list[str]) -> Callable[..., str]:
    def lookup(item: str) -> str:
        ran.append(f"inventory_{number}")
        return "0"

    return lookup


# --- the OpenAI Agents SDK ---------------------------------------------------------------


def _agents_tools(ran: list[str]) -> list[Any]:
    from agents import function_tool

    return [
        function_tool(fn, name_override=name, description_override=desc)
        for name, desc, fn in _functions(ran)
    ]


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_openai_agents_sdk(
    server: ScriptedOpenAIServer, wrapped: openai.AsyncOpenAI, api: str
) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    _script(server)
    ran: list[str] = []
    model = (
        OpenAIChatCompletionsModel(model="scripted-model", openai_client=wrapped)
        if api == "chat_completions"
        else OpenAIResponsesModel(model="scripted-model", openai_client=wrapped)
    )
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=_agents_tools(ran))
    result = await Runner.run(agent, "Weather in Oslo?")

    assert ran == ["Oslo"]
    assert result.final_output == "It is sunny in Oslo."
    seen = [
        getattr(item, "name", None)
        for response in result.raw_responses
        for item in response.output
        if getattr(item, "type", None) == "function_call"
    ]
    assert seen == ["get_weather"]
    _check_upstream(server)
    assert all(r.api == api for r in server.requests)
    # The framework sent all 66 tools; the upstream never got more than two.
    assert max(len(r.tool_names) for r in server.requests) == 2


# --- pydantic-ai -------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_pydantic_ai(
    server: ScriptedOpenAIServer, wrapped: openai.AsyncOpenAI, api: str
) -> None:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    _script(server)
    ran: list[str] = []
    provider = OpenAIProvider(openai_client=wrapped)
    model = (
        OpenAIChatModel("scripted-model", provider=provider)
        if api == "chat_completions"
        else OpenAIResponsesModel("scripted-model", provider=provider)
    )
    tools = [Tool(fn, name=name, description=desc) for name, desc, fn in _functions(ran)]
    agent = Agent(model, tools=tools, instructions="Be brief.")
    result = await agent.run("Weather in Oslo?")

    assert ran == ["Oslo"]
    assert result.output == "It is sunny in Oslo."
    seen = [
        part.tool_name
        for message in result.all_messages()
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    assert seen == ["get_weather"]
    _check_upstream(server)
    assert all(r.api == api for r in server.requests)


async def test_openai_agents_sdk_streamed(
    server: ScriptedOpenAIServer, wrapped: openai.AsyncOpenAI
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    _script(server)
    ran: list[str] = []
    model = OpenAIChatCompletionsModel(model="scripted-model", openai_client=wrapped)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=_agents_tools(ran))
    result = Runner.run_streamed(agent, "Weather in Oslo?")
    names = [
        getattr(event.item.raw_item, "name", None)
        async for event in result.stream_events()
        if event.type == "run_item_stream_event" and event.name == "tool_called"
    ]
    assert ran == ["Oslo"]
    assert names == ["get_weather"]
    assert result.final_output == "It is sunny in Oslo."
    _check_upstream(server)
    assert all(r.body.get("stream") is True for r in server.requests)


# --- a fixed tool list: tool_search_loading = "bridge" ----------------------------------------


async def test_openai_agents_sdk_in_bridge_mode(server: ScriptedOpenAIServer) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

    from bot_toolsearch import BotSettings

    set_tracing_disabled(True)
    server.script(
        call("tool_search", query="select:get_weather"),
        call("call_tool", name="get_weather", arguments={"city": "Oslo"}),
        text("It is sunny in Oslo."),
    )
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_loading": "bridge"}}
    )
    inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    wrapped = wrap_openai(inner, settings=settings)
    ran: list[str] = []
    model = OpenAIChatCompletionsModel(model="scripted-model", openai_client=wrapped)
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=_agents_tools(ran))
    try:
        result = await Runner.run(agent, "Weather in Oslo?")
    finally:
        await wrapped.close()

    assert ran == ["Oslo"]
    assert result.final_output == "It is sunny in Oslo."
    # The upstream saw the same two tools in every request; the framework only its own tool.
    assert [r.tool_names for r in server.requests] == [["tool_search", "call_tool"]] * 3
    assert server.requests[2].tool_outputs[-1][1] == "Oslo: sunny, 21 C"
