"""The wrapper's loading modes (``[skills] tool_search_loading``) over HTTP, the caller a loop.

Under ``bridge`` and ``additional_tools`` every upstream request of a conversation carries the
same ``tools`` bytes, and each request's rendered prompt extends an earlier one: within a
``create`` call the previous request, across calls the last request the caller's history
covers (a call's hidden search rounds are not in the caller's history).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._core.prompt import (
    CALL_TOOL_NAME,
    TOOL_SEARCH_RULES_BRIDGE,
    call_tool_schema,
    tool_search_schema,
)
from bot_toolsearch._protocol.calls import CallRequest
from bot_toolsearch._services.client_policy import CURRENT, ClientPolicy
from bot_toolsearch._transports.responses import flat_tool
from bot_toolsearch._wrap.caller_tools import ToolsCache
from bot_toolsearch._wrap.chat import ChatPlan
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.plan import Pending
from bot_toolsearch._wrap.projection import Projection
from bot_toolsearch.testing import PromptCacheModel, ScriptedOpenAIServer, call, text

from ._tools import chat_tools, loaded, responses_tools

SYSTEM = {"role": "system", "content": "Be brief."}
USER = {"role": "user", "content": "Weather in Oslo?"}


def _settings(mode: str, **skills: Any) -> BotSettings:
    return BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_loading": mode, **skills}}
    )


@pytest.fixture
def cache_server() -> Iterator[ScriptedOpenAIServer]:
    model = PromptCacheModel(min_tokens=1, block_tokens=1, tokenizer="estimate")
    with ScriptedOpenAIServer(prompt_cache=model) as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
async def clients(cache_server: ScriptedOpenAIServer) -> AsyncIterator[dict[str, Any]]:
    made: dict[str, Any] = {}

    def make(mode: str, **skills: Any) -> openai.AsyncOpenAI:
        inner = openai.AsyncOpenAI(base_url=cache_server.base_url, api_key="k", max_retries=0)
        client = wrap_openai(inner, settings=_settings(mode, **skills))
        made[str(len(made))] = client
        return client

    yield {"make": make}
    for client in made.values():
        await client.close()


def _tools_bytes(server: ScriptedOpenAIServer) -> list[str]:
    return [json.dumps(r.body.get("tools")) for r in server.requests]


def _extends(after: str, before: str) -> bool:
    return after.startswith(before + "\n")


# -- Chat Completions, bridge -----------------------------------------------------------------


async def test_chat_bridge_keeps_the_tools_and_the_prefix_across_calls(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(
        call("tool_search", query="select:get_weather"),
        call(CALL_TOOL_NAME, name="get_weather", arguments={"city": "Oslo"}),
        text("Sunny in Oslo."),
        call(CALL_TOOL_NAME, name="get_weather", arguments={"city": "Bergen"}),
    )
    client = clients["make"]("bridge", tool_search_keep_loaded="conversation")
    tools = chat_tools()
    messages: list[Any] = [SYSTEM, USER]
    first = await client.chat.completions.create(model="m", messages=messages, tools=tools)

    message = first.choices[0].message
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("get_weather", '{"city":"Oslo"}')
    ]
    messages += [message.model_dump(exclude_none=True)]
    messages += [{"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "sunny"}]
    second = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert second.choices[0].message.content == "Sunny in Oslo."
    messages += [second.choices[0].message.model_dump(exclude_none=True)]
    messages += [{"role": "user", "content": "And Bergen?"}]
    third = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    bergen = third.choices[0].message.tool_calls[0]
    assert (bergen.function.name, bergen.function.arguments) == ("get_weather", '{"city":"Bergen"}')

    requests = cache_server.requests
    assert len(requests) == 4
    assert requests[0].tool_names == ["tool_search", CALL_TOOL_NAME]
    assert _tools_bytes(cache_server) == [_tools_bytes(cache_server)[0]] * 4
    assert TOOL_SEARCH_RULES_BRIDGE in requests[0].system_texts[-1]
    # The search result carries the schema the model calls through call_tool.
    search_result = json.loads(requests[1].tool_outputs[-1][1])
    assert search_result["loaded"] == ["get_weather"]
    assert [t["name"] for t in search_result["tools"]] == ["get_weather"]
    # Resent history: the caller's get_weather call goes up as call_tool, after an exact-name
    # search that re-declares its schema.
    replayed = requests[2].messages
    assistant_calls = [
        c["function"] for m in replayed if m.get("role") == "assistant" for c in m["tool_calls"]
    ]
    assert [f["name"] for f in assistant_calls] == ["tool_search", CALL_TOOL_NAME]
    assert json.loads(assistant_calls[0]["arguments"]) == {"query": "get_weather"}
    assert json.loads(assistant_calls[1]["arguments"]) == {
        "name": "get_weather",
        "arguments": {"city": "Oslo"},
    }
    prompts = cache_server.prompts
    assert _extends(prompts[1], prompts[0])  # the hidden round extends the first request
    assert _extends(prompts[2], prompts[0])  # the next call: its history, rebuilt
    assert _extends(prompts[3], prompts[2])  # and the call after extends that byte for byte


async def test_chat_bridge_checks_arguments_against_the_schema_and_asks_again(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(
        call("tool_search", query="select:get_weather"),
        call(CALL_TOOL_NAME, name="get_weather", arguments={"town": "Oslo"}),
        call(CALL_TOOL_NAME, name="get_weather", arguments={"city": "Oslo"}),
    )
    client = clients["make"]("bridge")
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())

    calls = result.choices[0].message.tool_calls
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        ("get_weather", '{"city":"Oslo"}')
    ]
    rejected = cache_server.requests[2].tool_outputs[-1][1]
    assert "get_weather was not executed" in rejected
    assert '"city"' in rejected  # names the missing argument
    assert '"parameters"' in rejected  # and gives the schema to call it right


async def test_chat_bridge_refuses_a_tool_that_is_not_loaded_and_never_returns_call_tool(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(
        call(CALL_TOOL_NAME, name="play_music", arguments={"title": "x"}),
        call(CALL_TOOL_NAME, arguments={}),
        text("Done."),
    )
    client = clients["make"]("bridge")
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())

    assert result.choices[0].message.content == "Done."
    assert result.choices[0].message.tool_calls is None
    not_loaded = cache_server.requests[1].tool_outputs[-1][1]
    assert "play_music" in not_loaded
    assert "tool_search" in not_loaded
    malformed = cache_server.requests[2].tool_outputs[-1][1]
    assert "name" in malformed


async def test_chat_bridge_streams_the_real_tool(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(
        call("tool_search", query="weather"),
        call(CALL_TOOL_NAME, name="get_weather", arguments={"city": "Oslo"}),
    )
    client = clients["make"]("bridge")
    stream = await client.chat.completions.create(
        model="m", messages=[USER], tools=chat_tools(), stream=True
    )
    names: list[str] = []
    arguments = ""
    async for chunk in stream:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or ():
                if delta.function is not None and delta.function.name:
                    names.append(delta.function.name)
                arguments += (delta.function.arguments or "") if delta.function else ""
    assert names == ["get_weather"]
    assert json.loads(arguments) == {"city": "Oslo"}


async def test_a_forced_deferred_tool_is_appended_for_that_call(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(call("get_weather", city="Oslo"))
    client = clients["make"]("bridge")
    await client.chat.completions.create(
        model="m",
        messages=[USER],
        tools=chat_tools(),
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    assert cache_server.requests[0].tool_names == ["tool_search", "get_weather"]


async def test_fallbacks_to_append_are_logged_once(
    cache_server: ScriptedOpenAIServer,
    clients: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache_server.script(text("a"), text("b"), text("c"))
    chat = clients["make"]("additional_tools")
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        for _ in range(2):
            await chat.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
        named = [*chat_tools(), _tool(CALL_TOOL_NAME)]
        bridge = clients["make"]("bridge")
        await bridge.chat.completions.create(model="m", messages=[USER], tools=named)
    fallbacks = [r.getMessage() for r in caplog.records if "append" in r.getMessage()]
    assert sum("needs the Responses API" in m for m in fallbacks) == 1
    assert sum(f"named {CALL_TOOL_NAME!r}" in m for m in fallbacks) == 1
    assert [r.tool_names for r in cache_server.requests][-1] == ["tool_search"]
    assert all(CALL_TOOL_NAME not in r.tool_names for r in cache_server.requests)


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": "A caller tool.", "parameters": {}},
    }


# -- Responses --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["additional_tools", "bridge"])
async def test_responses_fixed_modes_keep_the_tools_and_the_prefix_across_calls(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any], mode: str
) -> None:
    def use(**arguments: Any) -> Any:
        if mode == "bridge":
            return call(CALL_TOOL_NAME, name="get_weather", arguments=arguments)
        return call("get_weather", **arguments)

    cache_server.script(
        call("tool_search", query="select:get_weather"),
        use(city="Oslo"),
        text("Sunny in Oslo."),
        use(city="Bergen"),
    )
    client = clients["make"](mode, tool_search_keep_loaded="conversation")
    tools = responses_tools()
    items: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = await client.responses.create(
        model="m", input=items, tools=tools, instructions="Be brief.", store=False
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city":"Oslo"}')]
    items += [calls[0].model_dump(exclude_none=True)]
    items += [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"}]
    second = await client.responses.create(
        model="m", input=items, tools=tools, instructions="Be brief.", store=False
    )
    items += [o.model_dump(exclude_none=True) for o in second.output]
    items += [{"role": "user", "content": "And Bergen?"}]
    third = await client.responses.create(
        model="m", input=items, tools=tools, instructions="Be brief.", store=False
    )
    assert [o.name for o in third.output if o.type == "function_call"] == ["get_weather"]

    requests = cache_server.requests
    fixed = ["tool_search", *([CALL_TOOL_NAME] if mode == "bridge" else [])]
    assert requests[0].tool_names == fixed
    assert _tools_bytes(cache_server) == [_tools_bytes(cache_server)[0]] * 4
    hidden = requests[1].messages
    if mode == "additional_tools":
        # The load is declared right after the search's output, with the caller's own entry.
        kinds = [item.get("type") for item in hidden]
        assert kinds[-2:] == ["function_call_output", "additional_tools"]
        assert hidden[-1]["tools"] == [tools[0]]
        resent = [item.get("type") for item in requests[2].messages]
        assert resent.index("additional_tools") == resent.index("function_call") - 1
    else:
        assert loaded(requests[1].tool_outputs[-1][1]) == ["get_weather"]
    prompts = cache_server.prompts
    assert _extends(prompts[1], prompts[0])
    assert _extends(prompts[2], prompts[0])
    assert _extends(prompts[3], prompts[2])
    for before, after in itertools.pairwise(prompts[2:]):
        assert after.startswith(before)


async def test_responses_chained_hidden_round_carries_the_declaration(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(call("tool_search", query="select:get_weather"), call("get_weather"))
    client = clients["make"]("additional_tools")
    await client.responses.create(model="m", input="Weather?", tools=responses_tools())

    hidden = cache_server.requests[1]
    assert hidden.body.get("previous_response_id")
    assert [item.get("type") for item in hidden.messages] == [
        "function_call_output",
        "additional_tools",
    ]


async def test_auto_picks_bridge_for_chat_and_additional_tools_for_responses(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    cache_server.script(text("a"), text("b"))
    client = clients["make"]("auto")
    await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    await client.responses.create(model="m", input="hi", tools=responses_tools())
    chat, responses = cache_server.requests
    assert chat.tool_names == ["tool_search", CALL_TOOL_NAME]
    assert responses.tool_names == ["tool_search"]
    assert TOOL_SEARCH_RULES_BRIDGE in chat.system_texts[-1]
    assert TOOL_SEARCH_RULES_BRIDGE not in str(responses.body.get("instructions"))


# -- what the projections of one cached list share ------------------------------------------
# A plan on a cached list reuses what its tool list and settings snapshot decide (the
# permitted view, the deferred set, the directory); these tests fail if any of it is served
# to a call whose settings, client or ``tool_choice`` differ, or if one call's loads leak.


def _plan(engine: Engine, tools: list[dict[str, Any]], **kwargs: Any) -> ChatPlan:
    made = engine.chat_plan({"model": "m", "messages": [USER], "tools": tools, **kwargs})
    assert isinstance(made, ChatPlan)
    return made


def _directory(plan: ChatPlan) -> str:
    content = plan.messages[0]["content"]
    assert isinstance(content, str)
    assert "<available_deferred_tools>" in content
    return content


def _sent(plan: ChatPlan) -> list[str]:
    return [t["function"]["name"] for t in plan.request()["tools"]]


def test_a_reloaded_setting_changes_the_next_plan_on_the_same_list(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[bot]\nhot_reload = false\n"
        '[skills]\ntool_search_enabled = true\ntool_search_loading = "append"\n'
    )
    engine = Engine(config=config)
    try:
        tools = chat_tools()
        before = _plan(engine, tools)
        assert "get_weather" in _directory(before)
        assert "get_weather" not in _sent(before)
        config.write_text(
            "[bot]\nhot_reload = false\n[skills]\ntool_search_enabled = true\n"
            'tool_search_loading = "append"\ntool_search_always_loaded = ["get_weather"]\n'
        )
        assert engine._reloader is not None
        assert engine._reloader.reload()
        after = _plan(engine, tools)
        assert "get_weather" not in _directory(after)
        assert _sent(after) == ["get_weather", "tool_search"]
        config.write_text("[bot]\nhot_reload = false\n[skills]\ntool_search_enabled = false\n")
        assert engine._reloader.reload()
        assert engine.chat_plan({"model": "m", "messages": [USER], "tools": tools}) is None
    finally:
        engine.close()


def test_two_clients_on_one_list_get_their_own_directories() -> None:
    engine = Engine(settings=_settings("append"))
    tools = chat_tools()
    plans: dict[str, ChatPlan] = {}
    for _ in range(2):  # the second round finds what the first made
        for policy in (
            ClientPolicy("weather", allow=("get_weather", "inventory_*"), deny=()),
            ClientPolicy("mail", allow=None, deny=("get_weather",)),
            None,
        ):
            token = CURRENT.set(policy)
            try:
                plans[policy.name if policy else "all"] = _plan(engine, tools)
            finally:
                CURRENT.reset(token)
        weather, mail, everyone = (_directory(plans[k]) for k in ("weather", "mail", "all"))
        assert "get_weather" in weather
        assert "send_email" not in weather
        assert "get_weather" not in mail
        assert "send_email" in mail
        assert "get_weather" in everyone
        assert "send_email" in everyone


def test_a_forced_deferred_tool_is_appended_on_a_list_planned_before() -> None:
    engine = Engine(settings=_settings("bridge"))
    tools = chat_tools()
    plain = _plan(engine, tools)
    assert plain._setup.projection.mode == "bridge"
    forced = _plan(
        engine, tools, tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    assert forced._setup.projection.mode == "append"
    assert _sent(forced) == ["tool_search", "get_weather"]
    assert TOOL_SEARCH_RULES_BRIDGE not in _directory(forced)
    again = _plan(engine, tools)  # the next call is back under bridge, nothing loaded
    assert again._setup.projection.mode == "bridge"
    assert _sent(again) == ["tool_search", CALL_TOOL_NAME]
    assert _directory(again) == _directory(plain)
    assert TOOL_SEARCH_RULES_BRIDGE in _directory(plain)


def test_one_calls_loads_never_reach_the_next_call_on_the_same_list() -> None:
    engine = Engine(settings=_settings("append"))
    tools = chat_tools()
    history = [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
    ]
    for _ in range(2):  # each replay loads the tool in its own call
        replayed = engine.chat_plan({"model": "m", "messages": history, "tools": tools})
        assert isinstance(replayed, ChatPlan)
        assert _sent(replayed) == ["tool_search", "get_weather"]
        assert _sent(_plan(engine, tools)) == ["tool_search"]


def _weather_called() -> list[Any]:
    """A history whose last ask called ``get_weather`` and got its result."""
    return [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
    ]


def test_keep_loaded_follows_the_settings_of_each_call_on_one_list() -> None:
    tools = chat_tools()
    history = [*_weather_called(), USER]
    sent: dict[str, list[str]] = {}
    cache = ToolsCache()
    for keep in ("ask", "conversation", "ask"):
        engine = Engine(settings=_settings("append", tool_search_keep_loaded=keep))
        engine.cache = cache  # one cached list, two settings
        plan = engine.chat_plan({"model": "m", "messages": history, "tools": tools})
        assert isinstance(plan, ChatPlan)
        sent[keep] = _sent(plan)
    assert sent == {"ask": ["tool_search"], "conversation": ["tool_search", "get_weather"]}


# -- a round's tools by name (the schemas the protocol would copy are never made) ----------


def _general(projection: Projection) -> tuple[list[Any], tuple[str, ...], frozenset[str]]:
    """A round's tools as `Projection.round_tools` made them from the protocol's copied
    schemas (`ToolSearchProtocol.round_tools`), each one's name read from it."""
    tools = projection._tools
    out: list[Any] = list(tools.others)
    sent: list[str] = []
    for schema in projection.protocol.round_tools():
        name = schema["function"]["name"]
        sent.append(name)
        if name in (TOOL_SEARCH_NAME, CALL_TOOL_NAME):
            out.append(schema if tools.api == "chat" else flat_tool(schema))
        else:
            out.append(projection.view.entries[name])
    return out, tuple(sent), projection.protocol.exposed


