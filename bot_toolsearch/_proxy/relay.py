"""The relay stage: a request's call upstream through the wrapped client, and every answer the
proxy sends (JSON, raw bytes, server-sent events, errors), the operator's keys masked.

The call goes through `wrap_openai`'s client for the request's key (`ClientCopies`), with the
body as the SDK's keyword arguments (fields it does not name as ``extra_body``; a body's
``timeout`` never overrides the proxy's) and the whole call within ``--timeout``; with
``[proxy] state`` a Responses follow-up's id is looked up there first, and the ids a stream
adds are stored before the client sees them. An upstream 4xx comes back with its own status
and body; a failure is 502 (a 403 for a tool the policy denies, a 503 when the index pool is
full). A streamed answer is relayed as the real APIs send it, and a failure after its status
line is an error event the openai SDK raises on. A Chat Completions answer that is the
upstream's last reply as it came (one round, nothing renamed, dropped, fixed or summed) is
sent as the upstream's own bytes, never parsed and dumped again (`bot_toolsearch._wrap.verbatim`).
Every error of the proxy's own is an OpenAI-style JSON body.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import openai
from openai.resources.chat.completions import AsyncCompletions
from openai.resources.responses import AsyncResponses

from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._services.shared_state import RedisState
from bot_toolsearch._services.threads import PoolBusy
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.responses import ALIAS_SINK
from bot_toolsearch._wrap.verbatim import VERBATIM, Verbatim

from .client_copies import ClientCopies
from .keys import UpstreamKeys
from .request import Disconnected, Refused, Request, Send, busy, until_disconnect
from .upstream_http import AnswerTooLarge, failure_text

__all__ = [
    "Answer",
    "Relay",
    "count_request",
    "masked",
    "send_error",
    "send_json",
    "send_json_bytes",
    "send_raw",
    "send_refusal",
]

logger = logging.getLogger("bot_toolsearch")

_DROPPED_FIELDS = frozenset({"timeout"})
"""Body fields never passed on: the SDK would read ``timeout`` as its own per-request
timeout, so a client could override the proxy's."""


class _Calls:
    """How many HTTP requests the upstream was sent during one proxied call."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


_CALLS: contextvars.ContextVar[_Calls | None] = contextvars.ContextVar(
    "bot_toolsearch_proxy_calls", default=None
)


def count_request(_: object) -> None:
    """The HTTP client's request hook: one more request sent upstream for this call."""
    calls = _CALLS.get()
    if calls is not None:
        calls.count += 1


