"""The latency of each upstream HTTP request, by API: from sending it to its response headers.

Hooks on the proxy's own HTTP client (the SDK's ``httpx`` class), so every request is timed,
hidden rounds and retries included; a request that never gets an answer is not.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["UpstreamTimer", "api_of"]


def api_of(path: str) -> str:
    """``chat``, ``responses`` or ``other``: a closed set, fit for a metric label."""
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses") or "/responses/" in path:
        return "responses"
    return "other"


class UpstreamTimer:
    """Calls ``observe(api, seconds)`` for each request the proxy's HTTP client sends, when its
    response headers arrive: `sent` and `answered` are the client's request and response
    hooks (`bot_toolsearch._proxy.upstream_http`)."""

    __slots__ = ("_observe", "_sent")

    def __init__(self, observe: Callable[[str, float], None]) -> None:
        self._observe = observe
        self._sent: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    def sent(self, request: Any) -> None:
        self._sent[request] = time.perf_counter()

    def answered(self, response: Any) -> None:
        request = response.request
        started = self._sent.pop(request, None)
        if started is not None:
            self._observe(api_of(request.url.path), time.perf_counter() - started)
