"""The directory's JSON encoded once and spliced into each upstream body (issue 44): every
body is byte for byte what the SDK's own encoder makes of it, with the splice or without.

The wire cases run the real SDK against a raw recording upstream on 127.0.0.1
(`tests.proxy._raw`, which keeps the exact bytes received; the scripted server keeps only
the parsed body): a wrapped async client (the direct path) and the proxy against the same
request sent by a wrapped sync client (the SDK's own ``post`` and encoder).
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import math
import pickle
from collections.abc import Callable
from typing import Any

import openai
import pytest
from openai._utils._json import openapi_dumps
from openai.types.chat import ChatCompletionMessage

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._wrap import direct, encoded
from bot_toolsearch._wrap.encoded import EncodedText, dumps, encoded_text, joined
from tests.proxy._raw import Script, answer, post, served
from tests.wrap._tools import chat_tools

PLACEHOLDER = encoded._PLACEHOLDER
# A directory with everything JSON escapes or passes through: quotes, backslashes, control
# characters, DEL, line separators, text outside ASCII and outside the BMP.
DIRECTORY = (
    '<available_deferred_tools>\nget_weather: "quoted" \\ back\\slash\t\x00\x1f\x7f'
    "\u2028\u2029 Søren — 天气 🌦\n</available_deferred_tools>\n\nUse tool_search."
)


def _chat(directory: str, *, user: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "developer", "content": "Mind the rules."},
            {"role": "system", "content": directory},
            {"role": "user", "content": user},
        ],
        "tools": [{"type": "function", "function": {"name": "tool_search"}}],
        **extra,
    }


def _plain(value: Any) -> Any:
    """``value`` with every `EncodedText` a plain ``str``, as before this module."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return str(value) if isinstance(value, EncodedText) else value


BODIES = {
    "plain": _chat(DIRECTORY),
    "unicode and floats": _chat(
        DIRECTORY,
        user="naïve 🌦 \x01 \u2028 \\u0000",
        temperature=0.1,
        top_p=1e16,
        seed=2**70,
        metadata={"k": None, "b": True, "t": (1, 2)},
    ),
    "the directory in the user's message": _chat(DIRECTORY, user=DIRECTORY),
    "the directory's JSON in the user's message": _chat(DIRECTORY, user=json.dumps(DIRECTORY)),
    "the placeholder as a message": _chat(DIRECTORY, user=PLACEHOLDER),
    "the placeholder quoted in a message": _chat(DIRECTORY, user=f'"{PLACEHOLDER}"'),
    "the placeholder as a key": _chat(DIRECTORY, metadata={PLACEHOLDER: "x"}),
    "keys JSON makes strings": _chat(DIRECTORY, logit_bias={1: 2, 2.5: 1, None: 0, False: 1}),
    "an SDK model and a datetime": {
        **_chat(DIRECTORY),
        "messages": [
            *_chat(DIRECTORY)["messages"],
            ChatCompletionMessage(role="assistant", content="Sø 🌦"),
        ],
        "metadata": {"at": datetime.datetime(2026, 1, 2, 3, 4, 5)},
    },
    "instructions alone": {"model": "m", "input": "hi", "instructions": DIRECTORY},
    "instructions after the caller's": {
        "model": "m",
        "input": [{"role": "user", "content": DIRECTORY}],
        "instructions": ('Be "brief" 🌦\n\x02', DIRECTORY),
    },
    "no directory": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "a directory after the first user message": {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": DIRECTORY}],
    },
}


