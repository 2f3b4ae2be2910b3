"""A client's own tool search through the proxy, on a backend that refuses the dialect.

The openai SDK talks to the proxy over HTTP and reads the replies as its typed items; the
scripted upstream answers HTTP 400 to a ``tool_search``/``namespace`` tool type, a
``defer_loading`` key or the dialect's input items (``refuse_native=True``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItem,
)
from openai.types.responses.namespace_tool import NamespaceTool

from bot_toolsearch import BotSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.proxy._raw import served
from tests.wrap._tools import loaded
from tests.wrap.test_native import CLIENT_SEARCH, WIRE_DELIMITER, native_tools

ON = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})


@pytest.fixture
def hostile() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()


def _proxy(hostile: ScriptedOpenAIServer, settings: BotSettings = ON) -> Any:
    return served(ProxyApp(hostile.base_url, settings=settings))


def _sent(hostile: ScriptedOpenAIServer) -> None:
    for request in hostile.requests:
        raw = json.dumps(request.body)
        assert '"defer_loading"' not in raw
        assert '"tool_search_call"' not in raw
        assert '"tool_search_output"' not in raw
        assert '"namespace"' not in raw


def test_server_mode_through_the_proxy(hostile: ScriptedOpenAIServer) -> None:
    member = f"crm{WIRE_DELIMITER}lookup"
    hostile.script(call("tool_search", query="customer relationship accounts"), call(member))
    with _proxy(hostile) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        result = client.responses.create(model="m", input="Find 42", tools=native_tools())  # type: ignore[arg-type]
        client.close()
    _sent(hostile)
    assert [item.type for item in result.output] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]
    searched, found, member_call = result.output
    assert isinstance(searched, ResponseToolSearchCall)
    assert searched.execution == "server"
    assert searched.arguments == {"query": "customer relationship accounts"}
    assert isinstance(found, ResponseToolSearchOutputItem)
    assert found.call_id == searched.call_id
    assert all(isinstance(group, NamespaceTool) for group in found.tools)
    assert isinstance(member_call, ResponseFunctionToolCall)
    assert (member_call.name, member_call.namespace) == ("lookup", "crm")
    assert result.usage is not None


def test_chat_defer_loading_through_the_proxy(hostile: ScriptedOpenAIServer) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="x"))
    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {**tool, "defer_loading": i >= 2}}
        for i, tool in enumerate(
            {k: v for k, v in t.items() if k not in ("type", "strict", "defer_loading")}
            for t in native_tools()[1:-1]
        )
    ]
    with _proxy(hostile) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        completion = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Play"}],
            tools=tools,  # type: ignore[arg-type]
        )
        client.close()
    _sent(hostile)
    first, second = hostile.requests
    assert first.tool_names == ["get_weather", "send_email", "tool_search"]
    assert loaded(second.tool_outputs[0][1]) == ["play_music"]
    calls = completion.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["play_music"]  # type: ignore[union-attr]


def test_a_streamed_native_reply_through_the_proxy(hostile: ScriptedOpenAIServer) -> None:
    hostile.script(call("tool_search", query="select:play_music"), call("play_music", title="x"))
    with _proxy(hostile) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        events = list(
            client.responses.create(
                model="m",
                input="Play",
                tools=native_tools(),  # type: ignore[arg-type]
                stream=True,
            )
        )
        client.close()
    _sent(hostile)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    added = [e for e in events if e.type == "response.output_item.added"]
    done = [e for e in events if e.type == "response.output_item.done"]
    kinds = ["tool_search_call", "tool_search_output", "function_call"]
    assert [e.item.type for e in added] == [e.item.type for e in done] == kinds
    indexes = [e.output_index for e in added]
    assert indexes == [indexes[0], indexes[0] + 1, indexes[0] + 2]
    assert isinstance(added[0].item, ResponseToolSearchCall)
    assert isinstance(done[1].item, ResponseToolSearchOutputItem)
    assert events[-1].type == "response.completed"


def test_client_mode_round_trip_through_the_proxy(hostile: ScriptedOpenAIServer) -> None:
    hostile.script(call("tool_search", goal="music"), call("play_music", title="x"))
    tools = [CLIENT_SEARCH, *native_tools()[1:]]
    definition = next(t for t in tools if t.get("name") == "play_music")
    with _proxy(hostile) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        first = client.responses.create(model="m", input="Play", tools=tools)  # type: ignore[arg-type]
        (searched,) = first.output
        assert isinstance(searched, ResponseToolSearchCall)
        assert searched.execution == "client"
        assert searched.arguments == {"goal": "music"}
        second = client.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "Play"},
                searched.model_dump(exclude_none=True),
                {
                    "type": "tool_search_output",
                    "execution": "client",
                    "call_id": searched.call_id,
                    "tools": [definition],
                },
            ],  # type: ignore[list-item]
            tools=tools,  # type: ignore[arg-type]
        )
        client.close()
    _sent(hostile)
    first_request, second_request = hostile.requests
    assert "play_music" not in first_request.tool_names
    assert "play_music" in second_request.tool_names
    assert [i.type for i in second.output] == ["function_call"]


def test_pass_forwards_a_native_request_untouched(hostile: ScriptedOpenAIServer) -> None:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True}, "proxy": {"native_tool_search": "pass"}}
    )
    with _proxy(hostile, settings) as port:
        body = {"model": "m", "input": "x", "tools": native_tools()}
        raw = httpx.post(f"http://127.0.0.1:{port}/v1/responses", json=body)
    assert raw.status_code == 400
    assert "Unsupported tool type" in raw.json()["error"]["message"]
    assert hostile.requests[0].body["tools"] == native_tools()


def test_an_ordinary_request_through_the_proxy_is_unchanged(
    hostile: ScriptedOpenAIServer,
) -> None:
    hostile.script(text("hi"))
    tools = [{k: v for k, v in t.items() if k != "defer_loading"} for t in native_tools()[1:-1]]
    with _proxy(hostile) as port:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
        result = client.responses.create(model="m", input="x", tools=tools)  # type: ignore[arg-type]
        client.close()
    assert result.output_text == "hi"
    assert hostile.requests[0].tool_names == ["tool_search"]
