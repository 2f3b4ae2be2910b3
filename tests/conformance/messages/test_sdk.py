"""The real ``anthropic`` SDK through ``serve``'s ``POST /v1/messages`` against a strict
Anthropic-compatible upstream: Anthropic's tool search (both variants), client-run search,
config-driven search, streaming, ``deny``, and what reaches the upstream."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import (
    Message,
    ServerToolUseBlock,
    TextBlock,
    ToolSearchToolResultBlock,
    ToolUseBlock,
)

from bot_toolsearch.testing import (
    ModelRequest,
    ScriptedOpenAIServer,
    ToolCall,
    ToolCallsTurn,
    Usage,
    call,
    error,
    text,
)

MODEL = "claude-test"


def tool(name: str, description: str, *, deferred: bool = False, **params: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
        "required": list(params),
    }
    out: dict[str, Any] = {"name": name, "description": description, "input_schema": schema}
    if deferred:
        out["defer_loading"] = True
    return out


def catalog(*, deferred: bool = True) -> list[dict[str, Any]]:
    return [
        tool("send_message", "Send a message to the user.", text="The text."),
        tool("get_weather", "Weather forecast for a city.", deferred=deferred, city="City"),
        tool("weather_alerts", "Severe weather alerts.", deferred=deferred, region="Region"),
        tool("send_email", "Send an email.", deferred=deferred, to="To", body="Body"),
        tool("play_music", "Play a song.", deferred=deferred, title="Title"),
    ]


BM25 = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
REGEX = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
ASK = [{"role": "user", "content": "Weather in Oslo?"}]


def upstream_clean(request: ModelRequest) -> None:
    """Nothing of Anthropic's tool search reached the upstream."""
    raw = json.dumps(request.body)
    for word in ("defer_loading", "tool_reference", "tool_search_tool", "server_tool_use"):
        assert word not in raw, word


async def test_bm25_search_answered_in_hidden_rounds(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(
        call("tool_search", query="weather forecast"),
        call("get_weather", id="toolu_w", city="Oslo"),
    )
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
    )
    assert isinstance(reply, Message)
    kinds = [type(b) for b in reply.content]
    assert kinds == [ServerToolUseBlock, ToolSearchToolResultBlock, ToolUseBlock]
    search, result, use = reply.content
    assert isinstance(search, ServerToolUseBlock)
    assert search.name == "tool_search_tool_bm25"
    assert search.input == {"query": "weather forecast"}
    assert isinstance(result, ToolSearchToolResultBlock)
    assert result.tool_use_id == search.id
    names = [r.tool_name for r in result.content.tool_references]  # type: ignore[union-attr]
    assert "get_weather" in names
    assert isinstance(use, ToolUseBlock)
    assert use.name == "get_weather"
    assert use.input == {"city": "Oslo"}
    assert reply.stop_reason == "tool_use"
    first, second = strict.requests
    for request in strict.requests:
        upstream_clean(request)
    assert first.tool_names == ["send_message", "tool_search"]
    assert second.tool_names[:2] == ["send_message", "tool_search"]
    assert "get_weather" in second.tool_names[2:]
    assert "<available_deferred_tools>" in first.system_texts[-1]


async def test_usage_summed_and_one_id(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(
        ToolCallsTurn((ToolCall("tool_search", {"query": "email"}),), usage=Usage(100, 7, 40)),
        text("Done.", usage=Usage(150, 5, 90)),
    )
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
    )
    assert reply.usage.input_tokens == 250
    assert reply.usage.output_tokens == 12
    assert reply.usage.cache_read_input_tokens == 130
    assert reply.id == "msg_1"
    assert reply.stop_reason == "end_turn"
    assert isinstance(reply.content[-1], TextBlock)
    assert reply.content[-1].text == "Done."


async def test_regex_variant_loads_the_pattern_matches(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(call("tool_search", query="^send_.*"), text("ok"))
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), REGEX]
    )
    search, result, answer = reply.content
    assert isinstance(search, ServerToolUseBlock)
    assert search.name == "tool_search_tool_regex"
    assert search.input == {"query": "^send_.*"}
    assert isinstance(result, ToolSearchToolResultBlock)
    names = [r.tool_name for r in result.content.tool_references]  # type: ignore[union-attr]
    assert names == ["send_email"]  # send_message is not deferred: loaded already
    assert strict.requests[1].tool_names[-1] == "send_email"
    assert isinstance(answer, TextBlock)


async def test_resent_search_blocks_load_from_round_one(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(call("tool_search", query="weather forecast"), call("get_weather", city="Oslo"))
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
    )
    use = reply.content[-1]
    assert isinstance(use, ToolUseBlock)
    history: list[Any] = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}],
        },
    ]
    strict.script(text("Sunny in Oslo."))
    again = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=history, tools=[*catalog(), BM25]
    )
    assert again.content == [TextBlock(type="text", text="Sunny in Oslo.", citations=None)]
    last = strict.requests[-1]
    upstream_clean(last)
    assert "get_weather" in last.tool_names  # loaded from round 1, no new search
    assert last.tool_outputs == [(use.id, "Sunny")]


