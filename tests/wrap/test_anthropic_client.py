"""`wrap_anthropic`: the real ``anthropic`` SDK client, async and sync, with tool search on a
strict Anthropic-compatible scripted backend (no tool search of its own)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import pytest
from anthropic.types import Message, ServerToolUseBlock, ToolSearchToolResultBlock, ToolUseBlock

from bot_toolsearch import BotSettings, UnsupportedCallError, wrap_anthropic
from bot_toolsearch._config.settings import SkillsSettings
from bot_toolsearch._protocol.trace import RoundTrace
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

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


def test_stream_is_refused_not_sent_without_search(strict: ScriptedOpenAIServer) -> None:
    with anthropic.Anthropic(base_url=_root(strict), api_key="k", max_retries=0) as inner:
        client = wrap_anthropic(inner, settings=SETTINGS)
        with pytest.raises(UnsupportedCallError):
            client.messages.create(model="m", max_tokens=5, messages=ASK, tools=TOOLS, stream=True)
    assert strict.requests == []


def test_not_a_client() -> None:
    with pytest.raises(TypeError):
        wrap_anthropic(object(), settings=SETTINGS)
