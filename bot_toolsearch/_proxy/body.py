"""The body stage: a request's body read within its deadline and limits, and the key probe
that keeps a large body unread until the upstream has taken the request's key.

A body is read whole or refused, never cut: larger than ``--max-body`` (announced or
received) is 413; slower than ``--read-timeout`` is 408 and past the bound of body bytes held
at once 503, both closing the connection; a whole body past ``--max-in-flight`` is 429
(`bot_toolsearch._proxy.reading`). A body larger than `KEY_PROBE_BYTES` whose upstream key is
not known good is read, and parsed, only once the upstream took the key (`KeyProbe`): its 401
or 403 is then the answer, and nothing of the body is parsed or indexed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

from bot_toolsearch._wrap.native import count_named

from .admission import ClientGate
from .keys import KnownKeys, bearer
from .limits import RETRY_AFTER, BodyBytes, InFlight
from .reading import BodiesFull, BodyTimeout, InFlightFull
from .relay import send_json_bytes
from .request import Disconnected, Receive, Refused, Request, until_disconnect

__all__ = ["KEY_PROBE_BYTES", "BodyStage", "KeyProbe", "drain", "forwarded", "read_body"]

_T = TypeVar("_T")

KEY_PROBE_BYTES = 1024 * 1024
"""Bodies larger than this are parsed only once the upstream key is known good: else the
upstream is asked first (``GET /models``), and its 401 or 403 is the answer (`KnownKeys`)."""
_NATIVE_PROBE_TOOLS = 256
"""Most tools a request may name in the dialect's structures (a ``defer_loading`` or
namespace list not parsed before, a resent ``tool_search_output``) before the upstream is
asked whether the key is good (`KeyProbe.ask`), whatever the body's size: reading them is
work."""
_REFUSAL_BYTES = 65536
"""The most of a refusal's body the key probe reads, keeps and relays."""
_FORWARDED = frozenset({"openai-organization", "openai-project", "openai-beta"})
"""Client headers worth passing upstream (organisation, project, beta flags)."""


def forwarded(headers: Mapping[str, str]) -> dict[str, str]:
    """The client headers of `_FORWARDED` in ``headers`` (ASCII values only), in their
    order; most requests carry none, found without reading each header (issue 44)."""
    if _FORWARDED.isdisjoint(headers):
        return {}
    return {k: v for k, v in headers.items() if k in _FORWARDED and v.isascii()}


