"""``POST /v1/messages`` of the proxy: Anthropic's Messages API, with tool search, over any
Anthropic-compatible upstream (``serve --upstream-api messages``).

The route is the Messages adapter's transport: the body is read within ``--max-body`` and
checked (``--max-tools``), made a plan (`bot_toolsearch._wrap.messages`; a new tool list gets
its catalog in the ``index`` pool, its search index only once the upstream answers 2xx), and
the plan's rounds go upstream as JSON (``POST {upstream}/messages``) through the shared round
driver. The client's ``x-api-key`` (or, under the proxy's own client keys, the operator's) and
``anthropic-version`` go on; ``anthropic-beta`` goes on without the tool-search flags, which a
backend without tool search refuses. A request with no tool to search goes on made ordinary
(`ordinary_body`), its answer relayed as it comes. A streamed request gets Anthropic's event
stream once the first round is in: ``message_start`` and ``ping`` at once, the rest when the
last round is read; a failure after that is an ``error`` event. Every error is Anthropic's
JSON shape; an upstream 4xx comes back with its own status and body, an upstream that fails
is 502. The whole call stays within ``--timeout``, and a client that leaves cancels it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._services.threads import POOLS, PoolBusy
from bot_toolsearch._transports.messages_events import error_event, stream_events
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.messages import MessagesPlan, messages_plan, ordinary_body
from bot_toolsearch._wrap.observe import RoundHook
from bot_toolsearch._wrap.plan import Pending
from bot_toolsearch._wrap.rounds import drive

from .admission import ADMITTED
from .exchange import note_body, note_route
from .request import Disconnected as _Left
from .request import until_disconnect as _until_left

__all__ = ["MESSAGES_PATH", "MessagesRoute"]

logger = logging.getLogger("bot_toolsearch")

MESSAGES_PATH = "/messages"
"""The route's path under ``/v1``."""
_BETA_DROPPED = ("tool-search", "advanced-tool-use")
"""``anthropic-beta`` flags of tool search: the proxy does it, the upstream never sees them."""
_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
}
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class _Failed(Exception):
    """An answer of the route's own: status and message (Anthropic's error shape)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class _UpstreamStatus(Exception):
    """The upstream answered 4xx: its status and body go back to the client as they are."""

    def __init__(self, status: int, content: bytes) -> None:
        super().__init__(status)
        self.status, self.content = status, content


class MessagesRoute:
    """``POST /v1/messages`` over an Anthropic-compatible upstream.

    Args:
        upstream: the upstream's base URL (``…/v1``); requests go to ``{upstream}/messages``.
        http: the proxy's HTTP client (the SDK's own class, ``httpx`` or ``httpx2``: its
            connection pool and timing hooks).
        engine: the wrapper engine whose settings and tool-list cache the route shares.
        timeout: seconds the whole call may take.
        max_body: the largest body in bytes (413 past it).
        max_tools: the most tools in one request (400 past it).
        on_round: the observer of each round (metrics, headers, access log).
    """

    def __init__(
        self,
        upstream: str,
        http: Any,
        engine: Engine,
        *,
        timeout: float,
        max_body: int,
        max_tools: int,
        on_round: RoundHook | None,
    ) -> None:
        self._url = upstream.rstrip("/") + MESSAGES_PATH
        self._http = http
        self._engine = engine
        self._timeout = timeout
        self._max_body = max_body
        self._max_tools = max_tools
        self._on_round = on_round

    async def __call__(self, receive: _Receive, send: _Send, headers: Mapping[str, str]) -> None:
        """Serve one request (its headers lower-cased)."""
        note_route("messages")
        started: list[bool] = [False]

        async def tracked(message: MutableMapping[str, Any]) -> None:
            started[0] = started[0] or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._serve(receive, tracked, headers)
        except _Left:
            return
        except (_UpstreamStatus, _Failed) as exc:
            if isinstance(exc, _UpstreamStatus) and not started[0]:
                await _reply(send, exc.status, exc.content)
            elif not started[0]:
                await _error(send, exc.status, str(exc))
            else:  # the stream has begun: its last event says what went wrong
                text = str(exc) if isinstance(exc, _Failed) else f"upstream HTTP {exc.status}"
                await send({"type": "http.response.body", "body": _closing(text)})

    async def _serve(self, receive: _Receive, send: _Send, headers: Mapping[str, str]) -> None:
        media = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise _Failed(415, "the body must be JSON (Content-Type: application/json)")
        raw = await _read_body(receive, headers, self._max_body)
        body = _parse(raw)
        self._check(body)
        note_body(body)
        out_headers = self._headers(headers)
        stream = body.get("stream") is True
        try:
            plan = await _until_left(receive, self._plan(body))
        except ToolNotPermittedError as exc:
            raise _Failed(403, str(exc)) from None
        if plan is None:
            await self._ordinary(receive, send, body, out_headers)
            return
        await self._rounds(receive, send, plan, out_headers, stream)

    def _check(self, body: Mapping[str, Any]) -> None:
        if "stream" in body and not isinstance(body["stream"], bool | None):
            raise _Failed(400, "stream: Input should be a valid boolean")
        if not isinstance(body.get("messages"), list):
            raise _Failed(400, "messages: Field required (an array)")
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise _Failed(400, "tools: Input should be a valid list")
        if isinstance(tools, list) and len(tools) > self._max_tools:
            raise _Failed(
                400,
                f"tools has {len(tools)} entries; this proxy accepts at most "
                f"{self._max_tools} (serve --max-tools)",
            )

    async def _plan(self, body: Mapping[str, Any]) -> MessagesPlan | None:
        """The plan, made in the ``index`` pool when the tool list is new."""
        engine = self._engine
        settings = engine.snapshot()
        plan = messages_plan(body, settings, engine.cache, build=False, on_round=self._on_round)
        if not isinstance(plan, Pending):
            return plan
        make = functools.partial(
            messages_plan, body, settings, engine.cache, on_round=self._on_round
        )
        try:
            built = await POOLS.index.run(make, deadline=self._timeout)
        except (PoolBusy, TimeoutError):
            busy = "the proxy is busy indexing new tool lists (serve --index-builds)"
            raise _Failed(503, busy) from None
        assert not isinstance(built, Pending)
        return built

    def _headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        out = {"content-type": "application/json"}
        version = headers.get("anthropic-version")
        if version:
            out["anthropic-version"] = version
        beta = [
            flag.strip()
            for flag in headers.get("anthropic-beta", "").split(",")
            if flag.strip() and not any(word in flag for word in _BETA_DROPPED)
        ]
        if beta:
            out["anthropic-beta"] = ",".join(beta)
        admitted = ADMITTED.get()
        if admitted.keyed:  # the client's key is the proxy's: its upstream key goes on
            upstream = admitted.upstream_key(None)
            if upstream:
                out["x-api-key"] = upstream
        else:
            key = headers.get("x-api-key")
            if key:
                out["x-api-key"] = key
            auth = headers.get("authorization")
            if auth:
                out["authorization"] = auth
        bad = [k for k, v in out.items() if not (v.isascii() and v.isprintable())]
        if bad:
            raise _Failed(401, f"the {bad[0]} header is not printable ASCII")
        return out

    async def _post(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            return await self._http.post(self._url, content=data, headers=dict(headers))
        except Exception as exc:  # any transport failure of the SDK's HTTP library
            logger.warning("proxy: upstream request failed: %s", type(exc).__name__)
            raise _Failed(502, f"upstream failed: {type(exc).__name__}") from None

    async def _ordinary(
        self, receive: _Receive, send: _Send, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> None:
        """A request with no tool to search: sent on made ordinary, its answer relayed."""
        plain = ordinary_body(body, self._engine.snapshot())
        data = json.dumps(plain, ensure_ascii=False).encode()
        request = self._http.build_request("POST", self._url, content=data, headers=dict(headers))

        async def open_() -> Any:
            try:
                return await self._http.send(request, stream=True)
            except Exception as exc:  # any transport failure of the SDK's HTTP library
                raise _Failed(502, f"upstream failed: {type(exc).__name__}") from None

        response = await _until_left(receive, asyncio.wait_for(open_(), self._timeout))
        try:
            if response.status_code >= 500:
                await response.aread()
                raise _Failed(502, f"upstream failed with HTTP {response.status_code}")
            kind = response.headers.get("content-type", "application/json")
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(b"content-type", kind.encode("latin-1"))],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def _rounds(
        self,
        receive: _Receive,
        send: _Send,
        plan: MessagesPlan,
        headers: Mapping[str, str],
        stream: bool,
    ) -> None:
        """The plan's rounds through the shared driver; the answer as JSON or as events."""
        accepted = False

        async def upstream(body: Mapping[str, Any]) -> Any:
            nonlocal accepted
            response = await self._post(body, headers)
            if response.status_code >= 500:
                raise _Failed(502, f"upstream failed with HTTP {response.status_code}")
            if response.status_code >= 400:
                raise _UpstreamStatus(response.status_code, response.content)
            try:
                reply = response.json()
            except ValueError:
                reply = None
            if not isinstance(reply, dict) or not isinstance(reply.get("content"), list):
                raise _Failed(502, "the upstream's answer is not a Messages API message")
            if not accepted:
                accepted = True
                plan.accept()
                if stream:
                    await _start_stream(send, reply)
            return reply

        try:
            answer = await _until_left(
                receive, asyncio.wait_for(drive(plan, upstream), self._timeout)
            )
        except TimeoutError:
            raise _Failed(
                502, f"upstream failed: no answer within {self._timeout:g} s (serve --timeout)"
            ) from None
        except PoolBusy as exc:
            raise _Failed(503, f"the proxy is busy: {exc}") from None
        if not stream:
            await _reply(send, 200, json.dumps(answer, ensure_ascii=False).encode())
            return
        for chunk in stream_events(answer)[2:]:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _start_stream(send: _Send, first: Mapping[str, Any]) -> None:
    """The stream's head, once the first round is in: its ``message_start`` and a ``ping``."""
    head = stream_events({**first, "content": []})[:2]
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    await send({"type": "http.response.body", "body": b"".join(head), "more_body": True})


def _closing(message: str) -> bytes:
    return error_event("api_error", message)


def _body(status: int, message: str) -> bytes:
    kind = _KINDS.get(status, "api_error")
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


async def _error(send: _Send, status: int, message: str) -> None:
    await _reply(send, status, _body(status, message))


async def _reply(send: _Send, status: int, raw: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Failed(400, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _Failed(400, "the body must be a JSON object")
    return body


async def _read_body(receive: _Receive, headers: Mapping[str, str], limit: int) -> bytes:
    """The whole body, refused with 413 past ``limit`` bytes (announced or received)."""
    length = headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > limit:
        raise _Failed(413, f"the body is larger than {limit} bytes (serve --max-body)")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Left
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Failed(413, f"the body is larger than {limit} bytes (serve --max-body)")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