def _parameters(method: Callable[..., Any]) -> frozenset[str]:
    return frozenset(
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


_CHAT_PARAMS = _parameters(AsyncCompletions.create)
_RESPONSES_PARAMS = _parameters(AsyncResponses.create)


def _sdk_kwargs(body: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The JSON body as SDK keyword arguments; fields the SDK does not name go as extra_body.

    ``timeout`` and the SDK's ``extra_*`` options are never taken from the body."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for k, v in body.items():  # one pass over the body, not two
        if k in _DROPPED_FIELDS:
            continue
        if k not in known:
            extra[k] = v
        elif not k.startswith("extra_"):
            kwargs[k] = v
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@dataclass(slots=True)
class Answer:
    """What the upstream answered a call: a stream to relay, or the JSON to send."""

    result: Any
    json: dict[str, Any] | None
    """The answer as JSON; ``None``: ``result`` is a stream, or `raw` says it."""
    flush: Callable[[], Awaitable[None]] | None
    """What stores a stream's new aliases before each event (`_shared`)."""
    raw: bytes | None = None
    """The upstream's own body, when it says exactly what ``result`` holds (`Verbatim`)."""


class Relay:
    """The call upstream of a tool-searched request, and its answer.

    Args:
        copies: the wrapped client per key and forwarded headers.
        engine: the wrapper's engine (its Responses aliases).
        timeout: seconds the whole call may take.
        state: the shared state (``[proxy] state``), if any.
    """

    def __init__(
        self, copies: ClientCopies, engine: Engine, timeout: float, state: RedisState | None
    ) -> None:
        self._copies, self._engine, self._timeout, self._state = copies, engine, timeout, state

    async def call(self, request: Request) -> Answer | None:
        """The upstream's answer; ``None`` when it answered 4xx and that was sent.

        Raises:
            Refused: the call failed (`_failure`).
            Disconnected: the client left meanwhile (the call is cancelled).
        """
        chat, body = request.chat, request.body
        client = self._copies.get(request.key or "unset", request.extra)
        kwargs = _sdk_kwargs(body, _CHAT_PARAMS if chat else _RESPONSES_PARAMS)
        calls = _Calls()
        _CALLS.set(calls)
        verbatim = Verbatim() if chat else None
        VERBATIM.set(verbatim)
        flush = None if chat else await self._shared(kwargs)
        method = client.chat.completions.create if chat else client.responses.create
        receive = request.receive
        try:
            result = await until_disconnect(receive, method(**kwargs), self._timeout)
            stream = body.get("stream") is True
            raw = None if stream or verbatim is None else verbatim.body_of(result)
            dump = not stream and raw is None
            answer = result.model_dump(mode="json", exclude_unset=True) if dump else None
        except openai.APIStatusError as exc:
            if exc.status_code < 500:
                await send_json(request.send, exc.status_code, _error_body(exc))
                return None
            raise _upstream_failed(exc) from None
        except (Disconnected, Refused):
            raise
        except Exception as exc:
            raise self._failure(exc, calls) from None
        return Answer(result, answer, flush, raw)

    async def answer(self, request: Request, answer: Answer) -> None:
        """Send ``answer``: the upstream's bytes, its JSON, or its stream as server-sent events."""
        if answer.raw is not None:
            await send_json_bytes(request.send, 200, answer.raw)
        elif answer.json is None:
            await _relay(
                request.receive,
                request.send,
                answer.result,
                events=not request.chat,
                flush=answer.flush,
            )
        else:
            await send_json(request.send, 200, answer.json)

    async def _shared(self, kwargs: Mapping[str, Any]) -> Callable[[], Awaitable[None]] | None:
        """With ``[proxy] state``: the follow-up's ``previous_response_id`` looked up there
        (another worker's stream id), and what flushes the aliases this request adds, so they
        are stored before the client sees their id."""
        state = self._state
        if state is None:
            return None
        previous = kwargs.get("previous_response_id")
        if isinstance(previous, str):
            final = await state.resolve(previous)
            if final is not None and final != previous:
                self._engine.aliases.add(previous, final)
        pending: list[tuple[str, str]] = []
        ALIAS_SINK.set(pending)

        async def flush() -> None:
            if pending:
                batch = pending[:]
                pending.clear()
                await state.store(batch)

        return flush

    def _failure(self, exc: Exception, calls: _Calls) -> Refused:
        """The answer to a ``create`` call that failed other than with an upstream status."""
        too_large = exc if isinstance(exc, AnswerTooLarge) else exc.__cause__
        if isinstance(too_large, AnswerTooLarge):  # raw (direct path), or as the SDK's cause
            logger.warning("proxy: %s", too_large)
            return Refused(
                502,
                f"upstream failed: {too_large}",
                "upstream_error",
                code="upstream_answer_too_large",
            )
        if isinstance(exc, openai.APIError):  # connection errors, timeouts, unreadable answers
            return _upstream_failed(exc)
        if isinstance(exc, TimeoutError):
            logger.warning("proxy: upstream timed out after %s s", self._timeout)
            return Refused(
                502,
                f"upstream failed: no answer within {self._timeout:g} s (serve --timeout)",
                "upstream_error",
                code="upstream_timeout",
            )
        if isinstance(exc, ToolNotPermittedError):
            return Refused(403, str(exc), code="tool_not_permitted", param=exc.param)
        if isinstance(exc, PoolBusy):
            return busy(str(exc), "serve --index-builds")
        logger.warning("proxy: request failed: %s", type(exc).__name__)
        if calls.count:  # the upstream answered something the wrapper cannot use
            return Refused(
                502,
                f"the upstream's answer could not be used ({type(exc).__name__})",
                "upstream_error",
            )
        return Refused(400, f"the request could not be used: {exc}")


def _error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and "error" in body:
        return body
    if isinstance(body, dict):
        return {"error": body}
    return {"error": {"message": exc.message, "type": "upstream_error"}}


def _upstream_failed(exc: openai.APIError) -> Refused:
    logger.warning("proxy: upstream failed: %s (%r)", type(exc).__name__, exc.__cause__)
    return Refused(502, f"upstream failed: {exc.message}", "upstream_error")


async def send_refusal(send: Send, refused: Refused) -> None:
    """``refused`` as the OpenAI-style JSON error it is."""
    await send_error(
        send,
        refused.status,
        refused.message,
        refused.kind,
        code=refused.code,
        param=refused.param,
        retry_after=refused.retry_after,
        close=refused.close,
    )


async def send_error(
    send: Send,
    status: int,
    message: str,
    kind: str,
    *,
    code: str | None = None,
    param: str | None = None,
    retry_after: int | None = None,
    close: bool = False,
) -> None:
    """An OpenAI-style JSON error."""
    error: dict[str, str | None] = {"message": message, "type": kind, "param": param}
    error["code"] = code
    await send_json(send, status, {"error": error}, retry_after=retry_after, close=close)


async def masked(send: Send, keys: UpstreamKeys, message: MutableMapping[str, Any]) -> None:
    """``send`` of ``message`` with the operator's upstream keys masked in its body."""
    body = message.get("body")
    if body:
        message = {**message, "body": keys.mask(body)}
    await send(message)


async def send_json_bytes(send: Send, status: int, raw: bytes) -> None:
    """An upstream's own JSON answer, passed on as it is."""
    await send_raw(send, status, raw, "application/json")


async def send_raw(send: Send, status: int, raw: bytes, content_type: str) -> None:
    """``raw`` as the whole answer, of ``content_type``."""
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(raw)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


async def send_json(
    send: Send,
    status: int,
    payload: object,
    *,
    retry_after: int | None = None,
    close: bool = False,
) -> None:
    """``payload`` as a JSON answer."""
    raw = json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


async def _relay(
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Send,
    stream: Any,
    *,
    events: bool,
    flush: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Relay ``stream``; when the client leaves, the stream and its upstream request end.
    ``flush`` runs before each event is sent (the shared state's aliases, `Relay._shared`)."""
    try:
        await until_disconnect(receive, _sse(send, stream, events=events, flush=flush))
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            closed = close()
            if inspect.isawaitable(closed):
                await closed


async def _sse(
    send: Send,
    stream: Any,
    *,
    events: bool = False,
    flush: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """The stream as server-sent events: Chat Completions chunks as ``data:`` lines ending with
    ``[DONE]``; Responses events (``events``) as ``event: <type>`` plus ``data:``, no ``[DONE]``,
    as the real APIs send them. Any failure after the status line is an error event the
    openai SDK raises on, never a finished stream; so is the server stopping (``serve`` on
    SIGTERM cancels the streams still open after its grace period)."""
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})

    async def line(data: str, kind: str | None = None) -> None:
        head = f"event: {kind}\n" if kind else ""
        body = f"{head}data: {data}\n\n".encode()
        await send({"type": "http.response.body", "body": body, "more_body": True})

    async def fail(message: str, kind: str, code: str) -> None:
        """The stream's error event, and its end."""
        error = {"message": message, "type": kind, "param": None, "code": code}
        if events:
            await line(json.dumps({"type": "error", **error, "error": error}), "error")
        else:
            await line(json.dumps({"error": error}))
        await send({"type": "http.response.body", "body": b""})

    try:
        async for chunk in stream:
            data = chunk.model_dump_json(exclude_unset=True)
            if flush is not None:
                await flush()
            await line(data, getattr(chunk, "type", None) if events else None)
    except asyncio.CancelledError:  # the server stops (a client that left reads nothing)
        stopping = "the proxy is shutting down: the stream ended before its end"
        await fail(stopping, "server_error", "server_shutting_down")
        raise
    except Exception as exc:  # the status line is sent: report in the stream
        logger.warning("proxy: upstream failed mid-stream: %s", type(exc).__name__)
        detail = exc.message if isinstance(exc, openai.APIError) else failure_text(exc)
        await fail(f"upstream failed: {detail}", "upstream_error", "upstream_error")
        return
    if events:
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
