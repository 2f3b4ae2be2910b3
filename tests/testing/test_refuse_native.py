"""`ScriptedOpenAIServer(refuse_native=True)`: the 400s of a backend without native tool search."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bot_toolsearch.testing import ScriptedOpenAIServer, text

FUNCTION = {"type": "function", "name": "f", "parameters": {"type": "object"}}


@pytest.fixture
def hostile() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv


@pytest.mark.parametrize(
    ("tools", "items", "message"),
    [
        ([{"type": "tool_search"}], [], "Unsupported tool type"),
        ([{"type": "namespace", "name": "n", "description": "d", "tools": []}], [], "namespace"),
        ([{**FUNCTION, "defer_loading": True}], [], "defer_loading"),
        ([FUNCTION], [{"type": "tool_search_output", "tools": []}], "Unsupported input item"),
        (
            [FUNCTION],
            [
                {
                    "type": "function_call",
                    "call_id": "c",
                    "name": "f",
                    "namespace": "n",
                    "arguments": "{}",
                }
            ],
            "namespace",
        ),
    ],
)
def test_the_dialect_is_refused_without_using_a_turn(
    hostile: ScriptedOpenAIServer, tools: list[Any], items: list[Any], message: str
) -> None:
    client = openai.OpenAI(base_url=hostile.base_url, api_key="t", max_retries=0)
    with pytest.raises(openai.BadRequestError, match=message):
        client.responses.create(
            model="m",
            input=[{"role": "user", "content": "x"}, *items],  # type: ignore[list-item]
            tools=tools,  # type: ignore[arg-type]
        )
    hostile.script(text("fine"))
    reply = client.responses.create(model="m", input="x", tools=[FUNCTION])  # type: ignore[list-item]
    assert reply.output_text == "fine"
    assert len(hostile.requests) == 2
    client.close()


def test_chat_defer_loading_inside_function_is_refused(hostile: ScriptedOpenAIServer) -> None:
    client = openai.OpenAI(base_url=hostile.base_url, api_key="t", max_retries=0)
    tool = {"type": "function", "function": {"name": "f", "defer_loading": True}}
    with pytest.raises(openai.BadRequestError, match="defer_loading"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            tools=[tool],  # type: ignore[list-item]
        )
    client.close()


def test_off_by_default_the_dialect_is_accepted() -> None:
    with ScriptedOpenAIServer() as server:
        server.script(text("ok"))
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        reply = client.responses.create(
            model="m",
            input="x",
            tools=[{"type": "tool_search"}],  # type: ignore[list-item]
        )
        assert reply.output_text == "ok"
        client.close()


def test_an_item_reference_it_never_issued_is_refused(hostile: ScriptedOpenAIServer) -> None:
    client = openai.OpenAI(base_url=hostile.base_url, api_key="t", max_retries=0)
    hostile.script(text("first"), text("second"))
    first = client.responses.create(model="m", input="x", tools=[FUNCTION])  # type: ignore[list-item]
    issued = first.output[0].id
    with pytest.raises(openai.BadRequestError, match="Item with id 'ts_call_1' not found"):
        client.responses.create(
            model="m",
            input=[{"type": "item_reference", "id": "ts_call_1"}],
            tools=[FUNCTION],  # type: ignore[list-item]
        )
    reply = client.responses.create(
        model="m",
        input=[{"type": "item_reference", "id": issued}, {"role": "user", "content": "y"}],
        tools=[FUNCTION],  # type: ignore[list-item]
    )
    assert reply.output_text == "second"
    client.close()