def _carrying(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with its directory as the plans put it (`encoded_text`, `joined`)."""
    out = dict(body)
    instructions = out.get("instructions")
    if isinstance(instructions, tuple):
        out["instructions"] = joined(instructions[0], encoded_text(instructions[1]))
    elif instructions == DIRECTORY:
        out["instructions"] = encoded_text(DIRECTORY)
    if "messages" in out:
        out["messages"] = [
            {**m, "content": encoded_text(DIRECTORY)}
            if isinstance(m, dict) and m.get("content") == DIRECTORY and m["role"] == "system"
            else m
            for m in out["messages"]
        ]
    return out


@pytest.mark.parametrize("name", BODIES)
def test_a_body_is_the_sdks_encoding_byte_for_byte(name: str) -> None:
    body = BODIES[name]
    carrying = _carrying(body)
    plain = _plain(carrying)
    assert dumps(carrying) == openapi_dumps(plain) == openapi_dumps(carrying)


def test_the_sdks_encoder_made_once_encodes_as_openapi_dumps() -> None:
    # `dumps` encodes the rest of a body with it (the fast path taken with openai 3).
    assert encoded._encode is not None
    for body in BODIES.values():
        plain = _plain(_carrying(body))
        assert encoded._encode(plain).encode() == openapi_dumps(plain)


def test_the_carried_bytes_are_spliced_in() -> None:
    # A made-up encoding shows where the splice happens (and that nothing else is encoded).
    text = EncodedText(DIRECTORY)
    text.json = b'"SPLICED"'
    assert dumps(_chat(text)) == openapi_dumps(_chat("SPLICED"))
    assert dumps({"instructions": text, "input": "x"}) == b'{"instructions":"SPLICED","input":"x"}'


@pytest.mark.parametrize(
    "where", ["a message", "a key", "the input"], ids=["message", "key", "input"]
)
def test_a_body_holding_the_placeholder_is_encoded_whole(where: str) -> None:
    text = EncodedText(DIRECTORY)
    text.json = b'"SPLICED"'
    body = (
        _chat(text, user=PLACEHOLDER)
        if where == "a message"
        else _chat(text, metadata={PLACEHOLDER: 1})
        if where == "a key"
        else {"instructions": text, "input": PLACEHOLDER}
    )
    assert dumps(body) == openapi_dumps(body)
    assert b"SPLICED" not in dumps(body)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (math.nan, ValueError),
        (math.inf, ValueError),
        (object(), TypeError),
        ("\ud800 lone", UnicodeEncodeError),
        ({(1, 2): "tuple key"}, TypeError),
    ],
    ids=["nan", "inf", "object", "surrogate", "tuple-key"],
)
def test_what_the_sdk_refuses_is_refused_the_same_way(bad: Any, error: type[Exception]) -> None:
    body = _carrying(_chat(DIRECTORY, user=bad))
    with pytest.raises(error) as sdk:
        openapi_dumps(_plain(body))
    with pytest.raises(error) as ours:
        dumps(body)
    assert str(ours.value) == str(sdk.value)


@pytest.mark.parametrize(
    "copier",
    [
        copy.copy,
        copy.deepcopy,
        *(
            functools.partial(lambda p, v: pickle.loads(pickle.dumps(v, protocol=p)), p)
            for p in range(pickle.HIGHEST_PROTOCOL + 1)
        ),
    ],
)
def test_a_copy_is_the_plain_text(copier: Callable[[Any], Any]) -> None:
    made = copier(encoded_text(DIRECTORY))
    assert type(made) is str
    assert made == DIRECTORY


def test_a_text_the_sdk_cannot_encode_is_carried_plain() -> None:
    assert type(encoded_text("a \udfff b")) is str
    assert type(joined("\ud800", encoded_text(DIRECTORY))) is str
    assert joined("\ud800", encoded_text(DIRECTORY)) == "\ud800" + DIRECTORY


def test_a_text_is_encoded_once_and_the_cache_is_bounded() -> None:
    first = encoded_text(DIRECTORY)
    assert encoded_text(DIRECTORY) is first
    assert encoded_text(DIRECTORY[:1] + DIRECTORY[1:]) is first  # equal text, another object
    assert first == DIRECTORY
    assert first.json == openapi_dumps(DIRECTORY)
    for i in range(encoded._CACHE_SIZE * 2):
        encoded_text(f"directory {i}")
    assert len(encoded._KNOWN) <= encoded._CACHE_SIZE
    assert encoded_text(DIRECTORY) is not first  # evicted, made again
    assert encoded_text(DIRECTORY).json == first.json


# -- on the wire ---------------------------------------------------------------------------

SETTINGS = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
USER = {"role": "user", "content": f"weather? {DIRECTORY} {PLACEHOLDER}"}
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}
SEARCH = {
    **COMPLETION,
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "tool_search", "arguments": '{"query":"weather"}'},
                    }
                ],
            },
        }
    ],
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "m",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


def _bodies(script: Script) -> list[bytes]:
    return [raw.partition(b"\r\n\r\n")[2] for raw in script.upstream.received]


def _sync_bodies(api: str, request: dict[str, Any], *answers: object) -> list[bytes]:
    """What a wrapped sync client (the SDK's ``post``, its encoder) sends for ``request``."""
    script = Script(*(answer(a) for a in answers))
    inner = openai.OpenAI(base_url=f"{script.upstream.url}/v1", api_key="k")
    client = wrap_openai(inner, settings=SETTINGS)
    try:
        resource = client.chat.completions if api == "chat" else client.responses
        resource.create(**request)
    finally:
        client.close()
        script.upstream.close()
    return _bodies(script)


async def _async_bodies(api: str, request: dict[str, Any], *answers: object) -> list[bytes]:
    """What a wrapped async client sends for ``request`` by the direct path."""
    script = Script(
        answer(COMPLETION if api == "chat" else RESPONSE), *(answer(a) for a in answers)
    )
    inner = openai.AsyncOpenAI(base_url=f"{script.upstream.url}/v1", api_key="k")
    client = wrap_openai(inner, settings=SETTINGS)
    try:
        # The first call finds the SDK's platform headers; the direct path needs them.
        if api == "chat":
            await inner.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
            await client.chat.completions.create(**request)
        else:
            await inner.responses.create(model="m", input="x")
            await client.responses.create(**request)
    finally:
        await client.close()
        script.upstream.close()
    assert inner in direct._TEMPLATES  # the rounds took the direct path
    return _bodies(script)[1:]


async def test_wrap_openai_sends_the_sdks_bytes_in_every_round() -> None:
    request = {
        "model": "m",
        "messages": [{"role": "system", "content": "Be terse 🌦."}, USER],
        "tools": chat_tools(),
    }
    sent = await _async_bodies("chat", request, SEARCH, COMPLETION)
    assert sent == _sync_bodies("chat", request, SEARCH, COMPLETION)
    assert len(sent) == 2  # the hidden search round, then the answer
    for body in sent:
        assert body == openapi_dumps(json.loads(body))
        directory = json.loads(body)["messages"][1]["content"]
        assert directory.startswith("<available_deferred_tools>")
        assert isinstance(encoded._KNOWN.get(directory), EncodedText)


@pytest.mark.parametrize("instructions", [None, 'Be "terse" 🌦\n'])
async def test_the_responses_instructions_are_the_sdks_bytes(instructions: str | None) -> None:
    request: dict[str, Any] = {"model": "m", "input": [USER], "tools": chat_tools()}
    request["tools"] = [{"type": "function", **t["function"]} for t in request["tools"]]
    if instructions is not None:
        request["instructions"] = instructions
    sent = await _async_bodies("responses", request, RESPONSE)
    assert sent == _sync_bodies("responses", request, RESPONSE)
    (body,) = sent
    assert body == openapi_dumps(json.loads(body))
    sent_instructions = json.loads(body)["instructions"]
    assert sent_instructions.startswith(f"{instructions}\n\n" if instructions else "<available")
    directory = sent_instructions[len(f"{instructions}\n\n") if instructions else 0 :]
    assert directory.startswith("<available_deferred_tools>")
    assert isinstance(encoded._KNOWN.get(directory), EncodedText)


def test_the_proxy_sends_the_sdks_bytes() -> None:
    payload = {"model": "m", "messages": [USER], "tools": chat_tools()}
    script = Script(answer(COMPLETION), answer(SEARCH), answer(COMPLETION))
    try:
        with served(ProxyApp(script.upstream.url)) as port:
            for _ in range(2):  # the first finds the SDK's platform headers
                reply = post(port, "/v1/chat/completions", payload)
                assert reply.status == 200, reply
    finally:
        script.upstream.close()
    sent = _bodies(script)
    assert len(sent) == 3  # the first request, then the second's search round and answer
    assert _direct(script.upstream.url)
    for body in sent:
        assert body == openapi_dumps(json.loads(body))
        directory = json.loads(body)["messages"][0]["content"]
        assert directory.startswith("<available_deferred_tools>")
        assert isinstance(encoded._KNOWN.get(directory), EncodedText)


def _direct(url: str) -> bool:
    """Whether a round went to ``url`` by the direct path (its template was made)."""
    made = [t for ts in list(direct._TEMPLATES.values()) for t in ts.values()]
    return any(str(t.url).startswith(url) for t in made)
