"""The whole SDK surface of ``chat.completions`` and ``responses`` on a wrapped client.

Every public method of the installed SDK's resources (and of their raw/streaming wrappers)
is either tool-searched, the given client's own (no model request with tools), or refused:
a method a later ``openai`` release adds fails `test_every_sdk_method_is_classified` instead
of reaching the upstream without tool search. The SDK's helpers (``stream()``, ``parse()``,
their raw and async forms) are run for real against the scripted server.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import openai
import pydantic
import pytest
from openai.resources.chat.completions import (
    AsyncCompletions,
    AsyncCompletionsWithRawResponse,
    AsyncCompletionsWithStreamingResponse,
    Completions,
    CompletionsWithRawResponse,
    CompletionsWithStreamingResponse,
)
from openai.resources.responses import (
    AsyncResponses,
    AsyncResponsesWithRawResponse,
    AsyncResponsesWithStreamingResponse,
    Responses,
    ResponsesWithRawResponse,
    ResponsesWithStreamingResponse,
)

from bot_toolsearch import UnsupportedCallError, wrap_openai
from bot_toolsearch._wrap.raw import RAW_RESPONSE_HEADER
from bot_toolsearch._wrap.surface import PASSED, REFUSED, TOOL_SEARCHED, Resource
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.wrap._tools import chat_tools, responses_tools

USER = [{"role": "user", "content": "Weather in Oslo?"}]

RESOURCES: list[tuple[Resource, type[Any], type[Any], type[Any]]] = [
    ("chat.completions", Completions, CompletionsWithRawResponse, CompletionsWithStreamingResponse),
    (
        "chat.completions",
        AsyncCompletions,
        AsyncCompletionsWithRawResponse,
        AsyncCompletionsWithStreamingResponse,
    ),
    ("responses", Responses, ResponsesWithRawResponse, ResponsesWithStreamingResponse),
    (
        "responses",
        AsyncResponses,
        AsyncResponsesWithRawResponse,
        AsyncResponsesWithStreamingResponse,
    ),
]


class Weather(pydantic.BaseModel):
    city: str
    temp: int


def strict_chat_tools() -> list[dict[str, Any]]:
    """The SDK's ``parse``/``stream`` read call arguments of ``strict`` tools only."""
    return [{**t, "function": {**t["function"], "strict": True}} for t in chat_tools()]


def strict_responses_tools() -> list[dict[str, Any]]:
    return [{**t, "strict": True} for t in responses_tools()]


def _public(cls: type[Any]) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def _wrapper_methods(wrapper_cls: type[Any], resource: Any) -> set[str]:
    """The public names of a ``...WithRawResponse`` object: set in ``__init__`` and class-level
    (sub-resources), found on a real instance over ``resource``."""
    instance = wrapper_cls(resource)
    return {n for n in vars(instance) if not n.startswith("_")} | _public(wrapper_cls)


def _wrapped(resource: Resource, is_async: bool, base_url: str) -> tuple[Any, Any]:
    inner: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
        base_url=base_url, api_key="t", max_retries=0
    )
    client: Any = wrap_openai(inner)
    of = (lambda c: c.chat.completions) if resource == "chat.completions" else lambda c: c.responses
    return of(client), of(inner)


@pytest.mark.parametrize(("resource", "sdk", "raw", "streaming"), RESOURCES)
def test_every_sdk_method_is_classified(
    resource: Resource, sdk: type[Any], raw: type[Any], streaming: type[Any]
) -> None:
    known = TOOL_SEARCHED | PASSED[resource] | set(REFUSED[resource])
    given = _public(sdk)
    assert {"create", "parse", "stream"} <= given  # the enumeration sees the methods
    assert given - known == set(), "a new SDK method: tool-search it, pass it or refuse it"
    _, inner = _wrapped(resource, sdk.__name__.startswith("Async"), "http://127.0.0.1:9/v1")
    for wrapper in (raw, streaming):
        names = _wrapper_methods(wrapper, inner)
        assert "create" in names
        assert names - known == set(), f"a new method of {wrapper.__name__}"