def _search(projection: Projection, query: str) -> None:
    arguments = json.dumps({"query": query})
    call = CallRequest(0, "ts1", TOOL_SEARCH_NAME, arguments, json.loads(arguments))
    assert projection.answer([call]).loaded


_ROUND_CASES = [
    (api, mode, forced)
    for api in ("chat", "responses")
    for mode in ("append", "additional_tools", "bridge")
    for forced in (None, "play_music")
    if not (api == "chat" and mode == "additional_tools")
]


@pytest.mark.parametrize(("api", "mode", "forced"), _ROUND_CASES)
def test_round_tools_by_name_equal_the_protocols_copied_schemas(
    api: str, mode: str, forced: str | None
) -> None:
    engine = Engine(settings=_settings(mode, tool_search_always_loaded=["send_email"]))
    history: list[Any] = _weather_called()
    extra: dict[str, Any] = {}
    if api == "chat":
        if forced is not None:
            extra["tool_choice"] = {"type": "function", "function": {"name": forced}}
        made = engine.chat_plan({"model": "m", "messages": history, "tools": chat_tools(), **extra})
    else:
        if forced is not None:
            extra["tool_choice"] = {"type": "function", "name": forced}
        items = [
            history[0],
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        ]
        items.append({"type": "function_call_output", "call_id": "c1", "output": "Sunny."})
        made = engine.responses_plan(
            {"model": "m", "input": items, "tools": responses_tools(), **extra}
        )
    assert made is not None
    assert not isinstance(made, Pending)
    projection = made._setup.projection
    assert projection.active
    for query in (None, "select:convert_currency", "select:create_event"):
        if query is not None:
            _search(projection, query)  # the next round sends what it loaded (append)
        fast = projection.round_tools()
        sent, exposed = projection.sent, projection.exposed
        assert (fast, sent, exposed) == _general(projection)
        assert "send_email" in sent
        assert TOOL_SEARCH_NAME in sent
    assert ("create_event" in projection.sent) == (projection.mode == "append")


