"""``with_raw_response`` and ``with_streaming_response`` of the wrapped resources.

Frameworks reach ``create`` through these too: the OpenAI Agents SDK streams Responses with
``responses.with_streaming_response.create``, LangChain asks ``with_raw_response`` for
headers. They are the SDK's own classes built over the wrapped resource, so each of their
methods (``create``, ``parse``, ``retrieve`` ...) is the wrapped resource's method of the same
name, called with the SDK's raw-response header, which `split_raw` takes off. A request the
wrapper passes through (no tools, tool search off) goes to the given client with the header,
HTTP details and all. A request with tool search may take several upstream requests, so there
is no one HTTP response to show: `handled` gives a stand-in whose ``parse()`` returns what the
call returns (the final answer, or the caller's stream), ``request_id`` is ``None`` and
``headers`` is empty.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import openai

__all__ = ["RAW_RESPONSE_HEADER", "handled", "split_raw"]

RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
"""The header the SDK's raw-response wrappers add to a call (``"true"`` or ``"stream"``)."""

_OVERRIDE_CAST_TO = "____stainless_override_cast_to"

# The ``Headers`` class of the HTTP library the installed SDK is built on (httpx for openai 2,
# httpx2 for openai 3): the package declares only ``openai``, so it imports neither by name.
_HEADERS: Any = next(
    sys.modules[base.__module__.partition(".")[0]].Headers
    for base in openai.DefaultHttpxClient.__mro__
    if base.__module__.partition(".")[0] not in ("openai", "builtins")
)


def split_raw(kwargs: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The raw-response mode of a call (``None``, ``"true"`` or ``"stream"``) and its
    keyword arguments without the SDK's raw-response headers."""
    headers = kwargs.get("extra_headers")
    if not isinstance(headers, Mapping) or RAW_RESPONSE_HEADER not in headers:
        return None, dict(kwargs)
    mode = str(headers[RAW_RESPONSE_HEADER])
    rest = {k: v for k, v in headers.items() if k not in (RAW_RESPONSE_HEADER, _OVERRIDE_CAST_TO)}
    plain = {k: v for k, v in kwargs.items() if k != "extra_headers"}
    if rest:
        plain["extra_headers"] = rest
    return mode, plain


class _Handled:
    """The stand-in for the HTTP response of a call the wrapper handled."""

    request_id: str | None = None
    status_code = 200

    def __init__(self, result: Any) -> None:
        self._result = result
        self.headers = _HEADERS()

    def parse(self) -> Any:
        """What the call returned."""
        return self._result

    def close(self) -> None:
        """Close the caller's stream, if the call returned one."""
        close = getattr(self._result, "close", None)
        if callable(close):
            close()


class _AsyncHandled(_Handled):
    async def parse(self) -> Any:  # async, as AsyncAPIResponse.parse
        """What the call returned."""
        return self._result

    async def close(self) -> None:  # type: ignore[override]  # async, as AsyncAPIResponse
        """Close the caller's stream, if the call returned one."""
        close = getattr(self._result, "close", None)
        if callable(close):
            await close()


def handled(mode: str | None, result: Any, *, is_async: bool) -> Any:
    """``result`` as the raw-response ``mode`` asks: itself, or a stand-in response (an async
    ``with_streaming_response`` gets async ``parse``/``close``, as the SDK's)."""
    if mode is None:
        return result
    if is_async and mode == "stream":
        return _AsyncHandled(result)
    return _Handled(result)
