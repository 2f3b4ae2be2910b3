"""`wrap_anthropic`: the real ``anthropic`` SDK client, async and sync, with tool search on a
strict Anthropic-compatible scripted backend (no tool search of its own)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import anthropic
import pytest
from anthropic.types import Message, ServerToolUseBlock, ToolSearchToolResultBlock, ToolUseBlock
from pydantic import BaseModel

from bot_toolsearch import BotSettings, UnsupportedCallError, wrap_anthropic
from bot_toolsearch._config.settings import SkillsSettings
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch.testing import (
    ScriptedOpenAIServer,
    ToolCall,
    ToolCallsTurn,
    Usage,
    call,
    text,
)
from tests.conformance.messages.test_streams import HEAD, events, held_upstream

from ._raw_upstream import RawUpstream

SETTINGS = BotSettings(skills=SkillsSettings(tool_search_enabled=True))
TOOLS = [
    {"name": "reply", "description": "Reply to the user.", "input_schema": {"type": "object"}},
    {
        "name": "get_weather",
        "description": "Weather forecast for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "defer_loading": True,
    },
    {
        "name": "play_music",
        "description": "Play a song.",
        "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}},
        "defer_loading": True,
    },
    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
]
ASK = [{"role": "user", "content": "Weather in Oslo?"}]


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()


def _root(server: ScriptedOpenAIServer) -> str:
    return server.base_url.removesuffix("/v1")


async def test_async_create_searches_in_hidden_rounds(strict: ScriptedOpenAIServer) -> None:
    strict.script(call("tool_search", query="weather"), call("get_weather", city="Oslo"))
    rounds: list[RoundTrace] = []
    async with anthropic.AsyncAnthropic(
        base_url=_root(strict), api_key="k", max_retries=0
    ) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS, on_round=rounds.append)
        reply = await client.messages.create(model="m", max_tokens=50, messages=ASK, tools=TOOLS)
    assert isinstance(reply, Message)
    assert [type(b) for b in reply.content] == [
        ServerToolUseBlock,
        ToolSearchToolResultBlock,
        ToolUseBlock,
    ]
    assert [r.hidden for r in rounds] == [True, False]
    for request in strict.requests:
        assert "defer_loading" not in json.dumps(request.body)
    assert "get_weather" in strict.requests[1].tool_names


def test_sync_create_and_resent_reply(strict: ScriptedOpenAIServer) -> None:
    strict.script(call("tool_search", query="weather"), call("get_weather", city="Oslo"))
    with anthropic.Anthropic(base_url=_root(strict), api_key="k", max_retries=0) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        reply = client.messages.create(model="m", max_tokens=50, messages=ASK, tools=TOOLS)
        use = reply.content[-1]
        assert isinstance(use, ToolUseBlock)
        strict.script(text("Sunny."))
        history = [
            *ASK,
            {"role": "assistant", "content": reply.content},  # the SDK's own blocks, resent
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "20C"}],
            },
        ]
        again = client.messages.create(model="m", max_tokens=50, messages=history, tools=TOOLS)
    assert again.content[0].type == "text"
    assert "get_weather" in strict.requests[-1].tool_names


def test_sync_stream_final_message_equals_the_plain_one(strict: ScriptedOpenAIServer) -> None:
    turns = (
        ToolCallsTurn((ToolCall("tool_search", {"query": "weather"}),), usage=Usage(10, 0, 3)),
        ToolCallsTurn(
            (ToolCall("get_weather", {"city": "Oslo"}, "t"),), text="On it.", usage=Usage(20, 0, 4)
        ),
    )
    strict.script(*turns)
    with anthropic.Anthropic(base_url=_root(strict), api_key="k", max_retries=0) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        plain = client.messages.create(model="m", max_tokens=50, messages=ASK, tools=TOOLS)
        strict.reset()
        strict.script(*turns)
        with client.messages.stream(model="m", max_tokens=50, messages=ASK, tools=TOOLS) as stream:
            kinds = [event.type for event in stream]
            streamed = stream.get_final_message()
    assert kinds.count("message_start") == 1
    assert kinds[-1] == "message_stop"
    assert streamed.model_dump(exclude={"id"}) == plain.model_dump(exclude={"id"})
    assert [b.type for b in streamed.content] == [
        "server_tool_use",
        "tool_search_tool_result",
        "text",
        "tool_use",
    ]
    assert streamed.usage.input_tokens == 30
    for request in strict.requests:
        assert request.body.get("stream") is True
        assert "defer_loading" not in json.dumps(request.body)


async def test_async_create_stream_yields_the_sdks_typed_events(
    strict: ScriptedOpenAIServer,
) -> None:
    strict.script(call("tool_search", query="weather"), text("Sunny."))
    async with anthropic.AsyncAnthropic(
        base_url=_root(strict), api_key="k", max_retries=0
    ) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        stream = await client.messages.create(
            model="m", max_tokens=50, messages=ASK, tools=TOOLS, stream=True
        )
        async with stream:
            events = [event async for event in stream]
    assert all(isinstance(e, BaseModel) for e in events)
    assert events[0].type == "message_start"
    texts = [
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    ]
    assert texts == ["Sunny."]
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["server_tool_use", "tool_search_tool_result", "text"]
    assert [e.index for e in events if e.type == "content_block_start"] == [0, 1, 2]


async def test_async_stream_helper_gets_the_last_rounds_text_as_it_comes() -> None:
    gate = threading.Event()
    with RawUpstream() as upstream:
        held_upstream(upstream, gate)
        async with anthropic.AsyncAnthropic(
            base_url=upstream.base_url.removesuffix("/v1"), api_key="k", max_retries=0
        ) as inner:
            client = wrap_anthropic(inner, settings=SETTINGS)
            async with client.messages.stream(
                model="m", max_tokens=50, messages=ASK, tools=TOOLS
            ) as stream:
                early = None
                async for event in stream:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        early = not gate.is_set() if early is None else early
                        gate.set()
                final = await stream.get_final_message()
    assert early  # the first text delta came while the upstream held its stream's end
    assert final.id == "msg_a"
    assert [b.type for b in final.content] == ["server_tool_use", "tool_search_tool_result", "text"]
    assert final.usage.input_tokens == 200


def test_sync_stream_the_upstream_cuts_raises() -> None:
    with RawUpstream() as upstream:
        upstream.stream(events(*HEAD))  # closed after the first delta
        with anthropic.Anthropic(
            base_url=upstream.base_url.removesuffix("/v1"), api_key="k", max_retries=0
        ) as inner:
            client = wrap_anthropic(inner, settings=SETTINGS)
            stream = client.messages.create(
                model="m", max_tokens=50, messages=ASK, tools=TOOLS, stream=True
            )
            with pytest.raises(anthropic.APIConnectionError, match="message_stop"):
                list(stream)


def test_a_stream_with_nothing_to_search_is_the_sdks_own(strict: ScriptedOpenAIServer) -> None:
    strict.script(text("hi"))
    with anthropic.Anthropic(base_url=_root(strict), api_key="k", max_retries=0) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        stream = client.messages.create(model="m", max_tokens=5, messages=ASK, stream=True)
        assert isinstance(stream, anthropic.Stream)
        with stream:
            kinds = [event.type for event in stream]
    assert kinds[0] == "message_start"
    assert strict.requests[0].body["stream"] is True


def test_stream_output_format_is_refused_before_sending(strict: ScriptedOpenAIServer) -> None:
    with anthropic.Anthropic(base_url=_root(strict), api_key="k", max_retries=0) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        with (
            pytest.raises(UnsupportedCallError),
            client.messages.stream(
                model="m", max_tokens=5, messages=ASK, tools=TOOLS, output_format=dict
            ),
        ):
            pass
    assert strict.requests == []


def test_not_a_client() -> None:
    with pytest.raises(TypeError):
        wrap_anthropic(object(), settings=SETTINGS)
