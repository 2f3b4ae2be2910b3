"""``POST /v1/messages`` of the proxy: Anthropic's Messages API, with tool search, over any
Anthropic-compatible upstream (``serve --upstream-api messages``).

The route is the Messages adapter's transport: the body is read within ``--max-body``, a large
one only once the upstream has taken the key (the OpenAI routes' key probe,
`bot_toolsearch._proxy.body`), and checked (``--max-tools``), made a plan
(`bot_toolsearch._wrap.messages`; a new tool list gets its catalog in the ``index`` pool, its
search index only once the upstream answers 2xx), and the plan's rounds go upstream as JSON
(``POST {upstream}/messages``) through the shared round driver. A streamed request streams each
round (``"stream": true``) through the shared stream driver (`bot_toolsearch._wrap.stream_driver`,
its Messages dialect `MessagesRounds`): the client gets Anthropic's event stream once the first
round's headers are in, the final round's text deltas as the upstream sends them, one message
id, usage summed; a failure after that is an ``error`` event. The client's ``x-api-key`` (or,
under the proxy's own client keys, the operator's) and ``anthropic-version`` go on;
``anthropic-beta`` goes on without the tool-search flags, which a backend without tool search
refuses. A request with no tool to search goes on made ordinary (`ordinary_body`), its answer
relayed as it comes. Every error is Anthropic's JSON shape; an upstream 4xx comes
back with its own status and body, an upstream that fails is 502. The whole call stays within
``--timeout``, and a client that leaves cancels it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any, TypeVar

from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._services.threads import POOLS, PoolBusy
from bot_toolsearch._transports.messages_events import (
    MAX_EVENT_BYTES,
    EventTooLarge,
    SseReader,
    error_event,
    message_events,
    sse,
)
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.messages import MessagesPlan, messages_plan, ordinary_body
from bot_toolsearch._wrap.messages_streaming import MessagesRounds
from bot_toolsearch._wrap.observe import RoundHook
from bot_toolsearch._wrap.plan import Pending
from bot_toolsearch._wrap.rounds import drive
from bot_toolsearch._wrap.stream_driver import AsyncRoundStream

from .admission import ADMITTED
from .body import BodyStage
from .exchange import note_body, note_route
from .request import Disconnected as _Left
from .request import Refused, Request
from .request import until_disconnect as _until_left
from .upstream_http import failure_text

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
_T = TypeVar("_T")


class _Failed(Exception):
    """An answer of the route's own: status and message (Anthropic's error shape)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class _Answered(Exception):
    """The key probe's refusal was the answer: nothing more to send."""


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
        max_tools: the most tools in one request (400 past it).
        on_round: the observer of each round (metrics, headers, access log).
        body: the body stage, whose key probe keeps a large body unread until the upstream
            has taken the key (`bot_toolsearch._proxy.body`).
    """

    def __init__(
        self,
        upstream: str,
        http: Any,
        engine: Engine,
        *,
        timeout: float,
        max_tools: int,
        on_round: RoundHook | None,
        body: BodyStage,
    ) -> None:
        self._url = upstream.rstrip("/") + MESSAGES_PATH
        self._http = http
        self._engine = engine
        self._timeout = timeout
        self._max_tools = max_tools
        self._on_round = on_round
        self._body = body

    async def __call__(self, request: Request) -> None:
        """Serve one request."""
        send = request.send
        note_route("messages")
        started: list[bool] = [False]

        async def tracked(message: MutableMapping[str, Any]) -> None:
            started[0] = started[0] or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._serve(request, tracked)
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

    async def _serve(self, request: Request, send: _Send) -> None:
        receive, headers = request.receive, request.headers
        media = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise _Failed(415, "the body must be JSON (Content-Type: application/json)")
        out_headers = self._headers(headers)
        request.auth = {k: v for k, v in out_headers.items() if k != "content-type"}
        request.use_key(out_headers.get("x-api-key") or out_headers.get("authorization"))
        try:  # a large body waits for the upstream to take the key (the OpenAI routes' rule)
            if not await self._body.take(request):
                return
        except Refused as exc:
            raise _Failed(exc.status, exc.message) from None
        body = _parse(request.raw)
        self._check(body)
        note_body(body)
        stream = body.get("stream") is True
        try:
            plan = await _until_left(receive, self._plan(body, request))
        except ToolNotPermittedError as exc:
            raise _Failed(403, str(exc)) from None
        except _Answered:  # the upstream refused the key before the new list was read
            return
        if plan is None:
            await self._ordinary(receive, send, body, out_headers)
            return
        if stream:
            await self._stream(receive, send, plan, out_headers)
            return
        await self._rounds(receive, send, plan, out_headers)

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

    async def _plan(self, body: Mapping[str, Any], request: Request) -> MessagesPlan | None:
        """The plan, made in the ``index`` pool when the tool list is new; a new list in the
        tool-search dialect naming many tools waits for the key probe first.

        Raises:
            _Answered: the upstream refused the key, and its answer was sent.
        """
        engine = self._engine
        settings = engine.snapshot()
        plan = messages_plan(body, settings, engine.cache, build=False, on_round=self._on_round)
        if not isinstance(plan, Pending):
            return plan
        if not await self._body.probe.naming(request, _dialect_tools(body)):
            raise _Answered
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
            raise _Failed(502, f"upstream failed: {failure_text(exc)}") from None

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
                raise _Failed(502, f"upstream failed: {failure_text(exc)}") from None

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
            try:
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception as exc:  # the upstream failed mid-answer (or passed its bound)
                logger.warning("proxy: upstream failed mid-answer: %s", failure_text(exc))
                if kind.partition(";")[0].strip().lower() == "text/event-stream":
                    closing = _closing(f"upstream failed: {failure_text(exc)}")
                    await send({"type": "http.response.body", "body": closing, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def _rounds(
        self, receive: _Receive, send: _Send, plan: MessagesPlan, headers: Mapping[str, str]
    ) -> None:
        """The plan's rounds through the shared driver; the answer as JSON."""
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
            return reply

        answer = await self._within(receive, drive(plan, upstream))
        await _reply(send, 200, json.dumps(answer, ensure_ascii=False).encode())

    async def _within(self, receive: _Receive, work: Awaitable[_T]) -> _T:
        """``work`` within ``--timeout``, cancelled when the client leaves."""
        try:
            return await _until_left(receive, asyncio.wait_for(work, self._timeout))
        except TimeoutError:
            raise _Failed(
                502, f"upstream failed: no answer within {self._timeout:g} s (serve --timeout)"
            ) from None
        except PoolBusy as exc:
            raise _Failed(503, f"the proxy is busy: {exc}") from None

    async def _stream(
        self, receive: _Receive, send: _Send, plan: MessagesPlan, headers: Mapping[str, str]
    ) -> None:
        """A streamed request: each round streamed upstream, run by the shared stream driver
        (`MessagesRounds`), the caller's events sent as the driver gives them."""
        accepted = False

        async def open_() -> Any:
            nonlocal accepted
            data = json.dumps({**plan.request(), "stream": True}, ensure_ascii=False).encode()
            request = self._http.build_request(
                "POST", self._url, content=data, headers=dict(headers)
            )
            try:
                response = await self._http.send(request, stream=True)
            except Exception as exc:  # any transport failure of the SDK's HTTP library
                logger.warning("proxy: upstream request failed: %s", type(exc).__name__)
                raise _Failed(502, f"upstream failed: {failure_text(exc)}") from None
            status = response.status_code
            if status >= 400:
                content = await _drain(response)
                if status >= 500:
                    raise _Failed(502, f"upstream failed with HTTP {status}")
                raise _UpstreamStatus(status, content)
            if not accepted:
                accepted = True
                plan.accept()
            return response

        async def close(response: Any) -> None:
            await response.aclose()

        async def relay() -> None:
            rounds = await AsyncRoundStream.start(MessagesRounds(plan), open_, _events, close=close)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"),
                    ],
                }
            )
            try:
                async for item in rounds:
                    await send({"type": "http.response.body", "body": sse(item), "more_body": True})
            finally:
                await rounds.close()
            await send({"type": "http.response.body", "body": b""})

        await self._within(receive, relay())


