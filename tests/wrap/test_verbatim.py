"""The final Chat Completions reply is offered as the upstream's own bytes only when nothing
in it changed (issue 44): one round, its calls and usage as they came, read strictly.

The real ``openai`` SDK talks to a raw socket upstream on 127.0.0.1 that answers byte for
byte; `VERBATIM` is set as the proxy sets it.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._wrap.verbatim import VERBATIM, Verbatim

from ._raw_upstream import RawUpstream
from ._tools import chat_tools

SETTINGS = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
USER = [{"role": "user", "content": "Weather in Oslo?"}]
USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


def reply(message: dict[str, Any], usage: object = USAGE) -> bytes:
    """A completion as an upstream might spell it (its own key order, spacing, extras)."""
    body = {
        "choices": [{"finish_reason": "stop", "index": 0, "message": message, "logprobs": None}],
        "created": 1,
        "id": "chatcmpl-9",
        "model": "m",
        "object": "chat.completion",
        "usage": usage,
        "provider_extra": {"région": "eu"},
    }
    return json.dumps(body, indent=1, ensure_ascii=False).encode()


def call(name: str, arguments: object = "{}", call_id: object = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


TEXT = reply({"role": "assistant", "content": "Sunny, 21 °C."})


async def _answer(*bodies: bytes, messages: list[Any] = USER) -> tuple[Any, bytes | None]:
    """The wrapped ``create``'s answer and what `Verbatim` holds for it."""
    sink = Verbatim()
    VERBATIM.set(sink)
    with RawUpstream() as upstream:
        for body in bodies:
            upstream.json(body)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        try:
            answer = await client.chat.completions.create(
                model="m", messages=messages, tools=chat_tools()
            )
        finally:
            await client.close()
            VERBATIM.set(None)
    return answer, sink.body_of(answer)


async def test_a_text_answer_is_the_upstreams_bytes() -> None:
    answer, body = await _answer(TEXT)
    assert body == TEXT
    assert answer.choices[0].message.content == "Sunny, 21 °C."


async def test_a_call_of_the_callers_own_tool_is_the_upstreams_bytes() -> None:
    raw = reply({"role": "assistant", "content": None, "tool_calls": [call("get_weather")]})
    # the first request loads nothing: get_weather is deferred, so the model searches first
    search = reply(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("tool_search", json.dumps({"query": "select:get_weather"}))],
        }
    )
    answer, body = await _answer(search, raw)
    assert answer.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert body is None  # two rounds: the usage is summed, so the bytes are not the answer


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (
            "a count as text",
            reply({"role": "assistant", "content": "ok"}, {**USAGE, "total_tokens": "7"}),
        ),
        (
            "a negative count",
            reply({"role": "assistant", "content": "ok"}, {**USAGE, "total_tokens": -1}),
        ),
        (
            "a call without an id",
            reply(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [call("tool_search", call_id=None)],
                }
            ),
        ),
        (
            "arguments as an object",
            reply(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [call("get_weather", {"city": "Oslo"})],
                }
            ),
        ),
        (
            "a call the wrapper answers",
            reply({"role": "assistant", "content": None, "tool_calls": [call("no_such_tool")]}),
        ),
    ],
)
async def test_a_reply_the_wrapper_changed_is_never_offered(name: str, raw: bytes) -> None:
    answer, body = await _answer(raw, TEXT, TEXT)
    assert answer is not None
    assert body is None, name


async def test_nothing_is_kept_without_a_sink() -> None:
    with RawUpstream() as upstream:
        upstream.json(TEXT)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        try:
            answer = await client.chat.completions.create(
                model="m", messages=USER, tools=chat_tools()
            )
        finally:
            await client.close()
    assert VERBATIM.get() is None
    assert answer.choices[0].message.content == "Sunny, 21 °C."


def test_body_of_is_only_for_the_offered_object() -> None:
    sink = Verbatim()
    assert sink.body_of(None) is None
    first, second = object(), object()
    sink.offer(first, b"{}")
    assert sink.body_of(first) == b"{}"
    assert sink.body_of(second) is None
    sink.drop()
    assert sink.body_of(first) is None


async def test_a_loaded_tools_call_is_the_upstreams_bytes() -> None:
    # get_weather was called earlier in this ask (the history resent), so it is loaded
    history = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call("get_weather", call_id="c0")]},
        {"role": "tool", "tool_call_id": "c0", "content": "rain"},
    ]
    raw = reply({"role": "assistant", "content": None, "tool_calls": [call("get_weather")]})
    answer, body = await _answer(raw, messages=history)
    assert answer.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert body == raw
