"""The offline model behind the doors, with a client that executes its own searches through a
search tool whose parameters are not ``query`` (the JS Agents SDK's ``paths``), driven by the
openai SDK as that client's loop would: the model's search call follows the client's schema,
the client answers it with a ``tool_search_output``, the model calls the loaded tool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bot_toolsearch.offline import OfflinePlanner
from bot_toolsearch.testing import ScriptedOpenAIServer
from tests.conformance.conftest import strict_upstream

CONVERT = {
    "type": "function",
    "name": "convert_length",
    "description": "Convert a length between units: km, mi, m, ft.",
    "parameters": {
        "type": "object",
        "properties": {
            "value": {"type": "number"},
            "from_unit": {"type": "string", "enum": ["km", "mi", "m", "ft"]},
            "to_unit": {"type": "string", "enum": ["km", "mi", "m", "ft"]},
        },
        "required": ["value", "from_unit", "to_unit"],
    },
    "defer_loading": True,
}
SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": "Load deferred tools by their names.",
    "parameters": {
        "type": "object",
        "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
        "required": ["paths"],
    },
}
CLOCK = {
    "type": "function",
    "name": "get_time",
    "description": "The local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
# A loaded tool beside the deferred one: with none, the client's search function is not sent
# at all (issue 36 item 3, fixed on its own branch).
TOOLS: list[Any] = [SEARCH, CLOCK, CONVERT]


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    """The strict upstream answered by the offline model."""
    with strict_upstream(OfflinePlanner()) as srv:
        yield srv


async def test_a_client_search_with_paths_then_the_loaded_tool(
    door_client: openai.AsyncOpenAI, strict: ScriptedOpenAIServer
) -> None:
    user = {"role": "user", "content": "Convert 10 km to miles"}
    first = await door_client.responses.create(model="m", input=[user], tools=TOOLS)
    (searched,) = first.output
    assert searched.type == "tool_search_call"
    assert searched.execution == "client"
    arguments = searched.arguments
    assert isinstance(arguments, dict)
    assert list(arguments) == ["paths"]
    assert arguments["paths"]
    assert all(isinstance(path, str) and path for path in arguments["paths"])
    # The upstream was offered the client's search function with the client's parameters.
    offered = [t for t in strict.requests[0].body["tools"] if t.get("name") == "tool_search"]
    assert [tool["parameters"] for tool in offered] == [SEARCH["parameters"]]

    # The client runs its search and sends the loaded definition back.
    found = {
        "type": "tool_search_output",
        "call_id": searched.call_id,
        "execution": "client",
        "status": "completed",
        "tools": [CONVERT],
    }
    history = [user, searched.model_dump(exclude_none=True), found]
    second = await door_client.responses.create(model="m", input=history, tools=TOOLS)
    (converted,) = second.output
    assert converted.type == "function_call"
    assert converted.name == "convert_length"
    assert converted.arguments  # read from the message by the loaded schema
    assert "convert_length" in strict.requests[-1].tool_names