async def _drain(response: Any) -> bytes:
    """An upstream error's body (within `MAX_EVENT_BYTES`), the response closed."""
    try:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_EVENT_BYTES:
                break
        return b"".join(chunks)
    except Exception:  # the error's status says enough
        return b""
    finally:
        await response.aclose()


async def _events(response: Any) -> AsyncIterator[dict[str, Any]]:
    """One upstream round's events: its event stream read (`SseReader`), or, from an
    upstream that answered the streamed request with a whole message, that message's."""
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == "application/json":
        try:
            message = json.loads(await response.aread())
        except Exception:  # unreadable or not JSON: not a message either way
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            raise _Failed(502, "the upstream's answer is not a Messages API message")
        for item in message_events(message):
            yield item
        return
    reader = SseReader()
    chunks = response.aiter_bytes()
    while True:
        try:
            chunk = await anext(chunks, None)
            found = reader.feed(chunk) if chunk is not None else reader.close()
        except EventTooLarge as exc:
            raise _Failed(502, f"upstream failed: {exc}") from None
        except Exception as exc:  # any transport failure of the SDK's HTTP library
            raise _Failed(502, f"upstream failed: {failure_text(exc)}") from None
        for item in found:
            yield item
        if chunk is None:
            return


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


def _dialect_tools(body: Mapping[str, Any]) -> int:
    """How many tools a request names when it speaks the tool-search dialect (a search tool,
    a ``defer_loading`` tool or an ``mcp_toolset``), else 0: the work its plan must read."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return 0
    for tool in tools:
        if isinstance(tool, Mapping) and (
            str(tool.get("type", "")).startswith("tool_search_tool_")
            or tool.get("defer_loading") is True
            or tool.get("type") == "mcp_toolset"
        ):
            return len(tools)
    return 0
