"""Unusable and cut upstream replies through the wrapped client: one ``openai.APIError``.

A raw socket server on 127.0.0.1 answers byte for byte (see ``_raw_upstream``); the real SDK
sends the requests, sync and async. Issue 20: a cut Chat Completions stream used to end as a
finished one (``finish_reason: "stop"``), a malformed reply raised ``TypeError``,
``AttributeError`` or ``ValueError`` from the wrapper.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, ModelReplyError, wrap_openai
from bot_toolsearch._wrap.verbatim import VERBATIM, Verbatim

from ._raw_upstream import RawUpstream
from ._tools import chat_tools, responses_tools

SETTINGS = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
USER = [{"role": "user", "content": "Weather in Oslo?"}]


def completion(message: object = None, usage: object = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        **extra,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def calls_message(*calls: object) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def fn_call(name: object, arguments: object = "{}", call_id: object = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


TEXT = {"role": "assistant", "content": "hi"}

UNUSABLE_CHAT: dict[str, tuple[object, str, str]] = {
    "html": (b"<html><body>502 Bad Gateway</body></html>", "text/html", "the body is a str"),
    "broken json": (b'{"id": "x", "choices": [', "application/json", "not valid JSON"),
    "a list": ([1, 2], "application/json", "the body is a list"),
    "choices not a list": (completion(choices=3), "application/json", "choices is an int"),
    "choice not an object": (completion(choices=[1]), "application/json", "choices[0] is an int"),
    "message null": (completion(None), "application/json", "choices[0].message is null"),
    "content a number": (
        completion({"role": "assistant", "content": 5}),
        "application/json",
        "choices[0].message.content is an int",
    ),
    "tool_calls 1": (
        completion(calls_message()) | {"choices": [{"index": 0, "message": {"tool_calls": 1}}]},
        "application/json",
        "tool_calls is an int",
    ),
    "function null": (
        completion(calls_message({"id": "a", "type": "function", "function": None})),
        "application/json",
        "tool_calls[0].function is null",
    ),
    "name a number": (
        completion(calls_message(fn_call(5))),
        "application/json",
        "tool_calls[0].function.name is an int",
    ),
    "arguments a list": (
        completion(calls_message(fn_call("get_weather", [1]))),
        "application/json",
        "tool_calls[0].function.arguments is a list",
    ),
}


@pytest.mark.parametrize("case", list(UNUSABLE_CHAT))
def test_an_unusable_chat_reply_raises_model_reply_error_sync(case: str) -> None:
    body, kind, reason = UNUSABLE_CHAT[case]
    with RawUpstream() as upstream:
        upstream.json(body, kind)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        with pytest.raises(ModelReplyError) as info:
            client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        client.close()
    assert isinstance(info.value, openai.APIError)
    assert reason in info.value.message
    assert info.value.request.url.path == "/v1/chat/completions"


@pytest.mark.parametrize("case", list(UNUSABLE_CHAT))
async def test_an_unusable_chat_reply_raises_model_reply_error_async(case: str) -> None:
    body, kind, reason = UNUSABLE_CHAT[case]
    with RawUpstream() as upstream:
        upstream.json(body, kind)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        with pytest.raises(ModelReplyError, match="unusable model reply") as info:
            await client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        await client.close()
    assert reason in info.value.message


def test_a_call_without_an_id_gets_a_fresh_one() -> None:
    with RawUpstream() as upstream:
        upstream.json(completion(calls_message(fn_call("get_weather", '{"city":"x"}', None))))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        # tool_choice loads the tool: its call is the caller's, and needs an id to answer.
        forced = {"type": "function", "function": {"name": "get_weather"}}
        result = client.chat.completions.create(
            model="m", messages=USER, tools=chat_tools(), tool_choice=forced
        )
        client.close()
    [call] = result.choices[0].message.tool_calls
    assert call.id.startswith("call_")
    assert len(call.id) > len("call_")


@pytest.mark.parametrize("strict", [False, True])
async def test_a_checked_reply_carries_the_upstream_request_id(strict: bool) -> None:
    """As the SDK's own reply: ``_request_id`` from ``x-request-id``, not a model field (the
    strict read is the proxy's, with `VERBATIM` set)."""
    sink = Verbatim() if strict else None
    with RawUpstream() as upstream:
        upstream.json(completion(TEXT), headers=b"x-request-id: req_abc\r\n")
        upstream.json(completion(TEXT))
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        token = VERBATIM.set(sink)
        try:
            first = await client.chat.completions.create(
                model="m", messages=USER, tools=chat_tools()
            )
            second = await client.chat.completions.create(
                model="m", messages=USER, tools=chat_tools()
            )
        finally:
            VERBATIM.reset(token)
        await client.close()
    assert first._request_id == "req_abc"
    assert second._request_id is None
    assert "_request_id" not in first.model_dump()
    assert "req_abc" not in first.model_dump_json()
    assert first.model_fields_set == second.model_fields_set
    if sink is not None:
        assert sink.body_of(second) == json.dumps(completion(TEXT)).encode()


