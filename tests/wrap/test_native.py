"""A client's own tool search (OpenAI's dialect) through the wrapper, on a backend that has none.

The scripted upstream refuses what such backends refuse (``refuse_native=True``: a
``tool_search``/``namespace`` tool type, a ``defer_loading`` key, the dialect's input items);
the replies are read through the official SDK's typed items.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import openai
import pytest
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItem,
)
from openai.types.responses.namespace_tool import NamespaceTool

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, text
from tests.wrap._tools import chat_tools, loaded, responses_tools

WIRE_DELIMITER = "-_-"
CRM = {
    "type": "namespace",
    "name": "crm",
    "description": "Customer relationship management: accounts, contacts and deals.",
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "description": "Find a record by its id.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
            "defer_loading": True,
        },
        {
            "type": "function",
            "name": "archive",
            "description": "Archive a record.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
            "defer_loading": True,
        },
    ],
}


def native_tools(*, execution: str | None = None, count: int = 20) -> list[dict[str, Any]]:
    """A Codex-style list: ``tool_search``, two loaded tools, the rest deferred, a namespace."""
    search: dict[str, Any] = {"type": "tool_search"}
    if execution is not None:
        search["execution"] = execution
    tools: list[dict[str, Any]] = [search]
    for i, tool in enumerate(responses_tools(count)):
        tools.append(tool if i < 2 else {**tool, "defer_loading": True})
    tools.append(CRM)
    return tools


@pytest.fixture
def hostile() -> Iterator[ScriptedOpenAIServer]:
    """A scripted upstream that refuses the dialect as backends without tool search do."""
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()


@pytest.fixture
async def make(hostile: ScriptedOpenAIServer) -> AsyncIterator[Callable[..., openai.AsyncOpenAI]]:
    made: list[openai.AsyncOpenAI] = []

    def factory(**kwargs: Any) -> openai.AsyncOpenAI:
        inner = openai.AsyncOpenAI(base_url=hostile.base_url, api_key="t", max_retries=0)
        made.append(wrap_openai(inner, **kwargs))
        return made[-1]

    yield factory
    for client in made:
        await client.close()


def _no_dialect(body: dict[str, Any]) -> None:
    """Nothing of the dialect reached the upstream."""
    raw = json.dumps(body)
    assert '"defer_loading"' not in raw
    for tool in body.get("tools") or ():
        assert tool.get("type") not in ("tool_search", "namespace")
    for item in body.get("input") or ():
        if isinstance(item, dict):
            assert item.get("type") not in ("tool_search_call", "tool_search_output")
            assert "namespace" not in item


async def test_the_hostile_upstream_refuses_the_dialect(
    hostile: ScriptedOpenAIServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=hostile.base_url, api_key="t", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="Unsupported tool type"):
        await client.responses.create(model="m", input="x", tools=native_tools())  # type: ignore[arg-type]
    await client.close()


async def test_server_mode_searches_in_hidden_rounds_and_reports_each_search(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="Blue"))
    client = make()
    result = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    first, second = hostile.requests
    for request in hostile.requests:
        _no_dialect(request.body)
    # The client's non-deferred tools are loaded from round 1; deferred ones wait for a search.
    assert first.tool_names == ["get_weather", "send_email", "tool_search"]
    assert second.tool_names == ["get_weather", "send_email", "tool_search", "play_music"]
    assert loaded(second.tool_outputs[0][1]) == ["play_music"]
    kinds = [item.type for item in result.output]
    assert kinds == ["tool_search_call", "tool_search_output", "function_call"]
    searched, found, played = result.output
    assert isinstance(searched, ResponseToolSearchCall)
    assert isinstance(found, ResponseToolSearchOutputItem)
    assert isinstance(played, ResponseFunctionToolCall)
    assert searched.execution == found.execution == "server"
    assert searched.status == found.status == "completed"
    assert searched.arguments == {"query": "select:play_music"}
    assert searched.call_id == found.call_id
    assert searched.id
    assert [tool.type for tool in found.tools] == ["function"]
    definition = found.tools[0]
    assert definition.name == "play_music"  # type: ignore[union-attr]
    assert definition.defer_loading is True  # type: ignore[union-attr]  # the client's own
    assert played.name == "play_music"
    assert played.namespace is None


async def test_usage_is_summed_over_the_hidden_rounds(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(
        ToolCallsTurn((call("tool_search", query="select:play_music"),), usage=Usage(100, 5, 0)),
        text("Done.", usage=Usage(120, 7, 90)),
    )
    client = make()
    result = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    assert result.output_text == "Done."
    assert [item.type for item in result.output] == [
        "message",
        "tool_search_call",
        "tool_search_output",
    ]
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (220, 12)
    assert result.usage.input_tokens_details.cached_tokens == 90


async def test_a_namespace_member_is_found_by_the_namespace_description(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    member = f"crm{WIRE_DELIMITER}lookup"
    hostile.script(
        call("tool_search", query="customer relationship accounts"),
        call(member, id="c1"),
    )
    client = make()
    result = await client.responses.create(
        model="m",
        input="Find account 42",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    first, second = hostile.requests
    assert member not in first.tool_names
    assert member in second.tool_names
    found = [item for item in result.output if isinstance(item, ResponseToolSearchOutputItem)]
    assert len(found) == 1
    groups = found[0].tools
    assert [type(group) for group in groups] == [NamespaceTool]
    group = groups[0]
    assert isinstance(group, NamespaceTool)
    assert group.name == "crm"
    assert group.description == CRM["description"]
    assert {tool.name for tool in group.tools} >= {"lookup"}  # type: ignore[union-attr]
    calls = [item for item in result.output if isinstance(item, ResponseFunctionToolCall)]
    assert [(c.name, c.namespace) for c in calls] == [("lookup", "crm")]


async def test_tool_search_off_in_the_config_still_honours_the_client(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), text("ok"))
    off = BotSettings.model_validate({"skills": {"tool_search_enabled": False}})
    client = make(settings=off)
    result = await client.responses.create(
        model="m",
        input="Play",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    assert result.output_text == "ok"
    assert hostile.requests[0].tool_names == ["get_weather", "send_email", "tool_search"]


async def test_config_always_loaded_adds_to_the_clients_loaded_tools(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(text("ok"))
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_always_loaded": ["play_music"]}}
    )
    client = make(settings=settings)
    await client.responses.create(
        model="m",
        input="Hi",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    assert sorted(hostile.requests[0].tool_names) == sorted(
        ["get_weather", "send_email", "tool_search", "play_music"]
    )


async def test_deny_applies_to_deferred_tools(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), text("none"))
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "tools": {"deny": ["play_*"]}}
    )
    client = make(settings=settings)
    result = await client.responses.create(
        model="m",
        input="Play",
        tools=native_tools(),  # type: ignore[arg-type]
    )
    first, second = hostile.requests
    assert "play_music" not in first.body["instructions"]
    assert "play_music" not in second.tool_names
    assert loaded(second.tool_outputs[0][1]) == []
    found = [item for item in result.output if isinstance(item, ResponseToolSearchOutputItem)]
    assert found[0].tools == []


async def test_pass_forwards_the_request_untouched(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "proxy": {"native_tool_search": "pass"}}
    )
    client = make(settings=settings)
    with pytest.raises(openai.BadRequestError, match="Unsupported tool type"):
        await client.responses.create(
            model="m",
            input="x",
            tools=native_tools(),  # type: ignore[arg-type]
        )
    assert hostile.requests[0].body["tools"] == native_tools()


async def test_a_request_without_the_dialect_keeps_todays_path(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="x"))
    client = make()
    result = await client.responses.create(model="m", input="Play", tools=responses_tools(20))  # type: ignore[arg-type]
    assert [item.type for item in result.output] == ["function_call"]
    assert hostile.requests[0].tool_names == ["tool_search"]


def _chat_native(count: int = 20) -> list[dict[str, Any]]:
    tools = chat_tools(count)
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if i < 2:
            out.append(tool)
        elif i % 2:
            out.append({**tool, "defer_loading": True})
        else:
            out.append({**tool, "function": {**tool["function"], "defer_loading": True}})
    return out


async def test_chat_defers_the_tools_marked_defer_loading(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(
        call("tool_search", query="select:play_music,create_event"),
        call("create_event", title="Gig", when="2026-12-05"),
    )
    client = make()
    tools = _chat_native()
    completion = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Add the gig"}],
        tools=tools,  # type: ignore[arg-type]
    )
    first, second = hostile.requests
    for request in hostile.requests:
        _no_dialect(request.body)
    assert first.tool_names == ["get_weather", "send_email", "tool_search"]
    assert second.tool_names[:3] == first.tool_names
    # Both spellings of the key defer: play_music on the tool, create_event inside function.
    assert set(second.tool_names[3:]) == {"play_music", "create_event"}
    assert loaded(second.tool_outputs[0][1]) == ["play_music", "create_event"]
    calls = completion.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["create_event"]  # type: ignore[union-attr]


async def test_chat_drops_a_tool_search_entry_and_runs_ours(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), text("ok"))
    client = make()
    completion = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Play"}],
        tools=[{"type": "tool_search"}, *_chat_native()],  # type: ignore[list-item]
    )
    assert completion.choices[0].message.content == "ok"
    assert completion.choices[0].message.tool_calls is None
    assert len(hostile.requests) == 2
    _no_dialect(hostile.requests[0].body)


async def test_chat_without_defer_loading_keeps_todays_path(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(text("ok"))
    client = make()
    await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Hi"}],
        tools=chat_tools(20),  # type: ignore[arg-type]
    )
    assert hostile.requests[0].tool_names == ["tool_search"]


async def test_a_streamed_reply_carries_the_three_items_in_one_stream(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="Blue"))
    client = make()
    stream = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=native_tools(),  # type: ignore[arg-type]
        stream=True,
    )
    events = [event async for event in stream]
    for request in hostile.requests:
        _no_dialect(request.body)
    sequence = [event.sequence_number for event in events]
    assert sequence == list(range(len(sequence)))
    added = [
        (e.output_index, e.item.type) for e in events if e.type == "response.output_item.added"
    ]
    done = [(e.output_index, e.item.type) for e in events if e.type == "response.output_item.done"]
    kinds = ["tool_search_call", "tool_search_output", "function_call"]
    assert [kind for _, kind in added] == kinds
    assert done == added
    first = added[0][0]
    assert [index for index, _ in added] == [first, first + 1, first + 2]
    assert [e.type for e in events].count("response.created") == 1
    ids = {e.response.id for e in events if hasattr(e, "response")}
    assert len(ids) == 1  # one response id from response.created to the terminal event
    final = events[-1]
    assert final.type == "response.completed"
    assert [item.type for item in final.response.output] == kinds
    searched, found, played = final.response.output
    assert isinstance(searched, ResponseToolSearchCall)
    assert isinstance(found, ResponseToolSearchOutputItem)
    assert searched.arguments == {"query": "select:play_music"}
    assert [t.name for t in found.tools] == ["play_music"]  # type: ignore[union-attr]
    assert isinstance(played, ResponseFunctionToolCall)
    assert played.name == "play_music"


async def test_a_streamed_chat_reply_shows_only_the_callers_calls(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="x"))
    client = make()
    stream = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Play"}],
        tools=_chat_native(),  # type: ignore[arg-type]
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    names = [
        call.function.name
        for chunk in chunks
        for choice in chunk.choices
        for call in choice.delta.tool_calls or ()
        if call.function is not None and call.function.name
    ]
    assert names == ["play_music"]
    assert len({chunk.id for chunk in chunks}) == 1


CLIENT_SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "Find project tools by keyword.",
    "parameters": {
        "type": "object",
        "properties": {"goal": {"type": "string", "description": "What the tool must do."}},
        "required": ["goal"],
    },
}


def _client_tools() -> list[dict[str, Any]]:
    return [CLIENT_SEARCH, *native_tools()[1:]]


async def test_client_mode_hands_the_search_to_the_client(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", goal="play a song"))
    client = make()
    result = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=_client_tools(),  # type: ignore[arg-type]
    )
    (request,) = hostile.requests  # we search nothing: no hidden round
    _no_dialect(request.body)
    assert request.tool_names == ["get_weather", "send_email", "tool_search"]
    (search,) = [t for t in request.body["tools"] if t["name"] == "tool_search"]
    assert search["description"] == CLIENT_SEARCH["description"]
    assert search["parameters"] == CLIENT_SEARCH["parameters"]
    # The client searches, but the model sees the directory: deferred names and namespaces,
    # with rules that name none of our query syntax.
    directory = request.body["instructions"]
    assert "play_music" in directory
    assert "crm.lookup" in directory
    assert "select:" not in directory
    (item,) = result.output
    assert isinstance(item, ResponseToolSearchCall)
    assert item.execution == "client"
    assert item.arguments == {"goal": "play a song"}
    assert item.call_id


async def test_client_mode_with_only_deferred_tools_still_sends_the_search_function(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", paths=["archive"]))
    deferred = {**CRM["tools"][1], "name": "archive_record"}  # type: ignore[index]
    result = await make().responses.create(
        model="m",
        input="Archive 7",
        tools=[{"type": "tool_search", "execution": "client"}, deferred],  # type: ignore[list-item]
    )
    (request,) = hostile.requests
    _no_dialect(request.body)
    assert request.tool_names == ["tool_search"]  # was []: the client's search was dropped
    (search,) = request.body["tools"]
    assert search["parameters"]["required"] == ["paths"]  # OpenAI's built-in client schema
    assert "archive_record" in request.body["instructions"]
    (item,) = result.output
    assert isinstance(item, ResponseToolSearchCall)
    assert item.arguments == {"paths": ["archive"]}


async def test_client_mode_without_function_tools_still_sends_the_search_function(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(text("Nothing to load."))
    await make().responses.create(
        model="m",
        input="Hi",
        tools=[{"type": "tool_search", "execution": "client"}],  # type: ignore[list-item]
    )
    (request,) = hostile.requests
    _no_dialect(request.body)
    assert request.tool_names == ["tool_search"]


async def test_client_mode_output_reaches_the_upstream_as_a_call_and_its_output(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", goal="play a song"), call("play_music", title="Blue"))
    client = make()
    tools = _client_tools()
    first = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=tools,  # type: ignore[arg-type]
    )
    (searched,) = first.output
    assert isinstance(searched, ResponseToolSearchCall)
    definition = next(t for t in tools if t.get("name") == "play_music")
    second = await client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "Play Blue"},
            searched,  # the SDK item as the client got it
            {
                "type": "tool_search_output",
                "execution": "client",
                "call_id": searched.call_id,
                "tools": [definition],
            },
        ],  # type: ignore[list-item]
        tools=tools,  # type: ignore[arg-type]
    )
    request = hostile.requests[1]
    _no_dialect(request.body)
    assert request.tool_names == ["get_weather", "send_email", "play_music", "tool_search"]
    kinds = [item.get("type", item.get("role")) for item in request.messages]
    assert kinds == ["user", "function_call", "function_call_output"]
    call_item = request.messages[1]
    assert call_item["name"] == "tool_search"
    assert call_item["call_id"] == searched.call_id
    assert json.loads(call_item["arguments"]) == {"goal": "play a song"}
    assert loaded(request.tool_outputs[0][1]) == ["play_music"]
    assert [item.type for item in second.output] == ["function_call"]


async def test_history_resending_the_search_items_loads_their_tools_from_round_one(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    member = f"crm{WIRE_DELIMITER}lookup"
    hostile.script(
        call("tool_search", query="select:play_music,crm.lookup"),
        call("play_music", title="Blue"),
        text("Playing."),
    )
    client = make()
    tools = native_tools()
    first = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=tools,  # type: ignore[arg-type]
    )
    played = first.output[-1]
    assert isinstance(played, ResponseFunctionToolCall)
    history: list[Any] = [
        {"role": "user", "content": "Play Blue"},
        *first.output,
        {"type": "function_call_output", "call_id": played.call_id, "output": "ok"},
    ]
    second = await client.responses.create(
        model="m",
        input=history,
        tools=tools,  # type: ignore[arg-type]
    )
    assert second.output_text == "Playing."
    assert len(hostile.requests) == 3  # no new search
    request = hostile.requests[2]
    _no_dialect(request.body)
    assert {"play_music", member} <= set(request.tool_names)
    kinds = [item.get("type", item.get("role")) for item in request.messages]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert request.messages[1]["name"] == "tool_search"
    assert loaded(request.messages[2]["output"]) == ["play_music", "crm.lookup"]
    assert [i.type for i in second.output] == ["message"]


async def test_an_openai_shaped_search_output_made_elsewhere_loads_its_tools(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    member = f"crm{WIRE_DELIMITER}lookup"
    hostile.script(call(member, id="c9"))
    client = make()
    made_elsewhere = {
        "type": "tool_search_output",
        "id": "tso_abc",
        "call_id": "call_abc",
        "execution": "server",
        "status": "completed",
        "tools": [{**CRM, "tools": [CRM["tools"][0]]}],  # type: ignore[index]
    }
    result = await client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "Look up 42"},
            made_elsewhere,
            {
                "type": "function_call",
                "call_id": "call_prev",
                "name": "lookup",
                "namespace": "crm",
                "arguments": '{"id":"41"}',
            },
            {"type": "function_call_output", "call_id": "call_prev", "output": "found 41"},
        ],  # type: ignore[list-item]
        tools=native_tools(),  # type: ignore[arg-type]
    )
    (request,) = hostile.requests
    _no_dialect(request.body)
    assert member in request.tool_names
    kinds = [item.get("type", item.get("role")) for item in request.messages]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert request.messages[1]["call_id"] == request.messages[2]["call_id"] == "call_abc"
    assert request.messages[3]["name"] == member
    calls = [item for item in result.output if isinstance(item, ResponseFunctionToolCall)]
    assert [(c.name, c.namespace) for c in calls] == [("lookup", "crm")]
    assert not any(isinstance(item, ResponseToolSearchOutputItem) for item in result.output)


async def test_client_mode_streamed(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", goal="play a song"))
    client = make()
    stream = await client.responses.create(
        model="m",
        input="Play Blue",
        tools=_client_tools(),  # type: ignore[arg-type]
        stream=True,
    )
    events = [event async for event in stream]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    added = [e.item for e in events if e.type == "response.output_item.added"]
    assert len(added) == 1
    assert isinstance(added[0], ResponseToolSearchCall)
    assert added[0].execution == "client"
    assert added[0].arguments == {"goal": "play a song"}
    final = events[-1]
    assert final.type == "response.completed"
    assert [item.type for item in final.response.output] == ["tool_search_call"]


async def test_a_definition_the_sdk_cannot_read_is_reported_by_name(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(call("tool_search", query="select:odd_tool"), text("ok"))
    client = make()
    odd = {
        "type": "function",
        "name": "odd_tool",
        "description": "An odd tool.",
        "parameters": {"type": "object"},
        "strict": "sometimes",  # not a boolean: the SDK's types refuse it
        "defer_loading": True,
    }
    result = await client.responses.create(
        model="m",
        input="odd",
        tools=[*native_tools(), odd],  # type: ignore[list-item]
    )
    found = [item for item in result.output if isinstance(item, ResponseToolSearchOutputItem)]
    assert [tool.name for tool in found[0].tools] == ["odd_tool"]  # type: ignore[union-attr]
    assert found[0].tools[0].description is None  # type: ignore[union-attr]  # bare: name only


async def test_a_lone_tool_search_tool_goes_upstream_made_ordinary(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(text("nothing to search"))
    client = make()
    result = await client.responses.create(
        model="m",
        input="Hi",
        tools=[{"type": "tool_search"}],  # type: ignore[list-item]
    )
    assert result.output_text == "nothing to search"
    (request,) = hostile.requests
    _no_dialect(request.body)
    assert request.body["tools"] == []


async def test_malformed_dialect_parts_never_reach_the_upstream_or_crash(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    hostile.script(text("ok"))
    client = make()
    tools: list[Any] = [
        *native_tools(),
        {"type": "namespace", "name": "broken", "tools": "not a list"},
        {"type": "namespace", "tools": []},
        {"type": "function", "defer_loading": "yes", "name": "maybe_deferred"},
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "http://127.0.0.1:9/mcp",
            "defer_loading": True,
        },
    ]
    result = await client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "hi"},
            {"type": "tool_search_call", "arguments": {"query": "x"}},  # no ids, no output
            {"type": "tool_search_output", "tools": ["junk", {"type": "namespace"}]},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "namespace": 7,
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],  # type: ignore[list-item]
        tools=tools,
    )
    assert result.output_text == "ok"
    (request,) = hostile.requests
    _no_dialect(request.body)
    # A defer_loading that is not true defers nothing: the tool is loaded from round 1.
    assert "maybe_deferred" in request.tool_names
    # A hosted tool marked deferred is the backend's to run: sent, without the key.
    hosted = [t for t in request.body["tools"] if t.get("type") == "mcp"]
    assert hosted == [
        {"type": "mcp", "server_label": "docs", "server_url": "http://127.0.0.1:9/mcp"}
    ]
    kinds = [item.get("type", item.get("role")) for item in request.messages]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    search, output = request.messages[1], request.messages[2]
    assert search["call_id"] == output["call_id"]
    assert loaded(output["output"]) == []


async def test_client_mode_loads_a_namespace_group_the_client_found(
    hostile: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    member = f"crm{WIRE_DELIMITER}lookup"
    hostile.script(call(member, id="c2"))
    client = make()
    group = {**CRM, "tools": [CRM["tools"][0]]}  # type: ignore[index]
    result = await client.responses.create(
        model="m",
        input=[
            {"role": "user", "content": "Find 42"},
            {
                "type": "tool_search_call",
                "call_id": "cs1",
                "execution": "client",
                "arguments": {"goal": "crm"},
            },
            {
                "type": "tool_search_output",
                "call_id": "cs1",
                "execution": "client",
                "tools": [group],
            },
        ],  # type: ignore[list-item]
        tools=_client_tools(),  # type: ignore[arg-type]
    )
    (request,) = hostile.requests
    _no_dialect(request.body)
    assert member in request.tool_names
    assert f"crm{WIRE_DELIMITER}archive" not in request.tool_names  # still held by the client
    assert loaded(request.tool_outputs[0][1]) == ["crm.lookup"]
    calls = [item for item in result.output if isinstance(item, ResponseFunctionToolCall)]
    assert [(c.name, c.namespace) for c in calls] == [("lookup", "crm")]
