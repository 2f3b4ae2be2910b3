"""``item_reference`` ids of the search items the proxy made up (issue 36 item 2), raw HTTP.

A client that stores its conversation upstream (the Vercel AI SDK, ``store`` at its default)
resends our ``tool_search_call``/``tool_search_output`` items as references to their ids. The
upstream never issued them; the proxy keeps no state. A reference must mean what the item
resent whole means, on any worker or host, and a hostile id is refused before the upstream.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._wrap.item_ids import CALL_PREFIX, OUTPUT_PREFIX, _digest
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests.conformance.conftest import TOOL_SEARCH_ON
from tests.proxy._raw import post, served

FORECAST = {
    "type": "function",
    "name": "get_weather_forecast",
    "description": "Forecast the weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "defer_loading": True,
}
TOOLS: list[Any] = [{"type": "tool_search"}, FORECAST]
USER = {"role": "user", "content": "Weather in Oslo?"}


@pytest.fixture
def strict() -> Any:
    with ScriptedOpenAIServer(refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()


def _first_turn(port: int) -> list[dict[str, Any]]:
    reply = post(port, "/v1/responses", {"model": "m", "input": [USER], "tools": TOOLS})
    assert reply.status == 200, reply.body
    output: list[dict[str, Any]] = reply.json()["output"]  # type: ignore[assignment]
    assert [item["type"] for item in output] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]
    return output


def test_a_reference_means_the_item_resent_whole_on_another_worker(
    strict: ScriptedOpenAIServer,
) -> None:
    strict.script(
        call("tool_search", query="select:get_weather_forecast"),
        call("get_weather_forecast", city="Oslo"),
        text("Sunny."),
        text("Sunny."),
    )
    with served(ProxyApp(strict.base_url, settings=TOOL_SEARCH_ON)) as port:
        searched, loaded, forecast = _first_turn(port)
    assert searched["id"].startswith(CALL_PREFIX)
    assert loaded["id"].startswith(OUTPUT_PREFIX)
    result = {"type": "function_call_output", "call_id": forecast["call_id"], "output": "Sunny"}
    by_reference = [
        USER,
        {"type": "item_reference", "id": searched["id"]},
        {"type": "item_reference", "id": loaded["id"]},
        forecast,
        result,
    ]
    whole = [USER, searched, loaded, forecast, result]
    # Another proxy (another worker, another host): nothing of the first turn is kept.
    with served(ProxyApp(strict.base_url, settings=TOOL_SEARCH_ON)) as port:
        for given in (by_reference, whole):
            reply = post(port, "/v1/responses", {"model": "m", "input": given, "tools": TOOLS})
            assert reply.status == 200, reply.body
    *_, referenced, resent = strict.requests
    assert referenced.body == resent.body
    assert [item.get("type", "message") for item in referenced.messages] == [
        "message",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
    ]
    assert referenced.tool_names == ["get_weather_forecast"]


def _packed(prefix: str, payload: bytes) -> str:
    packed = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    return f"{prefix}{_digest(prefix, packed)}{packed}"


HOSTILE = {
    "tampered digest": CALL_PREFIX + "A" * 16 + "eJyrVkrOSYxPzVGyUlAqSS0u0VEqzy_KTlGqBQB",
    "not base64": _packed(CALL_PREFIX, b"") + "!!!",
    "not deflate": _packed(OUTPUT_PREFIX, b"plain text"),
    "a deflate bomb": _packed(OUTPUT_PREFIX, zlib.compress(b"[" + b" " * 1_000_000 + b"]")),
    "not an object": _packed(CALL_PREFIX, zlib.compress(b"[1, 2]")),
    "no call_id": _packed(CALL_PREFIX, zlib.compress(b'{"arguments": {}}')),
    "too long": CALL_PREFIX + "A" * 5000,
    "a plain id": "ts_call_1",
}


@pytest.mark.parametrize("ref", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_reference_that_does_not_read_back_is_refused_before_the_upstream(
    strict: ScriptedOpenAIServer, ref: str
) -> None:
    given = [USER, {"type": "item_reference", "id": ref}]
    with served(ProxyApp(strict.base_url, settings=TOOL_SEARCH_ON)) as port:
        reply = post(port, "/v1/responses", {"model": "m", "input": given, "tools": TOOLS})
    assert reply.status == 400, reply.body
    message = str(reply.json()["error"]["message"])  # type: ignore[index]
    assert "input[1]: item_reference" in message
    assert "names a tool search item bot-toolsearch made" in message
    assert not strict.requests  # nothing reached the upstream