UNUSABLE_RESPONSES: dict[str, tuple[object, str, str]] = {
    "html": (b"<html>oops</html>", "text/html", "the body is a str"),
    "output not a list": (
        {"id": "r", "object": "response", "output": 5, "status": "completed"},
        "application/json",
        "output is an int",
    ),
    "call name null": (
        {
            "id": "r",
            "object": "response",
            "status": "completed",
            "output": [{"type": "function_call", "call_id": "c", "name": None, "arguments": "{}"}],
        },
        "application/json",
        "output[0].name is null",
    ),
    "message content": (
        {
            "id": "r",
            "object": "response",
            "status": "completed",
            "output": [{"type": "message", "id": "m", "role": "assistant", "content": [7]}],
        },
        "application/json",
        "output[0].content[0] is an int",
    ),
}


@pytest.mark.parametrize("case", list(UNUSABLE_RESPONSES))
def test_an_unusable_responses_reply_raises_model_reply_error(case: str) -> None:
    body, kind, reason = UNUSABLE_RESPONSES[case]
    with RawUpstream() as upstream:
        upstream.json(body, kind)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        with pytest.raises(ModelReplyError) as info:
            client.responses.create(model="m", input="hi", tools=responses_tools())
        client.close()
    assert reason in info.value.message


# --- usage: counted as 0, the reply kept, as in the Bot ----------------------------------------

BAD_USAGE: dict[str, tuple[dict[str, Any], str]] = {
    "a word": ({"prompt_tokens": "lots", "completion_tokens": 1, "total_tokens": 2}, "'lots'"),
    "negative cached": (
        {
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "total_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": -5},
        },
        "-5",
    ),
    "not finite": ({"prompt_tokens": 1e999, "completion_tokens": 1, "total_tokens": 2}, "inf"),
    "negative": ({"prompt_tokens": -3, "completion_tokens": 1, "total_tokens": 2}, "-3"),
}