class KeyProbe:
    """Whether the upstream takes a key, asked (``GET {upstream}/models``) before a large
    body is parsed, and remembered (`KnownKeys`).

    Args:
        http: the proxy's HTTP client.
        upstream: the upstream's base URL.
        timeout: seconds the question may take.
    """

    def __init__(self, http: Any, upstream: str, timeout: float) -> None:
        self._http, self._upstream, self._timeout = http, upstream, timeout
        self.known = KnownKeys()

    async def ask(self, digest: bytes, headers: Mapping[str, str]) -> tuple[int, bytes] | None:
        """The upstream's 401 or 403 answer to the key of ``digest`` (`key_digest`: status,
        JSON body), remembered a few seconds, else ``None`` (a 2xx, or any other answer: the
        request itself will tell); ``headers``, the ones that carry the key in the request's
        dialect.
        OpenAI's routes send ``Authorization: Bearer``, Messages ``x-api-key`` and
        ``anthropic-version``.
        """
        refused = self.known.refused(digest)
        if refused is not None:
            return refused
        try:  # the whole question within ``timeout``, and at most `_REFUSAL_BYTES` read
            async with asyncio.timeout(self._timeout):
                status, content = await self._question(headers)
        except Exception:  # the request itself reports an unreachable or stuck upstream
            return None
        if 200 <= status < 300:
            self.known.accept(digest)
        elif status in (401, 403):
            answer = content if _is_json(content) else None
            if answer is None:
                error = {"message": "the upstream refused the API key", "type": "upstream_error"}
                answer = json.dumps({"error": error}).encode()
            self.known.refuse(digest, status, answer[:_REFUSAL_BYTES])
            return status, answer[:_REFUSAL_BYTES]
        return None

    async def _question(self, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """``GET {upstream}/models``: its status, and for a 401 or 403 the start of its body
        (nothing else of an answer is read)."""
        request = self._http.build_request(
            "GET", f"{self._upstream}/models", headers=dict(headers), timeout=self._timeout
        )
        response = await self._http.send(request, stream=True)
        try:
            content = b""
            if response.status_code in (401, 403):
                async for chunk in response.aiter_bytes():
                    content += chunk
                    if len(content) > _REFUSAL_BYTES:
                        break
            return response.status_code, content
        finally:
            await response.aclose()

    async def many_tools(self, request: Request) -> bool:
        """Whether to go on with a request whose tool-search dialect names many tools (a
        ``native`` list not parsed before, tools a resent ``tool_search_output`` loads): past
        `_NATIVE_PROBE_TOOLS` of them under a key not known good, the upstream is asked first;
        ``False`` when it refused the key and its answer was sent."""
        if self.known.ok(request.key_digest):
            return True
        listed, resent = count_named(request.body, "chat" if request.chat else "responses")
        return await self.naming(request, resent + (listed if request.native else 0))

    async def naming(self, request: Request, named: int) -> bool:
        """Whether to go on with a request whose tool-search dialect names ``named`` tools
        that must be read before its plan exists (every route's rule): past
        `_NATIVE_PROBE_TOOLS` under a key not known good, the upstream is asked first;
        ``False`` when it refused the key and its answer was sent."""
        if named <= _NATIVE_PROBE_TOOLS or self.known.ok(request.key_digest):
            return True
        probe = self.ask(request.key_digest, request.auth)
        refused = await until_disconnect(request.receive, probe)
        if refused is None:
            return True
        await send_json_bytes(request.send, *refused)
        return False


class BodyStage:
    """The body of a request, read under the proxy's limits.

    Args:
        probe: the key probe.
        max_body: the largest body in bytes.
        read_timeout: seconds a client may take to send it.
        body_bytes: the bound of body bytes held at once.
        in_flight: the bound of requests in flight.
    """

    def __init__(
        self,
        probe: KeyProbe,
        *,
        max_body: int,
        read_timeout: float,
        body_bytes: BodyBytes,
        in_flight: InFlight,
    ) -> None:
        self.probe = probe
        self._max_body, self._read_timeout = max_body, read_timeout
        self._body_bytes, self._in_flight = body_bytes, in_flight

    async def read(self, request: Request) -> bool:
        """The body of a tool-searched request into ``request.raw``, with the key that goes
        upstream (``request.key``) and the client headers that go with it (``extra``);
        ``False`` when the upstream refused the key and its answer was sent.

        Raises:
            Refused: the body is not JSON (415), the key not printable ASCII (401), the body
                too large (413).
            Disconnected: the client left while sending it.
        """
        headers = request.headers
        media = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise Refused(415, "the body must be JSON (Content-Type: application/json)")
        key = request.admitted.upstream_key(bearer(headers))
        if key is not None and not (key.isascii() and key.isprintable()):
            raise Refused(401, "the API key is not printable ASCII", code="invalid_api_key")
        request.use_key(key)
        request.extra = forwarded(headers)
        request.auth = {**request.extra, "authorization": f"Bearer {key or 'unset'}"}
        return await self.take(request)

    async def take(self, request: Request) -> bool:
        """The body into ``request.raw`` under the key probe's rule, for any route: the key
        (``request.key``) is asked about with the headers that carry it (``request.auth``);
        ``False`` when the upstream refused it and its answer was sent.

        Raises:
            Refused: the body is too large (413) or its length not a number (400).
            Disconnected: the client left while sending it.
        """
        raw = await self._body(request)
        if raw is None:
            return False
        request.raw = raw
        return True

    async def _body(self, request: Request) -> bytes | None:
        """The request body; ``None`` when the upstream refused the key and its answer was
        sent. A body announced (or found) larger than `KEY_PROBE_BYTES` under a key not known
        good is read, and parsed, only once the upstream took the key: the question is asked
        once the body has started (a request that sends none costs no upstream call), and
        while it is asked the proxy reads on, at most `KEY_PROBE_BYTES` more, so a client that
        leaves cancels it."""
        receive, digest, known = request.receive, request.key_digest, self.probe.known
        length = request.headers.get("content-length", "").strip()
        announced = int(length) if length.isdigit() else 0
        start: list[bytes] = []
        if KEY_PROBE_BYTES < announced <= self._max_body and not known.ok(digest):
            ended = False
            while not any(start) and not ended:  # the body has started
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise Disconnected
                start.append(message.get("body", b""))
                ended = not message.get("more_body", False)
            probe = self.probe.ask(digest, request.auth)
            refused, more, ended = await _while_reading(receive, probe, KEY_PROBE_BYTES, ended)
            if refused is not None:
                del start, more
                if not ended:
                    await drain(receive)  # read and dropped, so the client reads the answer
                await send_json_bytes(request.send, *refused)
                return None
            start += more
            if ended:
                start.append(b"")
        raw = await read_body(receive, request.headers, self._max_body, start)
        if announced or len(raw) <= KEY_PROBE_BYTES or known.ok(digest):
            return raw
        refused = await until_disconnect(receive, self.probe.ask(digest, request.auth))
        if refused is not None:
            await send_json_bytes(request.send, *refused)
            return None
        return raw

    def refusal(self, exc: BodyTimeout | BodiesFull | InFlightFull) -> Refused:
        """The answer to a body the reader refused (`bot_toolsearch._proxy.reading`)."""
        if isinstance(exc, BodyTimeout):
            return Refused(
                408,
                f"the request body did not arrive within {self._read_timeout:g} s"
                " (serve --read-timeout)",
                code="request_timeout",
                close=True,
            )
        if isinstance(exc, BodiesFull):
            return Refused(
                503,
                f"the proxy is busy: it holds {self._body_bytes.limit} bytes of request bodies;"
                f" retry after {RETRY_AFTER} s",
                "server_error",
                code="server_busy",
                retry_after=RETRY_AFTER,
                close=True,
            )
        if isinstance(exc.gate, ClientGate):
            return exc.gate.refused()
        return Refused(
            429,
            f"more than {self._in_flight.limit} requests in flight (serve --max-in-flight);"
            f" retry after {RETRY_AFTER} s",
            "rate_limit_error",
            code="too_many_requests",
            retry_after=RETRY_AFTER,
        )


async def _while_reading(
    receive: Receive, work: Awaitable[_T], keep: int, ended: bool
) -> tuple[_T, list[bytes], bool]:
    """``work``'s result while the body is read on (unless it ``ended``), at most ``keep``
    bytes of it; cancelled, raising `Disconnected`, when the client leaves meanwhile:
    ``(result, the chunks read, whether the body ended)``."""
    task = asyncio.ensure_future(work)
    chunks: list[bytes] = []
    size = 0
    try:
        while not task.done() and not ended and size < keep:
            message = asyncio.ensure_future(receive())
            await asyncio.wait({task, message}, return_when=asyncio.FIRST_COMPLETED)
            if not message.done():
                message.cancel()
                await asyncio.gather(message, return_exceptions=True)
                break
            received = message.result()
            if received["type"] == "http.disconnect":
                raise Disconnected
            chunks.append(received.get("body", b""))
            size += len(chunks[-1])
            ended = not received.get("more_body", False)
        return await task, chunks, ended
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        del task


async def read_body(
    receive: Receive, headers: Mapping[str, str], limit: int, start: Sequence[bytes] = ()
) -> bytes:
    """The whole request body; ``start``, its chunks read already (ending with an empty one
    when the body has ended).

    Raises:
        Refused: 413 when it is (or announces to be) larger than ``limit``; it is never cut.
        Disconnected: the client left while sending it.
    """
    length = headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise Refused(400, "the Content-Length header is not a number")
        if int(length) > limit:
            raise Refused(413, _too_large(limit), code="request_too_large")
    chunks = list(start)
    size = sum(map(len, chunks))
    if size > limit:
        raise Refused(413, _too_large(limit), code="request_too_large")
    if start and not start[-1]:
        return b"".join(chunks)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise Refused(413, _too_large(limit), code="request_too_large")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def drain(receive: Receive) -> None:
    """Read the request body to its end, keeping none of it.

    Raises:
        Disconnected: the client left while sending it.
    """
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        if not message.get("more_body", False):
            return


def _too_large(limit: int) -> str:
    return f"the request body is larger than this proxy accepts ({limit} bytes, serve --max-body)"


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True