@pytest.mark.parametrize(("resource", "sdk", "raw", "streaming"), RESOURCES)
def test_each_method_is_tool_searched_passed_or_refused(
    resource: Resource, sdk: type[Any], raw: type[Any], streaming: type[Any]
) -> None:
    del raw, streaming
    wrapped, inner = _wrapped(resource, sdk.__name__.startswith("Async"), "http://127.0.0.1:9/v1")
    for name in sorted(_public(sdk)):
        found = inspect.getattr_static(wrapped, name, None)
        if name in TOOL_SEARCHED:
            owner = next(c for c in type(wrapped).__mro__ if name in vars(c))
            assert owner.__module__.startswith("bot_toolsearch."), name
            assert found is not None
        elif name in REFUSED[resource]:
            with pytest.raises(UnsupportedCallError, match=f"{resource}.{name}"):
                getattr(wrapped, name)()
        elif name in ("with_raw_response", "with_streaming_response"):
            # The SDK's own class over the wrapped resource: each method is the wrapper's.
            form = getattr(wrapped, name)
            assert type(form) is type(getattr(inner, name))
            assert form.create.__wrapped__.__self__ is not inner
            if hasattr(form, "parse"):
                assert form.parse.__wrapped__.__func__ is type(wrapped).parse
            assert form.retrieve.__wrapped__ == inner.retrieve
        else:
            assert getattr(wrapped, name) == getattr(inner, name), name
    # A method this package does not know (a later SDK's) is refused when called.
    with pytest.raises(UnsupportedCallError, match=f"{resource}.create"):
        wrapped.create_and_forget(model="m")


def test_the_refusal_names_the_supported_call() -> None:
    client = wrap_openai(openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="t"))
    with pytest.raises(UnsupportedCallError) as caught:
        client.responses.connect()
    assert "responses.create(stream=True)" in str(caught.value)
    assert isinstance(caught.value, NotImplementedError)
    with pytest.raises(UnsupportedCallError, match=r"use responses\.create"):
        client.beta.responses.create(model="m", input="hi", tools=responses_tools())
    client.close()


def test_raw_header_is_the_sdks() -> None:
    from openai import _constants

    assert RAW_RESPONSE_HEADER == _constants.RAW_RESPONSE_HEADER


# --- the helpers for real, against the scripted server ---------------------------------------


def _searched_first(server: ScriptedOpenAIServer) -> None:
    """The upstream saw only tool_search, then only it and the loaded tool."""
    first, second = server.requests[:2]
    assert first.tool_names == ["tool_search"]
    assert second.tool_names == ["tool_search", "get_weather"]