@pytest.mark.parametrize("case", list(BAD_USAGE))
def test_a_chat_reply_with_unusable_token_counts_is_kept_and_counted_as_zero(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 23's one-protocol rule: the Bot counts such a count as 0 and warns; so does the
    # wrapper, instead of losing a good answer for its accounting.
    usage, shown = BAD_USAGE[case]
    with RawUpstream() as upstream:
        upstream.json(completion(TEXT, usage))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        reply = client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        client.close()
    assert reply.choices[0].message.content == "hi"
    assert reply.usage is not None
    details = reply.usage.prompt_tokens_details
    counts = (reply.usage.prompt_tokens, details.cached_tokens if details else None)
    assert 0 in counts
    assert reply.usage.completion_tokens == 1
    assert any("usage count that is no number" in r.getMessage() and shown in r.getMessage()
               for r in caplog.records)  # fmt: skip


async def test_the_bot_reads_the_same_reply_the_same_way(caplog: pytest.LogCaptureFixture) -> None:
    # The other door, on the very bytes the wrapper test above gets: answer kept, 0 counted.
    from bot_toolsearch import Bot

    with RawUpstream() as upstream:
        upstream.json(completion(TEXT, BAD_USAGE["a word"][0]))
        async with openai.AsyncOpenAI(
            base_url=upstream.base_url, api_key="k", max_retries=0
        ) as client:
            bot = Bot(SETTINGS, [], client=client)
            result = await bot.ask("Weather in Oslo?")
            await bot.aclose()
    assert result.reply == "hi"
    assert result.stats.prompt_tokens == 0
    assert any("usage count that is no number" in r.getMessage() for r in caplog.records)


async def test_a_responses_reply_with_an_unusable_count_is_kept_async(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = {
        "id": "r",
        "object": "response",
        "status": "completed",
        "output": [],
        "usage": {"input_tokens": "lots", "output_tokens": 1, "total_tokens": 1},
    }
    with RawUpstream() as upstream:
        upstream.json(body)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        reply = await client.responses.create(model="m", input="hi", tools=responses_tools())
        await client.close()
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (0, 1)
    assert any("usage count that is no number" in r.getMessage() for r in caplog.records)


def test_a_usage_that_is_no_object_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with RawUpstream() as upstream:
        upstream.json(completion(TEXT, 5))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        reply = client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        client.close()
    assert reply.choices[0].message.content == "hi"
    assert reply.usage is None
    assert any("usage that is no object" in r.getMessage() for r in caplog.records)


# --- cut streams ---------------------------------------------------------------------------


def sse(*chunks: object, done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_chunks(text: str) -> list[dict[str, Any]]:
    return [chunk({"role": "assistant", "content": ""}), chunk({"content": text})]


def search_round() -> bytes:
    """A whole round calling ``tool_search`` (the wrapper hides it and asks again)."""
    call = {
        "index": 0,
        "id": "call_s",
        "type": "function",
        "function": {"name": "tool_search", "arguments": '{"query": "select:get_weather"}'},
    }
    return sse(chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls"))


CUT_STREAMS: dict[str, tuple[bytes, str]] = {
    "no finish, no done": (sse(*text_chunks("Sunny in"), done=False), "text/event-stream"),
    "no finish, done": (sse(*text_chunks("Sunny in")), "text/event-stream"),
    "nothing at all": (b"", "text/event-stream"),
    "html": (b"<html><body>upstream timed out</body></html>", "text/html"),
    "garbage": (b"\x00\xffnot an event stream\r\n\r\n", "text/event-stream"),
    "garbage data": (sse(*text_chunks("Sunny"), done=False) + b"data: ][\n\n", "text/event-stream"),
    "cut mid json": (
        sse(*text_chunks("Sunny"), done=False) + b'data: {"id": "chatcmpl-s", "choi',
        "text/event-stream",
    ),
    "cut mid json, ended": (
        sse(*text_chunks("Sunny"), done=False) + b'data: {"id": "chatcmpl-s", "choi\n\n',
        "text/event-stream",
    ),
}


def _drain_sync(stream: Any, seen: list[Any]) -> None:
    for item in stream:
        seen.append(item)


async def _drain_async(stream: Any, seen: list[Any]) -> None:
    async for item in stream:
        seen.append(item)


def _stream_sync(client: openai.OpenAI, seen: list[Any]) -> None:
    stream = client.chat.completions.create(
        model="m",
        messages=USER,
        tools=chat_tools(),
        stream=True,
    )
    _drain_sync(stream, seen)


async def _stream_async(client: openai.AsyncOpenAI, seen: list[Any]) -> None:
    stream = await client.chat.completions.create(
        model="m",
        messages=USER,
        tools=chat_tools(),
        stream=True,
    )
    await _drain_async(stream, seen)


def _finishes(seen: list[Any]) -> list[str]:
    return [c.choices[0].finish_reason for c in seen if c.choices and c.choices[0].finish_reason]


@pytest.mark.parametrize("hidden", [False, True], ids=["final round", "hidden round"])
@pytest.mark.parametrize("case", list(CUT_STREAMS))
def test_a_cut_stream_raises_an_api_error_sync(case: str, hidden: bool) -> None:
    raw, kind = CUT_STREAMS[case]
    with RawUpstream() as upstream:
        if hidden:
            upstream.stream(search_round())
        upstream.stream(raw, kind)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        seen: list[Any] = []
        with pytest.raises(openai.APIError) as info:
            _stream_sync(client, seen)
        client.close()
        assert len(upstream.requests) == 1 + hidden
    assert isinstance(info.value, openai.APIConnectionError | ModelReplyError)
    assert _finishes(seen) == []  # never reported as a finished stream


@pytest.mark.parametrize("hidden", [False, True], ids=["final round", "hidden round"])
@pytest.mark.parametrize("case", list(CUT_STREAMS))
async def test_a_cut_stream_raises_an_api_error_async(case: str, hidden: bool) -> None:
    raw, kind = CUT_STREAMS[case]
    with RawUpstream() as upstream:
        if hidden:
            upstream.stream(search_round())
        upstream.stream(raw, kind)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        seen: list[Any] = []
        with pytest.raises(openai.APIError) as info:
            await _stream_async(client, seen)
        await client.close()
    assert isinstance(info.value, openai.APIConnectionError | ModelReplyError)
    assert _finishes(seen) == []


def test_a_cut_stream_says_so() -> None:
    with RawUpstream() as upstream:
        upstream.stream(sse(*text_chunks("Sunny in"), done=False))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        seen: list[Any] = []
        with pytest.raises(openai.APIConnectionError, match="ended before its finish_reason"):
            _drain_sync(
                client.chat.completions.create(
                    model="m", messages=USER, tools=chat_tools(), stream=True
                ),
                seen,
            )
        client.close()
    # The text that did arrive was passed on as it came.
    assert "".join(c.choices[0].delta.content or "" for c in seen if c.choices) == "Sunny in"


def test_a_finished_stream_without_done_still_ends_well() -> None:
    with RawUpstream() as upstream:
        upstream.stream(sse(*text_chunks("Sunny."), chunk({}, "stop"), done=False))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        seen: list[Any] = []
        _drain_sync(
            client.chat.completions.create(
                model="m", messages=USER, tools=chat_tools(), stream=True
            ),
            seen,
        )
        client.close()
    assert _finishes(seen) == ["stop"]


def test_a_malformed_chunk_raises_model_reply_error() -> None:
    bad = chunk({"content": "x"}) | {"choices": [{"index": 0, "delta": None}]}
    with RawUpstream() as upstream:
        upstream.stream(sse(*text_chunks("a"), bad, chunk({}, "stop")))
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0),
            settings=SETTINGS,
        )
        with pytest.raises(ModelReplyError, match=r"choices\[0\]\.delta is null"):
            _drain_sync(
                client.chat.completions.create(
                    model="m", messages=USER, tools=chat_tools(), stream=True
                ),
                [],
            )
        client.close()
