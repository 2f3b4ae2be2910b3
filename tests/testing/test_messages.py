"""The scripted server's Messages mode: Anthropic's message shape and event stream, the API's
own 400s, and under ``refuse_native`` a backend without tool search (Anthropic's error shape)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

TOOL = {"name": "f", "input_schema": {"type": "object"}}
ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv


def _post(server: ScriptedOpenAIServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.base_url}/messages", json={"model": "m", **body}, timeout=10)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tools": [{**TOOL, "defer_loading": True}]}, "Deferred custom tools"),
        (
            {"tools": [{"type": "tool_search_tool_bm25_20251119", "name": "t"}]},
            "Unsupported tool type",
        ),
        (
            {
                "messages": [
                    *ASK,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "a",
                                "content": [{"type": "tool_reference", "tool_name": "f"}],
                            }
                        ],
                    },
                ]
            },
            "tool_reference",
        ),
    ],
)
def test_strict_refuses_tool_search(
    strict: ScriptedOpenAIServer, body: dict[str, Any], message: str
) -> None:
    response = _post(strict, {"messages": ASK, **body})
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert message in response.json()["error"]["message"]
    assert strict.remaining == []  # no scripted turn used


def test_unanswered_tool_use_is_the_apis_400() -> None:
    with ScriptedOpenAIServer() as server:
        messages = [
            *ASK,
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
            },
            {"role": "user", "content": "go on"},
        ]
        response = _post(server, {"messages": messages, "tools": [TOOL]})
    assert response.status_code == 400
    assert "without `tool_result`" in response.json()["error"]["message"]


def test_message_and_stream(strict: ScriptedOpenAIServer) -> None:
    strict.script(call("f", id="toolu_x", a=1), text("done"))
    message = _post(strict, {"messages": ASK, "tools": [TOOL]}).json()
    assert message["content"] == [
        {"type": "tool_use", "id": "toolu_x", "name": "f", "input": {"a": 1}}
    ]
    assert message["stop_reason"] == "tool_use"
    stream = _post(strict, {"messages": ASK, "stream": True})
    assert stream.headers["content-type"].startswith("text/event-stream")
    events = [line[7:] for line in stream.text.splitlines() if line.startswith("event: ")]
    assert events[0] == "message_start"
    assert events[-2:] == ["message_delta", "message_stop"]
    assert strict.requests[-1].api == "messages"
