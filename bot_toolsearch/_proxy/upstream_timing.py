"""The latency of each upstream HTTP request, by API: from sending it to its response headers.

Event hooks on the proxy's own HTTP client (the SDK's ``httpx`` class), so every request is
timed, hidden rounds and retries included; a request that never gets an answer is not.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["api_of", "time_upstream"]


def api_of(path: str) -> str:
    """``chat``, ``responses`` or ``other``: a closed set, fit for a metric label."""
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses") or "/responses/" in path:
        return "responses"
    return "other"


def time_upstream(http: Any, observe: Callable[[str, float], None]) -> None:
    """Call ``observe(api, seconds)`` for each request ``http`` (an httpx-style async client)
    sends, when its response headers arrive."""
    sent: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def on_request(request: Any) -> None:
        sent[request] = time.perf_counter()

    async def on_response(response: Any) -> None:
        request = response.request
        started = sent.pop(request, None)
        if started is not None:
            observe(api_of(request.url.path), time.perf_counter() - started)

    hooks = dict(http.event_hooks)
    hooks["request"] = [*hooks.get("request", ()), on_request]
    hooks["response"] = [*hooks.get("response", ()), on_response]
    http.event_hooks = hooks
