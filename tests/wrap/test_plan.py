"""Whether a ``create`` call gets the wrapper's plan: permissions, settings, malformed history."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from types import MappingProxyType
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._protocol.messages import no_such_tool
from bot_toolsearch._wrap.plan import mapping_get
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

from ._tools import chat_tools, responses_tools

USER = {"role": "user", "content": "Mail Bob, please."}
DOTTED = [
    {
        "type": "function",
        "function": {
            "name": f"mail.{verb}",
            "description": f"{verb} mail",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for verb in ("send", "read")
]


@pytest.fixture
async def make(server: ScriptedOpenAIServer) -> AsyncIterator[Callable[..., openai.AsyncOpenAI]]:
    made: list[openai.AsyncOpenAI] = []

    def factory(**kwargs: Any) -> openai.AsyncOpenAI:
        inner = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        made.append(wrap_openai(inner, **kwargs))
        return made[-1]

    yield factory
    for client in made:
        await client.close()


async def test_deny_holds_with_tool_search_left_off(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    # A deny is a promise whenever the wrapper is in the path, tool search on or off.
    settings = BotSettings(tools={"deny": ["send_*"]})  # type: ignore[arg-type]
    server.script(call("send_email", to="x", body="y"), text("I cannot send mail."))
    client = make(settings=settings)
    result = await client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert result.choices[0].message.content == "I cannot send mail."
    first, second = server.requests
    names = [t["function"]["name"] for t in chat_tools() if t["function"]["name"] != "send_email"]
    assert first.tool_names == names  # the full permitted list, no tool_search
    assert first.messages == [USER]  # and no directory
    assert second.tool_outputs[0][1] == no_such_tool("send_email")


async def test_deny_holds_with_tool_search_left_off_on_responses(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI]
) -> None:
    settings = BotSettings(tools={"deny": ["send_*"]})  # type: ignore[arg-type]
    server.script(text("Done."))
    client = make(settings=settings)
    await client.responses.create(model="m", input="Mail Bob.", tools=responses_tools())
    (request,) = server.requests
    assert "send_email" not in request.tool_names
    assert "tool_search" not in request.tool_names
    assert "instructions" not in request.body


async def test_settings_without_tool_search_enabled_say_so(
    server: ScriptedOpenAIServer,
    make: Callable[..., openai.AsyncOpenAI],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        client = make(settings=BotSettings())
    assert any("tool_search_enabled" in r.getMessage() for r in caplog.records)
    server.script(text("Hi."))
    tools = chat_tools()
    await client.chat.completions.create(model="m", messages=[USER], tools=tools)
    assert server.requests[0].body["tools"] == tools  # off, as for the Bot: untouched


async def test_settings_that_set_tool_search_enabled_and_neither_stay_quiet(
    make: Callable[..., openai.AsyncOpenAI], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        make()
        make(settings=BotSettings(skills={"tool_search_enabled": False}))  # type: ignore[arg-type]
    assert not caplog.records


@pytest.mark.parametrize("value", [1, "x", {"id": "c"}])
async def test_a_malformed_tool_calls_value_goes_upstream_as_written(
    server: ScriptedOpenAIServer, make: Callable[..., openai.AsyncOpenAI], value: object
) -> None:
    # Dotted names: the history is rewritten to wire names, which once raised TypeError here.
    # Like any other malformed message it goes upstream as written, and the API's 400 raises.
    client = make()
    tools = [*DOTTED, *chat_tools()]
    messages = [USER, {"role": "assistant", "content": "", "tool_calls": value}]
    with pytest.raises(openai.BadRequestError, match="tool_calls"):
        await client.chat.completions.create(model="m", messages=messages, tools=tools)
    (request,) = server.requests
    assert request.messages[-1]["tool_calls"] == value
    assert request.tool_names[0] == "tool_search"  # the plan ran: tool search applied


class _Items(dict[str, Any]):
    """A dict subclass whose ``get`` differs: only a plain dict takes the fast path."""

    def get(self, key: str, default: Any = None) -> Any:
        return f"own {key}"


class _Item:
    role = "assistant"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"role": "user"}, "user"),
        ({}, None),
        (_Items(role="user"), "own role"),  # its own ``get``, as the general path calls it
        (MappingProxyType({"role": "tool"}), "tool"),
        (_Item(), "assistant"),
        ("role", None),
        (None, None),
    ],
)
def test_mapping_get_reads_a_plain_dict_as_any_mapping(item: object, expected: object) -> None:
    assert mapping_get(item, "role") == expected
