"""``[tools] allow``/``deny`` hold for every spelling of a tool a request can use (issue 27).

A raw socket upstream on 127.0.0.1 records the bodies the real ``openai`` SDK sends. Before,
with ``deny = ["admin.*"]``, ``admin.wipe`` reached the upstream through the legacy
``functions``/``function_call`` fields, a Responses ``custom`` tool and ``tool_choice``.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, ToolNotPermittedError, wrap_openai
from bot_toolsearch._services.client_policy import CURRENT, ClientPolicy
from bot_toolsearch._wrap.engine import Engine

from ._raw_upstream import RawUpstream
from ._tools import chat_tools, responses_tools

DENY = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": True}, "tools": {"deny": ["admin.*"]}}
)
OFF = BotSettings.model_validate(
    {"skills": {"tool_search_enabled": False}, "tools": {"deny": ["admin.*"]}}
)
USER = [{"role": "user", "content": "hi"}]
CHAT_TEXT = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}
RESPONSE_TEXT = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "m",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "m1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
FUNCTION = {"name": "admin.wipe", "parameters": {"type": "object", "properties": {}}}


def _sent(upstream: RawUpstream) -> str:
    assert len(upstream.requests) == 1
    return upstream.requests[0].decode()


@pytest.mark.parametrize("settings", [DENY, OFF], ids=["search on", "search off"])
def test_legacy_functions_are_filtered(settings: BotSettings) -> None:
    with RawUpstream() as upstream:
        upstream.json(CHAT_TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=settings
        )
        weather = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
        client.chat.completions.create(
            model="m", messages=USER, functions=[FUNCTION, weather], function_call="auto"
        )
        sent = json.loads(_sent(upstream))
    assert "admin.wipe" not in json.dumps(sent)
    assert [f["name"] for f in sent["functions"]] == ["get_weather"]


def test_functions_all_denied_are_dropped_whole() -> None:
    with RawUpstream() as upstream:
        upstream.json(CHAT_TEXT)
        client = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY)
        client.chat.completions.create(model="m", messages=USER, functions=[FUNCTION])
        sent = json.loads(_sent(upstream))
    assert "functions" not in sent


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("function_call", {"name": "admin.wipe"}),
        ("tool_choice", {"type": "function", "function": {"name": "admin.wipe"}}),
        ("tool_choice", {"type": "custom", "custom": {"name": "admin.wipe"}}),
        (
            "tool_choice",
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [
                        {"type": "function", "function": {"name": "get_weather"}},
                        {"type": "function", "function": {"name": "admin.wipe"}},
                    ],
                },
            },
        ),
    ],
)
@pytest.mark.parametrize("settings", [DENY, OFF], ids=["search on", "search off"])
def test_a_chat_choice_of_a_denied_tool_raises_and_sends_nothing(
    param: str, value: Any, settings: BotSettings
) -> None:
    with RawUpstream() as upstream:
        upstream.json(CHAT_TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=settings
        )
        with pytest.raises(ToolNotPermittedError) as raised:
            client.chat.completions.create(
                model="m", messages=USER, tools=chat_tools(), **{param: value}
            )
        assert upstream.requests == []
    assert raised.value.name == "admin.wipe"
    assert raised.value.param == param


async def test_the_async_client_raises_the_same() -> None:
    with RawUpstream() as upstream:
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY
        )
        with pytest.raises(ToolNotPermittedError):
            await client.responses.create(
                model="m",
                input="hi",
                tools=responses_tools(),
                tool_choice={"type": "function", "name": "admin.wipe"},
            )
        assert upstream.requests == []
        await client.close()


@pytest.mark.parametrize("with_functions", [True, False])
def test_a_responses_custom_tool_that_is_denied_is_left_out(with_functions: bool) -> None:
    custom = {"type": "custom", "name": "admin.wipe", "description": "Wipe."}
    kept = {"type": "custom", "name": "notes.add", "description": "Add a note."}
    tools = [*(responses_tools() if with_functions else []), custom, kept]
    with RawUpstream() as upstream:
        upstream.json(RESPONSE_TEXT)
        client = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY)
        client.responses.create(model="m", input="hi", tools=tools)
        sent = json.loads(_sent(upstream))
    assert "admin.wipe" not in json.dumps(sent)
    assert kept in sent["tools"]


def test_a_chat_custom_tool_and_an_mcp_tool_list_are_filtered() -> None:
    custom = {"type": "custom", "custom": {"name": "admin.wipe"}}
    mcp = {
        "type": "mcp",
        "server_label": "ops",
        "server_url": "https://example.invalid/mcp",
        "allowed_tools": ["admin.wipe", "ops.status"],
    }
    with RawUpstream() as upstream:
        upstream.json(RESPONSE_TEXT)
        upstream.json(CHAT_TEXT)
        client = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY)
        client.responses.create(model="m", input="hi", tools=[mcp])
        client.chat.completions.create(model="m", messages=USER, tools=[*chat_tools(), custom])
        first, second = (json.loads(r) for r in upstream.requests)
    assert first["tools"] == [{**mcp, "allowed_tools": ["ops.status"]}]
    assert "admin.wipe" not in json.dumps(second)


def test_a_caller_tool_named_tool_search_no_longer_lets_a_denied_tool_through() -> None:
    """Such a list turned tool search off and passed through whole, denied tools included.
    Now the denied tool is never sent (issue 30); nothing is left to search, so no virtual
    tool takes the name and the caller's own ``tool_search`` is sent as an ordinary tool, as
    every door does."""
    own = {"type": "function", "function": {"name": "tool_search", "parameters": {}}}
    admin = {"type": "function", "function": {"name": "admin.wipe", "parameters": {}}}
    with RawUpstream() as upstream:
        upstream.json(CHAT_TEXT)
        client = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY)
        client.chat.completions.create(model="m", messages=USER, tools=[own, admin])
        sent = json.loads(_sent(upstream))
    assert "admin.wipe" not in json.dumps(sent)
    assert sent["tools"] == [own]


def test_permitted_choices_pass_unchanged() -> None:
    choice = {"type": "function", "function": {"name": "get_weather"}}
    with RawUpstream() as upstream:
        upstream.json(CHAT_TEXT)
        client = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=DENY)
        client.chat.completions.create(
            model="m", messages=USER, tools=chat_tools(), tool_choice=choice
        )
        sent = json.loads(_sent(upstream))
    assert sent["tool_choice"] == choice


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_denied_other_tool_is_left_out_of_a_list_another_client_cached(api: str) -> None:
    """A list found cached skips the walk for other tools only when it has none
    (`CallerTools.others`): a list another client cached whole, with a custom tool this
    client may not use, still loses it."""
    engine = Engine(settings=BotSettings.model_validate({"skills": {"tool_search_enabled": True}}))
    if api == "chat":
        tools = [*chat_tools(), {"type": "custom", "custom": {"name": "admin.wipe"}}]
        plan = engine.chat_plan
        base: dict[str, Any] = {"model": "m", "messages": USER}
    else:
        tools = [*responses_tools(), {"type": "custom", "name": "admin.wipe"}]
        plan = engine.responses_plan
        base = {"model": "m", "input": "hi"}
    first = plan({**base, "tools": tools})  # no client policy: the whole list is cached
    assert first is not None
    assert "admin.wipe" in json.dumps(first._setup.projection.round_tools())
    token = CURRENT.set(ClientPolicy("ops", allow=None, deny=("admin.*",)))
    try:
        for _ in range(2):
            kwargs = {**base, "tools": list(tools)}
            held = plan(kwargs)
            assert held is not None
            sent = json.dumps(held._setup.projection.round_tools())
            assert "admin.wipe" not in sent
            assert "tool_search" in sent
            assert "admin.wipe" not in json.dumps(kwargs["tools"])
    finally:
        CURRENT.reset(token)
