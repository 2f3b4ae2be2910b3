"""Rounds sent as plain JSON, one reply's work bounded and off the event loop (issue 27).

The real ``openai`` SDK talks to a raw socket upstream on 127.0.0.1 that answers byte for
byte. Before, one model response of thousands of ``tool_search`` calls was answered in full,
on the event loop, each round re-walked by the SDK's typed-dict transform, and every call and
result went into the next request.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from types import FrameType
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._protocol.messages import TOO_MANY_SEARCHES
from bot_toolsearch._wrap.chat import HIDDEN_CALLS_KEPT
from bot_toolsearch._wrap.send import split

from ._raw_upstream import RawUpstream
from ._tools import chat_tools

SETTINGS = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
USER = [{"role": "user", "content": "Weather in Oslo?"}]


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def searches(count: int, *, same_id: bool = False) -> dict[str, Any]:
    calls = [
        {
            "id": "call_same" if same_id else f"call_{i}",
            "type": "function",
            "function": {"name": "tool_search", "arguments": json.dumps({"query": f"weather {i}"})},
        }
        for i in range(count)
    ]
    return completion({"role": "assistant", "content": None, "tool_calls": calls})


TEXT = completion({"role": "assistant", "content": "It is sunny."})


@pytest.mark.parametrize("same_id", [False, True])
def test_a_round_of_thousands_of_searches_is_capped_and_bounded(same_id: bool) -> None:
    with RawUpstream() as upstream:
        upstream.json(searches(2000, same_id=same_id))
        upstream.json(TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        reply = client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        first, second = (json.loads(body) for body in upstream.requests)
    assert reply.choices[0].message.content == "It is sunny."
    added = second["messages"][len(first["messages"]) :]
    assistant, results = added[0], added[1:]
    assert len(assistant["tool_calls"]) == HIDDEN_CALLS_KEPT
    assert len(results) == HIDDEN_CALLS_KEPT
    assert len({r["tool_call_id"] for r in results}) == HIDDEN_CALLS_KEPT
    limit = SETTINGS.skills.tool_search_max_searches
    refused = TOO_MANY_SEARCHES.format(limit=limit)
    assert sum(not r["content"].startswith(refused) for r in results) == limit
    assert "1936 more calls of this response were left out" in results[-1]["content"]
    assert len(json.dumps(added)) < 64 * 1024


def test_the_cap_is_a_setting() -> None:
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_max_searches": 2}}
    )
    with RawUpstream() as upstream:
        upstream.json(searches(5))
        upstream.json(TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=settings
        )
        client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        second = json.loads(upstream.requests[1])
    results = [m for m in second["messages"] if m.get("role") == "tool"]
    refused = [r for r in results if r["content"].startswith("Error: not searched")]
    assert (len(results), len(refused)) == (5, 3)


async def test_a_large_reply_is_read_off_the_event_loop(caplog: pytest.LogCaptureFixture) -> None:
    with RawUpstream() as upstream:
        upstream.json(searches(200))
        upstream.json(TEXT)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
            await client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        await client.close()
    capped = [r for r in caplog.records if "tool_search calls; answered" in r.getMessage()]
    assert len(capped) == 1
    assert capped[0].thread != threading.get_ident()  # read in a worker thread


async def test_rounds_skip_the_sdk_typed_dict_transform() -> None:
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(300)
    ]
    seen: list[str] = []

    def profile(frame: FrameType, event: str, _: object) -> None:
        code = frame.f_code
        if event == "call" and "transform" in code.co_name and "openai" in code.co_filename:
            seen.append(code.co_name)

    with RawUpstream() as upstream:
        upstream.json(searches(1))
        upstream.json(TEXT)
        client = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        sys.setprofile(profile)
        try:
            await client.chat.completions.create(
                model="m", messages=[*history, *USER], tools=chat_tools(), temperature=0
            )
        finally:
            sys.setprofile(None)
        await client.close()
        first, second = (json.loads(body) for body in upstream.requests)
    assert seen == []
    assert first["temperature"] == 0
    assert first["messages"][1:301] == history  # after the directory
    assert len(second["messages"]) == len(first["messages"]) + 2


def test_split_makes_the_request_options_create_makes() -> None:
    parts = split(
        {
            "model": "m",
            "seed": openai.NOT_GIVEN,
            "user": openai.omit,
            "tool_choice": None,
            "extra_headers": {"X-A": "1"},
            "extra_query": {"q": "1"},
            "extra_body": {"more": True},
            "timeout": 5,
        }
    )
    assert parts is not None
    body, options = parts
    assert body == {"model": "m", "tool_choice": None}
    assert options["params"] == {"q": "1"}
    assert options["extra_json"] == {"more": True}
    assert options["timeout"] == 5
    assert options["headers"]["X-A"] == "1"
    assert split({"model": "m", "response_format": dict}) is None


def test_extra_options_still_reach_the_upstream() -> None:
    with RawUpstream() as upstream:
        upstream.json(TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        client.chat.completions.create(
            model="m", messages=USER, tools=chat_tools(), extra_body={"custom_field": 7}
        )
        body = json.loads(upstream.requests[0])
    assert body["custom_field"] == 7


def test_a_reply_that_does_not_validate_is_still_read_the_sdks_lenient_way() -> None:
    odd = completion({"role": "assistant", "content": "ok"})
    odd["usage"] = {"prompt_tokens": "lots", "completion_tokens": 1, "total_tokens": 1}
    with RawUpstream() as upstream:
        upstream.json(odd)
        upstream.json(TEXT)
        client = wrap_openai(
            openai.OpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        odd_reply = client.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        reply = client.chat.completions.with_raw_response.create(
            model="m", messages=USER, tools=chat_tools()
        )
    assert odd_reply.choices[0].message.content == "ok"
    assert reply.parse().choices[0].message.content == "It is sunny."


async def test_a_copy_per_call_starts_with_the_platform_headers_found_once() -> None:
    """The proxy copies the client per API key; each copy looked up the SDK's platform
    headers again, in a worker thread, before its first request."""
    with RawUpstream() as upstream:
        upstream.json(TEXT)
        upstream.json(TEXT)
        root = wrap_openai(
            openai.AsyncOpenAI(base_url=upstream.base_url, api_key="k"), settings=SETTINGS
        )
        first = root.with_options(api_key="a")
        assert first._platform is None  # nothing found yet
        await first.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        second = root.with_options(api_key="b")
        assert second._platform is not None
        await second.chat.completions.create(model="m", messages=USER, tools=chat_tools())
        headers = list(upstream.requests)
        await root.close()
    assert len(headers) == 2
