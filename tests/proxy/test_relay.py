"""The relay stage against hostile upstreams on 127.0.0.1 (issue 44): the proxy's one retry,
its timeout and the statuses it answers, on the rounds posted with the SDK's HTTP client
directly (`bot_toolsearch._wrap.direct`); and an answer nothing changed reaches the client
as the upstream's own bytes.

Each case sends two requests: the first finds the SDK's platform headers through the SDK's
``post``, the second takes the direct path.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._proxy.relay import _sdk_kwargs
from bot_toolsearch._wrap import direct
from tests.proxy._raw import Handler, Reply, Script, answer, post, reset, served, stall, status
from tests.wrap._tools import chat_tools

USER = {"role": "user", "content": "hi"}
PAYLOAD = {"model": "m", "messages": [USER], "tools": chat_tools()}
ERROR = {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": "busy"}}
# An upstream's own spelling: its key order, spacing, an extra field, text not in ASCII.
OWN = (
    b'{"object":"chat.completion", "id":"chatcmpl-7","created":1,  "model":"m",\n'
    b' "choices":[{"index":0,"finish_reason":"stop","logprobs":null,'
    b'"message":{"content":"S\xc3\xb8r, 21 \xc2\xb0C","role":"assistant","refusal":null}}],'
    b'"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12},'
    b'"x_provider":{"region":"eu"}}'
)


def _second(*handlers: Handler, timeout: float | None = None) -> tuple[Reply, Script]:
    """The proxy's answer to a second request, the first answered ``OWN``."""
    script = Script(answer(OWN), *handlers)
    try:
        with served(ProxyApp(script.upstream.url, timeout=timeout)) as port:
            first = post(port, "/v1/chat/completions", PAYLOAD)
            assert first.status == 200, first
            script.upstream.received.clear()
            script.times.clear()
            second = post(port, "/v1/chat/completions", PAYLOAD)
        assert _direct(script.upstream.url)
        return second, script
    finally:
        script.upstream.close()


def _direct(url: str) -> bool:
    """Whether a round went to ``url`` by the direct path (its template was made)."""
    made = [t for ts in list(direct._TEMPLATES.values()) for t in ts.values()]
    return any(str(t.url).startswith(url) for t in made)


def _error(reply: Reply, status_code: int) -> dict[str, Any]:
    assert reply.status == status_code, reply
    error = reply.json()["error"]
    assert isinstance(error, dict)
    return error


def test_an_answer_nothing_changed_is_the_upstreams_bytes() -> None:
    reply, _ = _second(answer(OWN))
    assert reply.status == 200
    assert reply.body == OWN
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["content-length"] == str(len(OWN))


def test_an_answer_the_wrapper_changed_is_dumped_again() -> None:
    search = {
        "id": "chatcmpl-8",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "tool_search", "arguments": '{"query": "mail"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }
    reply, _ = _second(answer(search), answer(OWN))
    assert reply.status == 200
    assert reply.body != OWN
    body = reply.json()
    assert body["usage"]["total_tokens"] == 18  # summed over the hidden round and the last
    assert body["choices"][0]["message"]["content"] == "Sør, 21 °C"
    assert body["x_provider"] == {"region": "eu"}


def test_a_429_is_retried_after_its_retry_after() -> None:
    reply, script = _second(status(429, ERROR, "retry-after-ms: 300\r\n"), answer(OWN))
    assert reply.status == 200
    assert reply.body == OWN
    assert script.retry_counts == ["0", "1"]
    assert script.times[1] - script.times[0] >= 0.25


def test_a_429_twice_is_the_upstreams_429() -> None:
    reply, script = _second(
        status(429, ERROR, "retry-after-ms: 10\r\n"),
        status(429, ERROR, "retry-after-ms: 10\r\n"),
        answer(OWN),
    )
    assert _error(reply, 429) == ERROR["error"]
    assert script.retry_counts == ["0", "1"]


def test_a_500_twice_is_a_502_and_the_third_answer_is_never_asked_for() -> None:
    reply, script = _second(status(500, ERROR), status(500, ERROR), answer(OWN))
    error = _error(reply, 502)
    assert error["type"] == "upstream_error"
    assert "slow down" in error["message"]
    assert script.retry_counts == ["0", "1"]


def test_a_500_then_200_is_the_answer() -> None:
    reply, script = _second(status(500, ERROR), answer(OWN))
    assert reply.body == OWN
    assert script.retry_counts == ["0", "1"]


def test_a_400_is_the_upstreams_400_not_retried() -> None:
    reply, script = _second(status(400, ERROR), answer(OWN))
    assert _error(reply, 400) == ERROR["error"]
    assert script.retry_counts == ["0"]


def test_an_upstream_that_stalls_past_the_timeout_is_a_502() -> None:
    release = threading.Event()
    try:
        reply, script = _second(stall(release), stall(release), timeout=1.0)
    finally:
        release.set()
    error = _error(reply, 502)
    assert error["type"] == "upstream_error"
    assert script.retry_counts[0] == "0"


def test_a_reset_connection_is_retried() -> None:
    reply, script = _second(reset, answer(OWN))
    assert reply.body == OWN
    assert script.retry_counts == ["0", "1"]


def test_a_reset_twice_is_a_502() -> None:
    reply, script = _second(reset, reset)
    assert _error(reply, 502)["type"] == "upstream_error"
    assert script.retry_counts == ["0", "1"]


def test_a_malformed_200_is_a_502() -> None:
    reply, script = _second(answer(b'{"id": "chatcmpl-1", "choices": ['))
    error = _error(reply, 502)
    assert error["type"] == "upstream_error"
    assert script.retry_counts == ["0"]
    json.dumps(error)  # a JSON error, never a traceback


SDK_BODIES: list[dict[str, Any]] = [
    {},
    {"model": "m", "messages": [], "tools": []},
    {"model": "m", "timeout": 1, "stream": True, "vendor_flag": {"a": 1}},
    {"extra_body": {"x": 1}, "extra_headers": {"h": "v"}, "extra_other": 2, "input": "hi"},
    {"reasoning_effort": "low", "timeout": None, "zzz": None, "messages": [1]},
]


@pytest.mark.parametrize("body", SDK_BODIES)
@pytest.mark.parametrize("chat", [True, False])
def test_a_body_as_sdk_arguments_in_one_pass(body: dict[str, Any], chat: bool) -> None:
    """`_sdk_kwargs` gives what reading the body twice gave: the fields the SDK names (less
    ``timeout`` and its ``extra_*`` options), the others as ``extra_body``, in body order."""
    from bot_toolsearch._proxy.relay import _CHAT_PARAMS, _DROPPED_FIELDS, _RESPONSES_PARAMS

    known = _CHAT_PARAMS if chat else _RESPONSES_PARAMS
    dropped = _DROPPED_FIELDS
    expected = {
        k: v
        for k, v in body.items()
        if k in known and not k.startswith("extra_") and k not in dropped
    }
    extra = {k: v for k, v in body.items() if k not in known and k not in dropped}
    if extra:
        expected["extra_body"] = extra
    found = _sdk_kwargs(body, known)
    assert found == expected
    assert list(found) == list(expected)
    assert list(found.get("extra_body", {})) == list(extra)