def test_a_catalog_tool_named_call_tool_is_sent_as_the_protocol_sent_it() -> None:
    engine = Engine(settings=_settings("append", tool_search_always_loaded=[CALL_TOOL_NAME]))
    tools = [*chat_tools(), _tool(CALL_TOOL_NAME)]
    plan = _plan(engine, tools)
    projection = plan._setup.projection
    assert projection.mode == "append"
    fast = projection.round_tools()
    assert CALL_TOOL_NAME in projection.sent
    assert (fast, projection.sent, projection.exposed) == _general(projection)


async def test_the_shared_virtual_schemas_are_never_changed_by_a_round(
    cache_server: ScriptedOpenAIServer, clients: dict[str, Any]
) -> None:
    # One schema object per list is sent in every round of every call (`_Shared.virtual`):
    # had a round changed it, a later request would show it.
    cache_server.script(
        call("tool_search", query="select:get_weather"), text("a"), text("b"), text("c")
    )
    client = clients["make"]("bridge", tool_search_max_results=7)
    await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    await client.responses.create(model="m", input="hi", tools=responses_tools())
    chat = [tool_search_schema(7), call_tool_schema()]
    bodies = [r.body["tools"] for r in cache_server.requests]
    assert bodies[:3] == [chat] * 3
    assert bodies[3] == [flat_tool(schema) for schema in chat]