async def test_client_run_search_tool_reference_loads(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    own = tool("find_tools", "Search the tools.", query="Query")
    history: list[Any] = [
        *ASK,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_s", "name": "find_tools", "input": {"query": "x"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_s",
                    "content": [{"type": "tool_reference", "tool_name": "play_music"}],
                }
            ],
        },
    ]
    strict.script(call("play_music", title="Song"))
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=history, tools=[*catalog(), own, BM25]
    )
    assert isinstance(reply.content[0], ToolUseBlock)
    assert reply.content[0].name == "play_music"
    request = strict.requests[0]
    upstream_clean(request)
    assert "play_music" in request.tool_names
    assert "play_music" in request.tool_outputs[0][1]


async def test_config_driven_search_without_search_tool(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(call("tool_search", query="select:play_music"), call("play_music", title="X"))
    reply = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=catalog(deferred=False)
    )
    assert [type(b) for b in reply.content] == [ToolUseBlock]  # the search stays hidden
    first, second = strict.requests
    assert len(first.tool_names) < len(catalog())  # the config deferred some
    assert "play_music" in second.tool_names


async def test_stream_final_message_equals_the_plain_one(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    turns = (
        ToolCallsTurn(
            (ToolCall("tool_search", {"query": "weather forecast"}),),
            text="Let me look.",
            usage=Usage(100, 7, 40),
        ),
        ToolCallsTurn(
            (ToolCall("get_weather", {"city": "Oslo"}, "t"),),
            text="Checking Oslo.",
            usage=Usage(150, 5, 90),
        ),
    )
    strict.script(*turns)
    plain = await claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
    )
    strict.reset()
    strict.script(*turns)
    async with claude.messages.stream(
        model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
    ) as stream:
        kinds = [event.type async for event in stream]
        streamed = await stream.get_final_message()
    assert kinds[0] == "message_start"
    assert kinds.count("message_start") == 1  # one message across the hidden round
    assert kinds[-1] == "message_stop"
    assert streamed.model_dump(exclude={"id"}) == plain.model_dump(exclude={"id"})
    assert streamed.id == "msg_1"  # the first round's id
    assert [b.type for b in streamed.content] == [
        "text",
        "server_tool_use",
        "tool_search_tool_result",
        "text",
        "tool_use",
    ]
    assert streamed.usage.input_tokens == 250
    assert streamed.usage.output_tokens == 12
    for request in strict.requests:
        assert request.body.get("stream") is True  # each round streamed
        upstream_clean(request)


async def test_stream_failure_after_start_is_an_error_event(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(call("tool_search", query="weather"), error(500, "boom"))

    async def consume() -> list[str]:
        async with claude.messages.stream(
            model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
        ) as stream:
            return [event.type async for event in stream]

    with pytest.raises(anthropic.APIStatusError, match="upstream failed"):
        await consume()


async def test_upstream_4xx_comes_back_as_is(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(error(401, "invalid x-api-key", type="authentication_error"))
    with pytest.raises(anthropic.AuthenticationError) as caught:
        await claude.messages.create(
            model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
        )
    assert "invalid x-api-key" in str(caught.value)


async def test_headers_reach_the_upstream(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(text("hi"))
    await claude.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=ASK,
        tools=[*catalog(), BM25],
        extra_headers={"anthropic-beta": "advanced-tool-use-2025-11-20,other-2025-01-01"},
    )
    headers = strict.requests[0].headers
    # The SDK sends its key as x-api-key or as a bearer token, by version: either goes on.
    assert "sk-ant-test" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])
    assert headers["anthropic-version"]
    assert headers["anthropic-beta"] == "other-2025-01-01"


async def test_plain_request_passes_through_made_ordinary(
    strict: ScriptedOpenAIServer, proxy_root: str
) -> None:
    strict.script(text("hi"))
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{proxy_root}/v1/messages",
            json={"model": MODEL, "max_tokens": 10, "messages": ASK},
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 200
    assert response.json()["content"] == [{"type": "text", "text": "hi"}]


async def test_plain_stream_is_relayed(
    strict: ScriptedOpenAIServer, claude: anthropic.AsyncAnthropic
) -> None:
    strict.script(text("hi there"))
    async with claude.messages.stream(model=MODEL, max_tokens=10, messages=ASK) as stream:
        final = await stream.get_final_message()
    assert [(b.type, getattr(b, "text", None)) for b in final.content] == [("text", "hi there")]
    assert strict.requests[0].body["stream"] is True  # relayed as the upstream streams it
