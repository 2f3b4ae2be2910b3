"""The proxy's one HTTP client to its upstream, shared by every client it serves: the SDK's
own class (httpx or httpx2, by SDK version), with two of its defaults turned off.

- Redirects are never followed: a 30x is the upstream's answer, relayed as such; following
  it would take the request, body and all, to whatever host its ``Location`` names.
- Cookies are never kept: a cookie the upstream sets answers one client's request, and a
  jar shared by every client would send it with the next client's.

Its connections run on asyncio's own transports, not through anyio
(`bot_toolsearch._proxy.upstream_stream`).

And the answer to a model call (Chat Completions, Responses, Messages; streamed or not) is
bounded by its size, `MAX_ANSWER_BYTES`: the proxy reads it whole (or relays it as it comes),
and an upstream that sends without end would otherwise fill the proxy's memory within the
call's deadline. Past the bound the read fails with `AnswerTooLarge` (the client gets 502,
or a stream's error event). An answer on any other path (passed through whole,
`bot_toolsearch._proxy.forward`) has a larger bound, `MAX_PASS_THROUGH_BYTES`, since a
file's content may be large.
"""

from __future__ import annotations

import http.cookiejar
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import openai

from .upstream_stream import use_asyncio_streams

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_PASS_THROUGH_BYTES",
    "AnswerTooLarge",
    "bound_answer",
    "failure_text",
    "upstream_http",
    "without_platform_headers",
]

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer to a model call the proxy reads (bytes): 128 choices of a long answer
fit; an endless one does not."""

MAX_PASS_THROUGH_BYTES = 1024 * 1024 * 1024
"""The largest answer on any other path the proxy reads (bytes): a file's content fits
(OpenAI's files are at most 512 MB); an endless answer does not."""

_MODEL_CALLS = ("/chat/completions", "/responses", "/messages")

# The HTTP library the installed SDK is built on (httpx for openai 2, httpx2 for openai 3).
_HTTP: Any = next(
    sys.modules[base.__module__.partition(".")[0]]
    for base in openai.DefaultAsyncHttpxClient.__mro__
    if base.__module__.partition(".")[0] not in ("openai", "builtins")
)


class AnswerTooLarge(Exception):
    """The upstream's answer to a model call is larger than `MAX_ANSWER_BYTES`."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"the upstream's answer is larger than {cap} bytes")


class _Bounded(_HTTP.AsyncByteStream):  # type: ignore[misc]
    """A response body that fails once more than ``cap`` bytes have come."""

    def __init__(self, inner: Any, cap: int) -> None:
        self._inner, self._cap = inner, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._cap:
                raise AnswerTooLarge(self._cap)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


_SDK_TELEMETRY = ("X-Stainless-Async",)
"""The SDK's telemetry headers besides its platform's (`without_platform_headers`); its
``X-Stainless-Retry-Count`` and ``X-Stainless-Read-Timeout`` stay (the SDK adds them to
each request unless the call itself removes them, which would take the direct path away)."""


def without_platform_headers(client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
    """A copy of ``client`` that sends none of the SDK's platform headers (the OS, the CPU,
    the Python and SDK versions) nor its async flag: sent by the proxy,
    they describe the proxy's host, not the client, to every upstream request (and each costs the
    proxy a few µs a request to send)."""
    names = [*client.platform_headers(), *_SDK_TELEMETRY]
    omitted: dict[str, Any] = {name: openai.Omit() for name in names}
    return client.with_options(default_headers=omitted)


def failure_text(exc: BaseException) -> str:
    """What a client is told of a failed upstream exchange: the bound it passed, else the
    failure's kind (never its text, which may quote the upstream or a key)."""
    return str(exc) if isinstance(exc, AnswerTooLarge) else type(exc).__name__


def bound_answer(response: Any, cap: int | None = None) -> None:
    """Bound the body of ``response`` (its headers in, its body unread) by ``cap`` bytes
    (default `MAX_ANSWER_BYTES` for a model call, else `MAX_PASS_THROUGH_BYTES`): at once
    when its ``Content-Length`` says more, else as it is read.

    Raises:
        AnswerTooLarge: ``Content-Length`` is larger than ``cap``.
    """
    if cap is None:
        model = response.request.url.path.endswith(_MODEL_CALLS)
        cap = MAX_ANSWER_BYTES if model else MAX_PASS_THROUGH_BYTES
    length = response.headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > cap:
        raise AnswerTooLarge(cap)
    response.stream = _Bounded(response.stream, cap)


_NO_COOKIES = http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
"""No domain may set a cookie, nor have one sent (the standard library's own rule)."""


def upstream_http(
    on_request: Sequence[Callable[[Any], None]], on_response: Sequence[Callable[[Any], None]]
) -> Any:
    """The client, calling each of ``on_request`` with every request it sends and each of
    ``on_response`` with every response as its headers arrive (then the answer's bound is
    set, `bound_answer`): one event hook each way, however many callables."""
    requested, answered = tuple(on_request), tuple(on_response)

    async def request_hook(request: Any) -> None:
        for call in requested:
            call(request)

    async def response_hook(response: Any) -> None:
        for call in answered:
            call(response)
        bound_answer(response)

    client = openai.DefaultAsyncHttpxClient(
        event_hooks={"request": [request_hook], "response": [response_hook]},
        follow_redirects=False,
    )
    client.cookies.jar.set_policy(_NO_COOKIES)
    use_asyncio_streams(client)
    return client