def test_chat_stream_helper_does_tool_search(server: ScriptedOpenAIServer) -> None:
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="Oslo"))
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.chat.completions.stream(
        model="m", messages=USER, tools=strict_chat_tools()
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    client.close()
    _searched_first(server)
    assert "tool_calls.function.arguments.done" in kinds
    (tool_call,) = final.choices[0].message.tool_calls or ()
    assert tool_call.function.name == "get_weather"
    assert tool_call.function.parsed_arguments == {"city": "Oslo"}


async def test_async_chat_stream_helper_parses_the_answer(server: ScriptedOpenAIServer) -> None:
    server.script(
        call("tool_search", query="select:get_weather"), text('{"city": "Oslo", "temp": 3}')
    )
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    async with client.chat.completions.stream(
        model="m", messages=USER, tools=chat_tools(), response_format=Weather
    ) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    await client.close()
    _searched_first(server)
    assert final.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    assert server.requests[0].body["response_format"]["type"] == "json_schema"


def test_chat_parse_helper_does_tool_search(server: ScriptedOpenAIServer) -> None:
    server.script(
        call("tool_search", query="select:get_weather"), text('{"city": "Oslo", "temp": 3}')
    )
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    completion = client.chat.completions.parse(
        model="m", messages=USER, tools=strict_chat_tools(), response_format=Weather
    )
    client.close()
    _searched_first(server)
    assert completion.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    assert server.requests[1].body["response_format"]["json_schema"]["name"] == "Weather"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > server.requests[0].body.get("max_tokens", 0)


async def test_async_parse_helpers_and_their_raw_forms(server: ScriptedOpenAIServer) -> None:
    answer = '{"city": "Oslo", "temp": 3}'
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    server.script(call("tool_search", query="select:get_weather"), text(answer))
    completion = await client.chat.completions.parse(
        model="m", messages=USER, tools=strict_chat_tools(), response_format=Weather
    )
    assert completion.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    _searched_first(server)

    server.reset()
    server.script(call("tool_search", query="select:get_weather"), text(answer))
    raw = await client.responses.with_raw_response.parse(
        model="m", input="Weather?", tools=strict_responses_tools(), text_format=Weather
    )
    assert raw.request_id is None  # several upstream requests: no single one
    assert raw.parse().output_parsed == Weather(city="Oslo", temp=3)
    _searched_first(server)

    server.reset()
    server.script(call("tool_search", query="select:get_weather"), text(answer))
    async with client.chat.completions.with_streaming_response.parse(
        model="m", messages=USER, tools=strict_chat_tools(), response_format=Weather
    ) as response:
        parsed = await response.parse()
    assert parsed.choices[0].message.parsed == Weather(city="Oslo", temp=3)
    _searched_first(server)

    server.reset()
    server.script(text(answer))  # no tools: passed through, the real HTTP response
    plain = await client.chat.completions.with_raw_response.parse(
        model="m", messages=USER, response_format=Weather
    )
    assert plain.headers["content-type"].startswith("application/json")
    assert plain.parse().choices[0].message.parsed == Weather(city="Oslo", temp=3)
    await client.close()


def test_responses_parse_helper_does_tool_search(server: ScriptedOpenAIServer) -> None:
    server.script(
        call("tool_search", query="select:get_weather"), text('{"city": "Oslo", "temp": 3}')
    )
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    response = client.responses.parse(
        model="m", input="Weather?", tools=strict_responses_tools(), text_format=Weather
    )
    client.close()
    _searched_first(server)
    assert response.output_parsed == Weather(city="Oslo", temp=3)
    assert server.requests[0].body["text"]["format"]["type"] == "json_schema"


def test_parse_with_stream_is_refused_with_the_streamed_call_named(
    server: ScriptedOpenAIServer,
) -> None:
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with pytest.raises(UnsupportedCallError, match=r"responses\.stream"):
        client.responses.parse(
            model="m", input="hi", tools=strict_responses_tools(), text_format=Weather, stream=True
        )
    client.close()
    assert server.requests == []


def test_client_level_raw_response_and_beta_chat_do_tool_search(
    server: ScriptedOpenAIServer,
) -> None:
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    raw = client.with_raw_response.chat.completions.create(
        model="m", messages=USER, tools=chat_tools()
    )
    (tool_call,) = raw.parse().choices[0].message.tool_calls
    assert tool_call.function.name == "get_weather"
    _searched_first(server)

    server.reset()
    server.script(call("tool_search", query="select:get_weather"), call("get_weather", city="x"))
    with client.with_streaming_response.responses.create(
        model="m", input="Weather?", tools=responses_tools()
    ) as response:
        output = response.parse().output
    assert [item.name for item in output if item.type == "function_call"] == ["get_weather"]
    _searched_first(server)

    server.reset()
    server.script(call("tool_search", query="select:get_weather"), text("{}"))
    beta = client.beta.chat.completions.parse(model="m", messages=USER, tools=strict_chat_tools())
    assert beta.choices[0].message.content == "{}"
    _searched_first(server)
    client.close()


def test_sync_stream_helper_closes_the_round_it_is_in(server: ScriptedOpenAIServer) -> None:
    """Leaving ``stream()`` early closes the upstream round being read, not only the first."""
    server.script(
        call("tool_search", query="select:get_weather"), text("It is sunny in Oslo today.")
    )
    client = wrap_openai(openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    with client.chat.completions.stream(model="m", messages=USER, tools=chat_tools()) as stream:
        for event in stream:
            if event.type == "content.delta" and event.delta:  # the second round's text
                break
        upstream = stream._raw_stream._upstream  # the second round's SDK stream
    assert upstream.response.is_closed
    client.close()
    assert json.loads(server.requests[1].tool_outputs[-1][1])["loaded"] == ["get_weather"]


async def test_async_responses_stream_helper_closes_the_round_it_is_in(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(
        call("tool_search", query="select:get_weather"), text("It is sunny in Oslo today.")
    )
    client = wrap_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0))
    async with client.responses.stream(
        model="m", input="Weather?", tools=responses_tools()
    ) as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":  # the second round's text
                break
        upstream = stream._raw_stream._upstream
    assert upstream.response.is_closed
    await client.close()
    assert len(server.requests) == 2
