"""The wrapped client's ``chat.completions.create`` against the scripted server, over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._protocol.messages import LOADED_THIS_ROUND, NOT_LOADED_YET, no_such_tool
from bot_toolsearch._transports.wire import wire_message
from bot_toolsearch._wrap.chat import HIDDEN_CALLS_KEPT, ChatPlan, _calls, _plain
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, error, text

from ._tools import chat_tools, directory_for, loaded

SETTINGS = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "Weather in Oslo?"}


@pytest.fixture
async def make(server: ScriptedOpenAIServer) -> AsyncIterator[Callable[..., openai.AsyncOpenAI]]:
    """Wrapped clients of ``server``, closed at teardown."""
    made: list[openai.AsyncOpenAI] = []

    def factory(**kwargs: Any) -> openai.AsyncOpenAI:
        inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        made.append(wrap_openai(inner, **kwargs))
        return made[-1]

    yield factory
    for client in made:
        await client.close()


def _assistant(completion: Any) -> dict[str, Any]:
    message = completion.choices[0].message
    return message.model_dump(exclude_none=True)


async def test_search_then_call_then_reply_across_two_calls(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    tools = chat_tools()
    server.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), usage=Usage(100, 5, 0)),
        ToolCallsTurn((call("get_weather", city="Oslo"),), usage=Usage(120, 7, 90)),
        text("Sunny in Oslo."),
    )
    client = make()
    messages: list[dict[str, Any]] = [SYSTEM, USER]
    first = await client.chat.completions.create(model="m", messages=messages, tools=tools)

    calls = first.choices[0].message.tool_calls
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        ("get_weather", '{"city":"Oslo"}')
    ]
    assert first.choices[0].finish_reason == "tool_calls"
    usage = first.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (220, 12, 232)
    assert usage.prompt_tokens_details.cached_tokens == 90
    search, after = server.requests
    assert search.tool_names == ["tool_search"]
    assert after.tool_names == ["tool_search", "get_weather"]
    names = sorted(t["function"]["name"] for t in tools)
    assert search.messages[0] == SYSTEM
    assert search.messages[1] == {"role": "system", "content": directory_for(names)}
    assert loaded(after.tool_outputs[0][1]) == ["get_weather"]
    # The caller's schema goes upstream as the caller wrote it.
    assert after.body["tools"][1] == tools[0]

    messages += [_assistant(first), {"role": "tool", "tool_call_id": calls[0].id, "content": "9C"}]
    second = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert second.choices[0].message.content == "Sunny in Oslo."
    reply = server.requests[2]
    # Loaded again from the resent history: the same tool list, the same directory bytes.
    assert reply.tool_names == ["tool_search", "get_weather"]
    assert reply.messages[1] == search.messages[1]
    assert [m["role"] for m in reply.messages] == ["system", "system", "user", "assistant", "tool"]


async def test_unloaded_and_same_round_calls_are_refused_and_retried(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
) -> None:
    server.script(
        call("send_email", to="a@b.c", body="hi"),
        [call("tool_search", query="select:send_email"), call("send_email", to="a", body="b")],
        call("send_email", to="a@b.c", body="hi"),
    )
    client = make()
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert [c.function.name for c in result.choices[0].message.tool_calls] == ["send_email"]
    first, second, third = server.requests
    assert first.tool_names == second.tool_names == ["tool_search"]
    assert third.tool_names == ["tool_search", "send_email"]
    assert second.tool_outputs[-1][1] == NOT_LOADED_YET.format(name="send_email")
    outputs = dict(third.tool_outputs)
    assert outputs[third.tool_outputs[-1][0]] == LOADED_THIS_ROUND.format(name="send_email")


async def test_request_without_tools_passes_through_untouched(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
) -> None:
    server.script(text("hello"))
    client = make()
    result = await client.chat.completions.create(model="m", messages=[USER])
    assert result.choices[0].message.content == "hello"
    assert server.requests[0].body == {"model": "m", "messages": [USER]}


async def test_caller_tool_named_tool_search_is_skipped_and_the_rest_stays_searchable(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = [*chat_tools(), chat_tools(1)[0] | {"function": {"name": "tool_search"}}]
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        call("tool_search", query="weather"),
        text("done"),
    )
    client = make()
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        first = await client.chat.completions.create(model="m", messages=[USER], tools=tools)
        await client.chat.completions.create(model="m", messages=[USER], tools=tools)
    assert [c.function.name for c in first.choices[0].message.tool_calls] == ["get_weather"]
    search, after, again, reply = server.requests
    # The virtual tool_search takes the name; the caller's own is never sent upstream.
    assert search.tool_names == again.tool_names == ["tool_search"]
    assert loaded(reply.tool_outputs[-1][1]) == ["get_weather"]
    assert search.body["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assert after.tool_names == ["tool_search", "get_weather"]
    assert loaded(after.tool_outputs[0][1]) == ["get_weather"]
    # One summary warning for the one tool list (the list is indexed once).
    warnings = [r.getMessage() for r in caplog.records if "reserved" in r.getMessage()]
    assert len(warnings) == 1
    assert "'tool_search'" in warnings[0]


@pytest.mark.parametrize("deny", [["get_weather"], ["tool_search"]])
async def test_with_tool_search_off_and_a_deny_the_callers_tool_search_is_an_ordinary_tool(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
    caplog: pytest.LogCaptureFixture,
    deny: list[str],
) -> None:
    # With a deny the wrapper rewrites the list even with tool search off: the caller's own
    # tool_search stays in its place and its call reaches the caller, unless denied too.
    own = chat_tools(1)[0] | {"function": {"name": "tool_search", "parameters": {}}}
    tools = [chat_tools()[0], own, *chat_tools()[1:]]
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": False}, "tools": {"deny": deny}}
    )
    server.script(call("tool_search", q="x"))
    if "tool_search" in deny:
        server.script(text("ok"))  # after the refusal, the wrapper asks again
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        completion = await make(settings=settings).chat.completions.create(
            model="m", messages=[USER], tools=tools
        )
    permitted = [t["function"]["name"] for t in tools if t["function"]["name"] not in deny]
    assert server.requests[0].tool_names == permitted
    calls = completion.choices[0].message.tool_calls or []
    if "tool_search" in deny:  # refused as no such tool, as any denied tool is
        assert not calls
        assert server.requests[-1].tool_outputs[-1][1] == no_such_tool("tool_search")
    else:
        assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
            ("tool_search", {"q": "x"})
        ]
    assert not [r for r in caplog.records if "(1 reserved)" in r.getMessage()]


async def test_upstream_errors_raise_the_sdk_exception(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    server.script(call("tool_search", query="weather"), error(429, "slow down", code="rate"))
    client = make()
    with pytest.raises(openai.RateLimitError, match="slow down") as caught:
        await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert caught.value.status_code == 429


async def test_deny_hides_tools_and_refuses_them_as_unknown(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "tools": {"deny": ["send_*"]}}
    )
    server.script(call("send_email", to="x", body="y"), text("cannot"))
    client = make(settings=settings)
    await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    directory = server.requests[0].messages[0]["content"]
    assert "send_email" not in directory
    assert "get_weather" in directory
    assert server.requests[1].tool_outputs[0][1] == no_such_tool("send_email")


async def test_dotted_names_are_encoded_upstream_and_decoded_back(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
) -> None:
    tools = chat_tools()
    tools[0] = {**tools[0], "function": {**tools[0]["function"], "name": "weather.now"}}
    server.script(call("tool_search", query="select:weather-_-now"), call("weather-_-now"))
    server.script(text("done"))
    client = make()
    first = await client.chat.completions.create(model="m", messages=[USER], tools=tools)
    returned = first.choices[0].message.tool_calls[0]
    assert returned.function.name == "weather.now"
    assert server.requests[1].tool_names == ["tool_search", "weather-_-now"]
    history = [
        USER,
        _assistant(first),
        {"role": "tool", "tool_call_id": returned.id, "content": "ok"},
    ]
    await client.chat.completions.create(model="m", messages=history, tools=tools)
    sent = server.requests[2]
    assert sent.messages[2]["tool_calls"][0]["function"]["name"] == "weather-_-now"
    assert sent.tool_names == ["tool_search", "weather-_-now"]


async def test_text_tool_calls_are_recovered(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    envelope = json.dumps({"name": "tool_search", "arguments": {"query": "select:play_music"}})
    server.script(text(envelope), text('{"name": "play_music", "arguments": {"title": "x"}}'))
    client = make()
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    message = result.choices[0].message
    assert message.content is None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("play_music", {"title": "x"})
    ]
    assert server.requests[1].tool_names == ["tool_search", "play_music"]


async def test_max_rounds_bounds_hidden_rounds(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "model": {"max_rounds": 2}}
    )
    server.script(call("tool_search", query="weather"), call("tool_search", query="email"))
    client = make(settings=settings)
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    choice = result.choices[0]
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert len(server.requests) == 2


async def test_malformed_and_duplicate_tools_are_skipped_with_a_warning(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools: list[Any] = [*chat_tools(), chat_tools()[0], {"type": "function"}, {"function": 3}]
    server.script(call("tool_search", query="select:get_weather"), text("ok"))
    client = make()
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        await client.chat.completions.create(model="m", messages=[USER], tools=tools)
    assert server.requests[1].tool_names == ["tool_search", "get_weather"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # One summary line for the build, naming the entries (issue 20).
    [summary] = [w for w in warnings if w.startswith("tool catalog:")]
    assert "skipping 3 of 73 entries (1 duplicate, 2 malformed)" in summary
    assert "entry 70 ('get_weather'): duplicate name" in summary
    assert "entry 71: no 'function' mapping" in summary


def test_sync_client_does_the_same(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    inner = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner, settings=SETTINGS)
    assert isinstance(client, openai.OpenAI)
    result = client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert result.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert server.requests[1].tool_names == ["tool_search", "get_weather"]
    assert client.models.list().data[0].id == "scripted-model"
    client.close()


def _collect(chunks: list[Any]) -> tuple[str, list[tuple[str, str, str]], list[str | None]]:
    content = ""
    calls: dict[int, list[str]] = {}
    finishes: list[str | None] = []
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or ():
                entry = calls.setdefault(delta.index, ["", "", ""])
                entry[0] += delta.id or ""
                entry[1] += delta.function.name or ""
                entry[2] += delta.function.arguments or ""
            if choice.finish_reason is not None:
                finishes.append(choice.finish_reason)
    return content, [tuple(calls[i]) for i in sorted(calls)], finishes  # type: ignore[misc]


async def test_streaming_hides_search_rounds_and_sums_usage(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), usage=Usage(50, 5)),
        ToolCallsTurn((call("get_weather", city="Oslo", id="w1"),), usage=Usage(60, 6)),
    )
    client = make()
    stream = await client.chat.completions.create(
        model="m",
        messages=[USER],
        tools=chat_tools(),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    content, calls, finishes = _collect(chunks)
    assert calls == [("w1", "get_weather", '{"city":"Oslo"}')]
    assert finishes == ["tool_calls"]
    assert content == ""
    assert len({chunk.id for chunk in chunks}) == 1
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert (usage.prompt_tokens, usage.completion_tokens) == (110, 11)
    assert [r.tool_names for r in server.requests] == [
        ["tool_search"],
        ["tool_search", "get_weather"],
    ]


async def test_streaming_text_passes_through(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    server.script(call("tool_search", query="weather"), text("Sunny in Oslo."))
    client = make()
    stream = await client.chat.completions.create(
        model="m", messages=[USER], tools=chat_tools(), stream=True
    )
    async with stream:
        chunks = [chunk async for chunk in stream]
    content, calls, finishes = _collect(chunks)
    assert (content, calls, finishes) == ("Sunny in Oslo.", [], ["stop"])
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.role) == 1
    assert all(c.usage is None for c in chunks)


def test_sync_streaming(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:play_music"), call("play_music", title="x"))
    inner = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    client = wrap_openai(inner)
    stream = client.chat.completions.create(
        model="m", messages=[USER], tools=chat_tools(), stream=True
    )
    _, calls, finishes = _collect(list(stream))
    assert [c[1] for c in calls] == ["play_music"]
    assert finishes == ["tool_calls"]
    client.close()


async def test_the_directory_budget_groups_the_wrappers_directory_as_the_bots(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    from bot_toolsearch.core import GROUPED_DIRECTORY_RULES, ToolCatalog, ToolSearchSession

    tools = chat_tools()
    budget = 60  # far below the names list: the directory must be grouped by namespace
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_directory_budget": budget}}
    )
    server.script(text("Hello."))
    await make(settings=settings).chat.completions.create(
        model="m", messages=[SYSTEM, USER], tools=tools
    )
    sent = server.requests[0].messages[1]["content"]
    expected = ToolSearchSession(ToolCatalog(tools), directory_budget=budget).directory
    assert expected.grouped
    assert sent.startswith(expected.text + "\n\n")
    assert sent.endswith(GROUPED_DIRECTORY_RULES)


async def test_a_directory_of_dotted_tools_holds_the_budget_as_sent(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    from bot_toolsearch._core.directory import CLOSE, OPEN, count_tokens

    # 1,000 dotted tools: encoded in ``tools``, but the directory lists the canonical
    # spelling, the one its budget counted (the MCP door, whose model reads only wire names,
    # writes and counts those instead).
    tools = [
        {"type": "function", "function": {"name": f"solo_{i}.lookup_{i}", "parameters": {}}}
        for i in range(1000)
    ]
    server.script(text("Hello."))
    await make(settings=SETTINGS).chat.completions.create(model="m", messages=[USER], tools=tools)
    sent = server.requests[0].messages[0]["content"]
    block = sent[: sent.index(CLOSE) + len(CLOSE)]
    assert block.startswith(OPEN)
    assert count_tokens(block) <= 4000
    assert "solo_0.lookup_0" in block.splitlines()


async def test_sdk_message_objects_in_the_history_count_as_called(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    """``messages.append(completion.choices[0].message)``: the SDK object, not a dict."""
    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("ok"),
    )
    client = make(settings=SETTINGS)
    tools = chat_tools()
    messages: list[Any] = [USER]
    first = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    message = first.choices[0].message
    messages += [
        message,
        {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "x"},
    ]
    await client.chat.completions.create(model="m", messages=messages, tools=tools)
    assert server.requests[-1].tool_names == ["tool_search", "get_weather"]
    resent = [m for m in server.requests[-1].messages if m.get("role") == "assistant"]
    assert resent[-1]["tool_calls"][0]["function"]["name"] == "get_weather"


async def test_a_reply_of_thousands_of_refused_calls_logs_one_summary_line(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
    caplog: pytest.LogCaptureFixture,
) -> None:
    unknown = [call(f"no_such_{i}", id=f"n{i}") for i in range(1500)]
    refused = [call("get_weather", id="w"), *unknown]
    server.script(refused, text("cannot"))
    client = make(settings=SETTINGS)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        reply = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert reply.choices[0].message.content == "cannot"
    # Issue 27: the next request keeps only the first HIDDEN_CALLS_KEPT calls and results.
    assert len(server.requests[1].tool_outputs) == HIDDEN_CALLS_KEPT
    lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert lines == [
        "refused 1501 call(s) to unknown or unloaded tools (1 not_loaded, 1500 unknown): "
        "get_weather, no_such_0, no_such_1 and 1498 more"
    ]


def _dotted(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": "A dotted tool.", "parameters": {}},
    }


def test_history_messages_without_calls_are_sent_as_the_general_path_makes_them() -> None:
    engine = Engine(settings=SETTINGS)
    tools = [*chat_tools(), _dotted("weather.forecast")]
    call_message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather.forecast", "arguments": "{}"},
            }
        ],
    }
    no_calls = [SYSTEM, USER, {"role": "assistant", "content": "Which city?"}, USER]
    empty_calls = {"role": "assistant", "content": "Hm.", "tool_calls": []}
    history = [
        *no_calls,
        empty_calls,
        call_message,
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
    ]
    plan = engine.chat_plan({"model": "m", "messages": history, "tools": tools})
    assert isinstance(plan, ChatPlan)
    view = plan._setup.projection.view
    assert not view.plain  # the general path renames calls: ``weather.forecast`` is spelled
    sent = [m for m in plan.messages if m is not plan.messages[1]]  # the directory left out
    assert len(sent) == len(history)
    for original, out in zip(history, sent, strict=True):
        general = wire_message(_plain(original), view.names, view.entries)
        assert out == general
        if original in no_calls or original.get("role") == "tool":
            assert out is original  # the general path hands the very message on, too
            assert general is original
            assert _calls(_plain(original)) == []
    assert sent[4] is not empty_calls  # a ``tool_calls`` key takes the general path
    assert sent[5]["tool_calls"][0]["function"]["name"] != "weather.forecast"
    assert plan._setup.projection.protocol.session.loaded_tool_names == {"weather.forecast"}
