"""The proxy over HTTP: the openai SDK and LangChain's own agent loop pointed at its base URL."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai
import pytest

from bot_toolsearch.testing import ScriptedOpenAIServer, call, error, text
from tests.wrap._tools import chat_tools, loaded

USER = {"role": "user", "content": "Weather in Oslo?"}


def test_chat_search_hidden_and_key_forwarded(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    client = openai.OpenAI(base_url=proxy_url, api_key="sk-client-key", max_retries=0)
    result = client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert [c.function.name for c in result.choices[0].message.tool_calls] == ["get_weather"]
    search, after = server.requests
    assert search.tool_names == ["tool_search"]
    assert after.tool_names == ["tool_search", "get_weather"]
    assert all(r.headers["authorization"] == "Bearer sk-client-key" for r in server.requests)
    client.close()


def test_chat_streaming_through_the_proxy(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    server.script(call("tool_search", query="weather"), text("Sunny."))
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model="m",
        messages=[USER],
        tools=chat_tools(),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "Sunny."
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["stop"]
    assert chunks[-1].usage is not None
    assert len(server.requests) == 2
    client.close()


def test_responses_through_the_proxy(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    tools = [{"type": "function", **t["function"]} for t in chat_tools()]
    result = client.responses.create(model="m", input="Weather?", tools=tools)  # type: ignore[arg-type]
    assert [item.name for item in result.output if item.type == "function_call"] == ["get_weather"]
    assert loaded(server.requests[1].tool_outputs[0][1]) == ["get_weather"]
    client.close()


def test_responses_streaming_through_the_proxy(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    tools = [{"type": "function", **t["function"]} for t in chat_tools()]
    body = {"model": "m", "input": "Weather?", "tools": tools, "stream": True}
    raw = httpx.post(f"{proxy_url}/responses", json=body, headers={"authorization": "Bearer k"})
    assert raw.headers["content-type"].startswith("text/event-stream")
    blocks = [b for b in raw.text.split("\n\n") if b.strip()]
    # As the real API frames them, then the proxy's summary as an SSE comment (exchange.py).
    assert all(b.startswith("event: ") for b in blocks[:-1])
    assert blocks[-1].startswith(": x-toolsearch rounds=2 hidden-rounds=1 searches=1 ")
    assert "[DONE]" not in raw.text
    # The SDK reads the same stream.
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    events = list(client.responses.create(model="m", input="Weather?", tools=tools, stream=True))  # type: ignore[call-overload]
    client.close()
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert [i.name for i in final.output if i.type == "function_call"] == ["get_weather"]
    assert len(server.requests) == 4


def test_healthz_models_and_errors(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    root = proxy_url.removesuffix("/v1")
    assert httpx.get(f"{root}/healthz").json() == {"status": "ok"}
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)
    assert [m.id for m in client.models.list()] == ["scripted-model"]
    server.script(error(500, "the model is on fire", type="server_error"))
    with pytest.raises(openai.APIStatusError, match="the model is on fire") as failed:
        client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert failed.value.status_code == 502
    server.script(error(400, "bad messages", param="messages"))
    with pytest.raises(openai.BadRequestError, match="bad messages") as bad:
        client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    assert bad.value.param == "messages"
    client.close()


def test_langchain_agent_through_the_proxy(server: ScriptedOpenAIServer, proxy_url: str) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI

    server.script(
        call("tool_search", query="select:get_weather"),
        call("get_weather", city="Oslo"),
        text("It is sunny in Oslo."),
    )
    ran: list[str] = []

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        ran.append(city)
        return f"{city}: sunny, 21 C"

    def lookup(number: int) -> Callable[[str], str]:
        def item(name: str) -> str:
            ran.append(f"inventory_{number}")
            return "0"

        return item

    tools = [StructuredTool.from_function(get_weather)]
    tools += [
        StructuredTool.from_function(
            lookup(i), name=f"inventory_item_{i:03d}", description=f"Look up stock level {i}."
        )
        for i in range(65)
    ]
    model = ChatOpenAI(model="scripted-model", base_url=proxy_url, api_key="sk-lc", max_retries=0)
    agent = create_agent(model, tools=tools)
    state = agent.invoke({"messages": [USER]})

    assert ran == ["Oslo"]
    assert state["messages"][-1].content == "It is sunny in Oslo."
    called = [c["name"] for m in state["messages"] for c in getattr(m, "tool_calls", None) or ()]
    assert called == ["get_weather"]
    search, first_call, reply = server.requests
    assert search.tool_names == ["tool_search"]
    assert first_call.tool_names == reply.tool_names == ["tool_search", "get_weather"]
    assert reply.tool_outputs[-1][1] == "Oslo: sunny, 21 C"
    assert all(r.headers["authorization"] == "Bearer sk-lc" for r in server.requests)
