"""The OpenAI-compatible proxy: the wrapped client behind HTTP, for a client in any language.

``POST /v1/chat/completions`` and ``POST /v1/responses`` go through `wrap_openai` (tool
search, hidden rounds, SSE streaming for both); ``GET /healthz`` answers ``ok``, or 503 naming
the pools that are stuck (`bot_toolsearch._services.threads`); ``GET /metrics`` the
Prometheus metrics (`bot_toolsearch._proxy.metrics`); tool-searched replies carry
``x-toolsearch-*`` headers (`bot_toolsearch._proxy.exchange`); every other path
(``GET /v1/models`` ...) is forwarded to the upstream as is. The API key the client sends
(``Authorization: Bearer``) is the one used upstream, per request, unless the proxy has client
keys of its own (`keys`); no key is ever logged. A new tool list gets its catalog (what the
first round needs) in the ``index`` pool; its keyword index and vectors are built only once
the upstream answers 2xx to a request carrying it, from the moment its headers arrive, in
parallel with the model's answer. Requests in flight and index builds are bounded
(`limits`). An upstream 4xx comes back with its own status and body (the client's request or key
was wrong); an upstream that fails (5xx, unreachable, timeout, an answer that cannot be used)
is HTTP 502. Every error is an OpenAI-style JSON body; one that happens after a stream has
started is an SSE error event the openai SDK raises on. The proxy keeps no conversation
state, so any number of workers or hosts can serve one conversation.

The request target is normalised once (dot segments removed, empty segments dropped) and
must stay inside the root; the outgoing URL is the upstream's scheme, host and port plus the
upstream's base path and the normalised path, so no spelling of a path reaches another host,
leaves the upstream's base path, or bypasses tool search.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import hashlib
import inspect
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote, unquote, urlsplit

import openai
from openai.resources.chat.completions import AsyncCompletions
from openai.resources.responses import AsyncResponses

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._errors import ToolNotPermittedError
from bot_toolsearch._services.client_policy import CURRENT as CURRENT_POLICY
from bot_toolsearch._services.shared_state import open_state
from bot_toolsearch._services.threads import POOLS, PoolBusy, SharedWork
from bot_toolsearch._wrap.caller_tools import Api, CallerTools
from bot_toolsearch._wrap.client import engine_of, wrap_openai
from bot_toolsearch._wrap.native import count_named
from bot_toolsearch._wrap.responses import ALIAS_SINK
from bot_toolsearch._wrap.tool_facts import ToolFacts

from .access_log import configure_logging
from .admission import ADMITTED, Admission
from .client_copies import ClientCopies
from .edge import WEBSOCKET_REFUSED, framing_problem, is_websocket_upgrade, refuse_websocket
from .exchange import Observer, note_body, note_client, note_route
from .heap import Leftovers
from .keys import ClientKeys, KnownKeys, UpstreamKeys, read_keys
from .limits import (
    DEFAULT_INDEX_BUILDS,
    DEFAULT_MAX_IN_FLIGHT,
    RETRY_AFTER,
    BodyBytes,
    InFlight,
    body_bytes_for,
)
from .messages import MESSAGES_PATH, MessagesRoute
from .metrics import CONTENT_TYPE, ProxyMetrics
from .passthrough import refusal
from .raw_tools import tools_span
from .reading import (
    DEFAULT_READ_TIMEOUT,
    ENV_READ_TIMEOUT,
    BodiesFull,
    BodyTimeout,
    InFlightFull,
    Reading,
)
from .upstream_timing import time_upstream

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_TOOLS",
    "ENV_ACCESS_LOG",
    "ENV_API_KEYS",
    "ENV_CONFIG",
    "ENV_INDEX_BUILDS",
    "ENV_LOG_LEVEL",
    "ENV_MAX_BODY",
    "ENV_MAX_IN_FLIGHT",
    "ENV_MAX_TOOLS",
    "ENV_READ_TIMEOUT",
    "ENV_TIMEOUT",
    "ENV_UPSTREAM",
    "ENV_UPSTREAM_API",
    "ProxyApp",
    "app_from_env",
    "redact_query",
]

logger = logging.getLogger("bot_toolsearch")

ENV_UPSTREAM = "BOT_TOOLSEARCH_UPSTREAM"
"""The upstream base URL for `app_from_env` (how ``serve --workers N`` hands it over)."""
ENV_CONFIG = "BOT_TOOLSEARCH_CONFIG"
"""The ``config.toml`` path for `app_from_env`, if any."""
ENV_TIMEOUT = "BOT_TOOLSEARCH_TIMEOUT"
"""Seconds per upstream request for `app_from_env` (``serve --timeout``)."""
ENV_MAX_BODY = "BOT_TOOLSEARCH_MAX_BODY"
"""Largest request body in bytes for `app_from_env` (``serve --max-body``)."""
ENV_MAX_TOOLS = "BOT_TOOLSEARCH_MAX_TOOLS"
"""Most tools per request for `app_from_env` (``serve --max-tools``)."""
ENV_MAX_IN_FLIGHT = "BOT_TOOLSEARCH_MAX_IN_FLIGHT"
"""Most requests in flight per worker for `app_from_env` (``serve --max-in-flight``)."""
ENV_INDEX_BUILDS = "BOT_TOOLSEARCH_INDEX_BUILDS"
"""Most concurrent index builds per worker for `app_from_env` (``serve --index-builds``)."""
ENV_API_KEYS = "BOT_TOOLSEARCH_API_KEYS"
"""Client keys of the proxy for `app_from_env`, one a line (``serve --api-key``)."""
ENV_LOG_LEVEL = "BOT_TOOLSEARCH_LOG_LEVEL"
"""``serve --log-level`` for the package's loggers in each worker."""
ENV_UPSTREAM_API = "BOT_TOOLSEARCH_UPSTREAM_API"
"""``serve --upstream-api`` (``messages``: ``POST /v1/messages`` does tool search upstream)."""
ENV_ACCESS_LOG = "BOT_TOOLSEARCH_ACCESS_LOG"
"""``serve --access-log`` (``json``: the JSON access log of `bot_toolsearch._proxy.access_log`)."""

DEFAULT_MAX_BODY = 64 * 1024 * 1024
"""Largest request body accepted (bytes); a larger one is refused with 413, never cut."""
DEFAULT_MAX_TOOLS = 20_000
"""Most entries in one request's ``tools``; more is refused with 400. Tool search exists for
large catalogs (thousands of tools); 20,000 tools of a typical size are about 10 MB of JSON
and index in about a second, while an unbounded list lets one request hold the indexer and
gigabytes of memory."""

_Scope: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send: TypeAlias = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_T = TypeVar("_T")

_FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones under ``freeze_heap`` (CPython's
default is 10). Each request parses a large tool list that stays alive while the upstream
answers; with 50 requests in flight, every full collection walked millions of those objects
(1,000 tools, one worker: 29 requests/s before, 43 after, profiled). Cyclic garbage waits
longer to be freed; reference counting frees everything else at once."""
_KEY_PROBE_BYTES = 1024 * 1024
"""Bodies larger than this are parsed only once the upstream key is known good: else the
upstream is asked first (``GET /models``), and its 401 or 403 is the answer (`KnownKeys`)."""
_LENGTHS = 8
_NATIVE_PROBE_TOOLS = 256
"""Most tools a request may name in the dialect's structures (a ``defer_loading`` or
namespace list not parsed before, a resent ``tool_search_output``) before the upstream is
asked whether the key is good (`_probe`), whatever the body's size: reading them is work."""
_INLINE_CHECK = 64 * 1024
"""Largest pass-through body checked for tool fields on the event loop (larger: a thread)."""
"""Most tool-list byte lengths `ProxyApp._parse_known` tries before scanning the value."""
_HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding"}
)
_TOOL_SEARCH_PATHS = frozenset({"/chat/completions", "/responses"})
_DROPPED_FIELDS = frozenset({"timeout"})
"""Body fields never passed on: the SDK would read ``timeout`` as its own per-request
timeout, so a client could override the proxy's."""
_SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "sig", "credential")


class _Refused(Exception):
    """A request the proxy answers with an error of its own (the client's fault, or 502)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        code: str | None = None,
        param: str | None = None,
        retry_after: int | None = None,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.code, self.param = (
            status,
            message,
            kind,
            code,
            param,
        )
        self.retry_after = retry_after
        self.close = close
        """Close the connection after the answer (the request's framing or body is not
        trusted to end where the next request would begin)."""


def _busy(what: str, option: str) -> _Refused:
    """503 with ``Retry-After``: a bounded pool cannot take the work now."""
    return _Refused(
        503,
        f"the proxy is busy: {what} ({option}); retry after {RETRY_AFTER} s",
        "server_error",
        code="server_busy",
        retry_after=RETRY_AFTER,
    )


class _Disconnected(Exception):
    """The client left before its answer was ready."""


class _Calls:
    """How many HTTP requests the upstream was sent during one proxied call."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


_CALLS: contextvars.ContextVar[_Calls | None] = contextvars.ContextVar(
    "bot_toolsearch_proxy_calls", default=None
)
_ACCEPT: contextvars.ContextVar[Callable[[], object] | None] = contextvars.ContextVar(
    "bot_toolsearch_proxy_accept", default=None
)
"""What to call when the upstream answers 2xx to this request (its tool list is accepted)."""


async def _count_request(_: object) -> None:
    calls = _CALLS.get()
    if calls is not None:
        calls.count += 1


async def _accepted(response: Any) -> None:
    """Response headers are in: a 2xx accepts the request's tool list (its index build starts
    now, in parallel with the model's answer)."""
    accept = _ACCEPT.get()
    if accept is not None and 200 <= response.status_code < 300:
        accept()


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
    kwargs = {
        k: v
        for k, v in body.items()
        if k in known and not k.startswith("extra_") and k not in _DROPPED_FIELDS
    }
    extra = {k: v for k, v in body.items() if k not in known and k not in _DROPPED_FIELDS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


class ProxyApp:
    """The ASGI application.

    Args:
        upstream: the upstream's base URL, e.g. ``https://api.openai.com/v1``.
        config: a ``config.toml`` path (hot-reloaded), or ``settings``; with neither, the
            ``[skills]`` defaults with tool search on.
        timeout: seconds a call may wait for the upstream, its retry and hidden tool-search
            rounds included (for a stream: until it starts; then between two chunks);
            ``None`` takes ``[model] timeout`` from the settings at start-up. A request
            body's ``timeout`` field never overrides it.
        max_body: the largest request body in bytes; a larger one is refused with 413.
        max_tools: the most entries in one request's ``tools``; more is refused with 400.
        max_in_flight: the most requests served at once, counted from the moment a request's
            whole body has arrived; one more is refused with 429.
        read_timeout: seconds a client may take to send a request body (`reading`); slower
            is refused with 408 and the connection closed.
        body_bytes: the most request body bytes held at once (bodies arriving, or whole and
            being served); past it, 503 and the connection closed. ``None``: a gigabyte, or
            four times ``max_body`` if that is more.
        index_builds: the most new tool lists indexed at once (the process's ``index`` pool);
            past four times that many waiting, a new list is refused with 503.
        api_keys: client keys of the proxy itself: a request must carry one (else 401), and
            the upstream key is the operator's (``[model] api_key``, else ``OPENAI_API_KEY``).
            ``None`` reads the ``[proxy] keys`` file of the settings, if any.
        freeze_heap: tune the cycle collector for a process that only serves the proxy (what
            ``bot-toolsearch serve`` runs), never for an app embedded in another program: the
            heap is frozen after each newly indexed tool list (`gc.freeze`), and full
            collections run a hundred times less often (`_FULL_COLLECTION_EVERY`).
        upstream_api: ``"messages"`` for an Anthropic-compatible upstream: ``POST
            /v1/messages`` then does tool search (`bot_toolsearch._proxy.messages`);
            ``"openai"`` (the default) forwards it as any other path.

    Raises:
        ValueError: ``upstream`` is not an http(s) URL with a host, a bound is below 1, or
            client keys are set without an upstream key.
        OSError: the ``[proxy] keys`` file cannot be read.
    """

    def __init__(
        self,
        upstream: str,
        *,
        config: str | os.PathLike[str] | None = None,
        settings: BotSettings | None = None,
        timeout: float | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_tools: int = DEFAULT_MAX_TOOLS,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        index_builds: int = DEFAULT_INDEX_BUILDS,
        api_keys: Sequence[str] | None = None,
        freeze_heap: bool = False,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        body_bytes: int | None = None,
        upstream_api: str = "openai",
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream must be an http(s) URL with a host, got {upstream!r}")
        self._freeze_heap = freeze_heap
        if not read_timeout > 0:
            raise ValueError(f"read_timeout must be positive, got {read_timeout}")
        self._leftovers = Leftovers()
        self.read_timeout = read_timeout
        if freeze_heap:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, _FULL_COLLECTION_EVERY)
        self.upstream = upstream.rstrip("/")
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._base_path = parts.path.rstrip("/")
        self._host = parts.hostname
        self.max_body = max_body
        self.max_tools = max_tools
        self._in_flight = InFlight(max_in_flight)
        self._body_bytes = BodyBytes(body_bytes_for(max_body) if body_bytes is None else body_bytes)
        if index_builds < 1:
            raise ValueError(f"index_builds must be at least 1, got {index_builds}")
        POOLS.configure(index_builds=index_builds, index_queue=4 * index_builds)
        redact_access_log()
        # The SDK's own HTTP client class (httpx or httpx2, by SDK version), for forwarding too.
        self._http = openai.DefaultAsyncHttpxClient(
            event_hooks={"request": [_count_request], "response": [_accepted]}
        )
        self.metrics = ProxyMetrics(lambda: len(self._cache), lambda: self._cache.cached_bytes)
        """The counters ``GET /metrics`` exposes."""
        self._observer = Observer(self.metrics)
        time_upstream(
            self._http, lambda api, seconds: self.metrics.upstream.observe(seconds, api=api)
        )
        # One retry: a pooled keep-alive connection the upstream closed meanwhile fails once.
        # The whole call stays within ``timeout`` (see `_create`).
        inner = openai.AsyncOpenAI(
            base_url=self.upstream, api_key="unset", max_retries=1, http_client=self._http
        )
        self._client = wrap_openai(
            inner, config=config, settings=settings, on_round=self._observer.on_round
        )
        engine = engine_of(self._client)
        assert engine is not None
        self._engine = engine
        self._cache = engine.cache
        self._lengths: list[int] = []
        """Byte lengths of the ``tools`` values parsed before, newest first (`_parse_known`)."""
        self._facts = ToolFacts()
        """Whether a tool list speaks the dialect and how many tools it names, kept for the
        cached lists `_parse_known` hands over."""
        self._indexing = SharedWork()
        """New tool lists being indexed, by the digest of their raw bytes: a request with the
        same list waits for that build instead of queueing its own (`_index`)."""
        self.timeout = timeout if timeout is not None else engine.snapshot().model.timeout
        self._client = self._client.with_options(timeout=self.timeout)
        self._copies = ClientCopies(self._client)
        self._known = KnownKeys()
        start = engine.snapshot()
        self._keys, self._admission = _admission(start, api_keys)
        self._state, self._upstream_keys = open_state(start.proxy.state), _operator_keys(start)
        """The shared state (`state`), and the operator's upstream keys, masked in everything
        sent to a client."""
        self._messages = self._messages_route(upstream_api, max_body, max_tools)
        """``POST /v1/messages`` with tool search (``upstream_api="messages"``)."""

    def _messages_route(
        self, upstream_api: str, max_body: int, max_tools: int
    ) -> MessagesRoute | None:
        if upstream_api == "messages":
            return MessagesRoute(
                self.upstream,
                self._http,
                self._engine,
                timeout=self.timeout,
                max_body=max_body,
                max_tools=max_tools,
                on_round=self._observer.on_round,
            )
        if upstream_api != "openai":
            raise ValueError(f"upstream_api must be 'openai' or 'messages', got {upstream_api!r}")
        return None

    async def aclose(self) -> None:
        """Close the upstream connections and stop watching ``config.toml``."""
        await self._client.close()
        if self._state is not None:
            await self._state.aclose()

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await refuse_websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        if self._upstream_keys:
            send = functools.partial(_masked, send, self._upstream_keys)
        started = False
        status = 0
        exchange = self._observer.begin(scope["method"], redact_query(_target(scope)))
        observed = self._observer.sender(exchange, send)
        reading = Reading(receive, self.read_timeout, self._in_flight, self._body_bytes)

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
            await observed(message)

        try:
            await self._http_request(scope, reading, tracked)
        except _Disconnected:
            return
        except _Refused as exc:
            if not started:
                await _error(
                    send,
                    exc.status,
                    exc.message,
                    exc.kind,
                    code=exc.code,
                    param=exc.param,
                    retry_after=exc.retry_after,
                    close=exc.close,
                )
                status = exc.status
        except Exception as exc:  # the last resort: never a text/plain 500 or a traceback
            logger.error("proxy: internal error: %s", type(exc).__name__)
            if not started:
                await _error(send, 500, "internal error in the proxy", "server_error")
            else:
                await send({"type": "http.response.body", "body": b""})
        finally:
            reading.leave()
            self._observer.finish(exchange)
            if self._freeze_heap and not 200 <= status < 400:
                self._leftovers.refused(reading.size)

    async def _http_request(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        framing = framing_problem(scope["headers"])
        if framing is not None:
            raise _Refused(400, framing, code="invalid_framing", close=True)
        if is_websocket_upgrade(scope["headers"]):
            raise _Refused(426, WEBSOCKET_REFUSED, code="websocket_not_supported")
        path = _normalised_path(scope)
        if path == "/healthz":
            note_route("healthz")
            stuck = POOLS.stuck()
            if stuck:
                pools = {status.name: status.as_json() for status in stuck}
                await _json(send, 503, {"status": "stuck", "pools": pools})
            else:
                await _json(send, 200, {"status": "ok"})
            return
        if path == "/metrics" and scope["method"] == "GET":
            note_route("metrics")
            await _raw(send, 200, self.metrics.render(), CONTENT_TYPE)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client_key = _bearer(headers) or headers.get("x-api-key")  # x-api-key: Messages clients
        admitted = self._admission.admit(client_key, self._engine.snapshot().proxy.clients)
        if admitted is None:
            raise _Refused(401, "this proxy needs one of its client keys", code="invalid_api_key")
        ADMITTED.set(admitted)
        if admitted.policy is not None:
            CURRENT_POLICY.set(admitted.policy)
            note_client(admitted.policy.name)
        if not self._admission.enter(admitted):
            assert admitted.policy is not None
            raise _Refused(
                429,
                f"more than {admitted.policy.max_in_flight} requests of client"
                f" {admitted.policy.name!r} in flight ([[proxy.clients]] max_in_flight);"
                f" retry after {RETRY_AFTER} s",
                "rate_limit_error",
                code="too_many_requests",
                retry_after=RETRY_AFTER,
            )
        try:
            rest = path[3:] or "/" if path == "/v1" or path.startswith("/v1/") else path
            if rest == MESSAGES_PATH and self._messages is not None and scope["method"] == "POST":
                await self._messages(receive, send, headers)
            elif rest in _TOOL_SEARCH_PATHS and scope["method"] == "POST":
                note_route("chat_completions" if rest == "/chat/completions" else "responses")
                await self._create(receive, send, rest == "/chat/completions", headers)
            else:
                await self._forward(receive, send, scope, rest)
        except BodyTimeout:
            raise _Refused(
                408,
                f"the request body did not arrive within {self.read_timeout:g} s"
                " (serve --read-timeout)",
                code="request_timeout",
                close=True,
            ) from None
        except BodiesFull:
            raise _Refused(
                503,
                f"the proxy is busy: it holds {self._body_bytes.limit} bytes of request bodies;"
                f" retry after {RETRY_AFTER} s",
                "server_error",
                code="server_busy",
                retry_after=RETRY_AFTER,
                close=True,
            ) from None
        except InFlightFull:
            raise _Refused(
                429,
                f"more than {self._in_flight.limit} requests in flight (serve --max-in-flight);"
                f" retry after {RETRY_AFTER} s",
                "rate_limit_error",
                code="too_many_requests",
                retry_after=RETRY_AFTER,
            ) from None
        finally:
            self._admission.leave(admitted)

    async def _lifespan(self, receive: _Receive, send: _Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _create(
        self, receive: _Receive, send: _Send, chat: bool, headers: dict[str, str]
    ) -> None:
        media = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise _Refused(415, "the body must be JSON (Content-Type: application/json)")
        key = ADMITTED.get().upstream_key(_bearer(headers))
        if key is not None and not (key.isascii() and key.isprintable()):
            raise _Refused(401, "the API key is not printable ASCII", code="invalid_api_key")
        extra = {k: v for k, v in _forwarded_headers(headers).items() if v.isascii()}
        raw = await self._body(receive, send, headers, key, extra)
        if raw is None:
            return
        body, known = self._parse_known(raw)
        tools = self._check(body, chat, known)
        api: Api = "chat" if chat else "responses"
        native = (
            not known and tools is not None and self._facts.of(tools, api, remember=False).native
        )
        if not await self._native_key(
            receive, send, body, chat=chat, native=native, key=key, extra=extra
        ):
            return
        note_body(body)
        client = self._copies.get(key or "unset", extra)
        kwargs = _sdk_kwargs(body, _CHAT_PARAMS if chat else _RESPONSES_PARAMS)
        builds = self._cache.builds
        await self._catalog(receive, tools, chat, None if known else raw)
        calls = _Calls()
        _CALLS.set(calls)
        flush = None if chat else await self._shared(kwargs)
        method = client.chat.completions.create if chat else client.responses.create
        try:
            result = await _until_disconnect(receive, _within(self.timeout, method(**kwargs)))
            stream = body.get("stream") is True
            answer = None if stream else result.model_dump(mode="json", exclude_unset=True)
        except openai.APIStatusError as exc:
            if exc.status_code < 500:
                await _json(send, exc.status_code, _error_body(exc))
                return
            raise _upstream_failed(exc) from None
        except (_Disconnected, _Refused):
            raise
        except Exception as exc:
            raise self._failure(exc, calls) from None
        self._known.accept(key)
        if native and tools:
            self._remember_native(tools, raw)
        if self._freeze_heap and self._cache.builds != builds:
            self._settle()
        if answer is None:
            await _relay(receive, send, result, events=not chat, flush=flush)
        else:
            await _json(send, 200, answer)

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

    def _failure(self, exc: Exception, calls: _Calls) -> _Refused:
        """The answer to a ``create`` call that failed other than with an upstream status."""
        if isinstance(exc, openai.APIError):  # connection errors, timeouts, unreadable answers
            return _upstream_failed(exc)
        if isinstance(exc, TimeoutError):
            logger.warning("proxy: upstream timed out after %s s", self.timeout)
            return _Refused(
                502,
                f"upstream failed: no answer within {self.timeout:g} s (serve --timeout)",
                "upstream_error",
                code="upstream_timeout",
            )
        if isinstance(exc, ToolNotPermittedError):
            return _Refused(403, str(exc), code="tool_not_permitted", param=exc.param)
        if isinstance(exc, PoolBusy):
            return _busy(str(exc), "serve --index-builds")
        logger.warning("proxy: request failed: %s", type(exc).__name__)
        if calls.count:  # the upstream answered something the wrapper cannot use
            return _Refused(
                502,
                f"the upstream's answer could not be used ({type(exc).__name__})",
                "upstream_error",
            )
        return _Refused(400, f"the request could not be used: {exc}")

    async def _body(
        self,
        receive: _Receive,
        send: _Send,
        headers: dict[str, str],
        key: str | None,
        extra: Mapping[str, str],
    ) -> bytes | None:
        """The request body; ``None`` when the upstream refused ``key`` and its answer was
        sent. A body announced (or found) larger than `_KEY_PROBE_BYTES` under a key not
        known good is read, and parsed, only once the upstream took the key (`_probe`): the
        question is asked once the body has started (a request that sends none costs no
        upstream call), and while it is asked the proxy reads on, at most `_KEY_PROBE_BYTES`
        more, so a client that leaves cancels it."""
        length = headers.get("content-length", "").strip()
        announced = int(length) if length.isdigit() else 0
        start: list[bytes] = []
        if _KEY_PROBE_BYTES < announced <= self.max_body and not self._known.ok(key):
            ended = False
            while not any(start) and not ended:  # the body has started
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Disconnected
                start.append(message.get("body", b""))
                ended = not message.get("more_body", False)
            probe = self._probe(key, extra)
            refused, more, ended = await _while_reading(receive, probe, _KEY_PROBE_BYTES, ended)
            if refused is not None:
                del start, more
                if not ended:
                    await _drain(receive)  # read and dropped, so the client reads the answer
                await _json_bytes(send, *refused)
                return None
            start += more
            if ended:
                start.append(b"")
        raw = await _read_body(receive, headers, self.max_body, start)
        if announced or len(raw) <= _KEY_PROBE_BYTES or self._known.ok(key):
            return raw
        refused = await _until_disconnect(receive, self._probe(key, extra))
        if refused is not None:
            await _json_bytes(send, *refused)
            return None
        return raw

    async def _probe(self, key: str | None, extra: Mapping[str, str]) -> tuple[int, bytes] | None:
        """Whether the upstream takes ``key``, asked before a large body is parsed: its 401
        or 403 answer (status, JSON body), remembered a few seconds, else ``None`` (a 2xx, or
        any other answer: the request itself will tell)."""
        refused = self._known.refused(key)
        if refused is not None:
            return refused
        headers = {**extra, "authorization": f"Bearer {key or 'unset'}"}
        try:
            response = await self._http.get(
                f"{self.upstream}/models", headers=headers, timeout=self.timeout
            )
        except Exception:  # the request itself reports an unreachable upstream
            return None
        if 200 <= response.status_code < 300:
            self._known.accept(key)
        elif response.status_code in (401, 403):
            answer = response.content if _is_json(response.content) else None
            if answer is None:
                error = {"message": "the upstream refused the API key", "type": "upstream_error"}
                answer = json.dumps({"error": error}).encode()
            self._known.refuse(key, response.status_code, answer[:65536])
            return response.status_code, answer[:65536]
        return None

    def _check(self, body: dict[str, Any], chat: bool, known: bool) -> list[Any] | None:
        """The request's tool list after the checks the proxy makes before calling upstream
        (``known``: the list is a cached one, `_parse_known`)."""
        if "stream" in body and not isinstance(body["stream"], bool | None):
            raise _Refused(400, "'stream' must be a boolean", param="stream")
        if chat and not isinstance(body.get("messages"), list):
            raise _Refused(400, "'messages' must be an array", param="messages")
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise _Refused(400, "'tools' must be an array", param="tools")
        api: Api = "chat" if chat else "responses"
        listed, resent = self._facts.named(body, api, remember=known)
        if listed + resent > self.max_tools:
            raise _Refused(
                400,
                f"the request names {listed + resent} tools ({listed} in 'tools', namespace"
                f" members counted, {resent} in 'input' tool_search_output items); this proxy"
                f" accepts at most {self.max_tools} (serve --max-tools)",
                code="array_above_max_length",
                param="tools" if listed > self.max_tools else None,
            )
        return tools

    async def _native_key(
        self,
        receive: _Receive,
        send: _Send,
        body: dict[str, Any],
        *,
        chat: bool,
        native: bool,
        key: str | None,
        extra: Mapping[str, str],
    ) -> bool:
        """Whether to go on with a request whose tool-search dialect names many tools (a
        ``native`` list not parsed before, tools a resent ``tool_search_output`` loads): past
        `_NATIVE_PROBE_TOOLS` of them under a key not known good, the upstream is asked first
        (`_probe`); ``False`` when it refused the key and its answer was sent."""
        if self._known.ok(key):
            return True
        listed, resent = count_named(body, "chat" if chat else "responses")
        if resent + (listed if native else 0) <= _NATIVE_PROBE_TOOLS:
            return True
        refused = await _until_disconnect(receive, self._probe(key, extra))
        if refused is None:
            return True
        await _json_bytes(send, *refused)
        return False

    def _remember_native(self, tools: list[Any], raw: bytes) -> None:
        """The upstream took a request whose list is in the tool-search dialect: remember
        the bytes it was parsed from, so the next request with them skips parsing and
        reading it (`NativeCache`, `_parse_known`)."""
        span = tools_span(raw)
        if span is not None and self._engine.native.add_source(tools, raw[span[0] : span[1]]):
            self._remember_length(span[1] - span[0])

    def _remember_length(self, length: int) -> None:
        """A tool list's byte length for `_parse_known` to try first."""
        if length not in self._lengths:
            self._lengths.insert(0, length)
            del self._lengths[_LENGTHS:]

    def _parse_known(self, raw: bytes) -> tuple[dict[str, Any], bool]:
        """The JSON body, and whether its ``tools`` are a cached list found by its bytes.

        When the body's top-level ``tools`` bytes are byte for byte a tool list parsed before
        (and still cached), only the rest of the body is parsed and ``tools`` is the cached
        list: the very objects the cache holds, so its lookup costs one comparison per tool.
        Anything else parses the whole body, exactly as `json` reads it.
        """
        span = tools_span(raw, self._lengths, known_only=True) if self._lengths else None
        if span is not None:
            start, end = span
            elements = self._cache.by_source(raw, start, end)
            if elements is None:
                elements = self._engine.native.by_source(raw, start, end)
            if elements is not None:
                try:
                    rest = raw[:start] + b"null" + raw[end:]
                    body = json.loads(rest, parse_constant=_no_constant)
                except (ValueError, RecursionError):
                    body = None
                if isinstance(body, dict) and "tools" in body and body["tools"] is None:
                    body["tools"] = list(elements)
                    return body, True
        return _parse(raw), False

    async def _catalog(
        self, receive: _Receive, tools: list[Any] | None, chat: bool, raw: bytes | None
    ) -> None:
        """The request's tool list indexed (in the index pool, so the event loop keeps
        serving), and its acceptance set up: a 2xx from the upstream starts its search index
        and vectors (`_accepted`). A list in a client's own tool-search dialect is indexed as
        the wrapper makes it ordinary (`bot_toolsearch._wrap.client`), never as sent."""
        _ACCEPT.set(None)
        api: Api = "chat" if chat else "responses"
        if not tools or self._facts.of(tools, api, remember=raw is None).native:
            return
        found = await _until_disconnect(receive, self._index(tools, api, raw))
        if found is not None:
            _ACCEPT.set(functools.partial(self._accept, found, self._engine.snapshot()))

    def _accept(self, found: CallerTools, settings: BotSettings) -> None:
        """The upstream took a request carrying ``found``: its index build starts (`accept`),
        and its time, from acceptance to built, goes to ``GET /metrics``."""
        started = time.perf_counter()
        future = found.accept(settings)
        if future is not None:
            future.add_done_callback(
                lambda _: self.metrics.index_builds.observe(time.perf_counter() - started)
            )

    async def _index(self, tools: list[Any], api: Api, raw: bytes | None) -> CallerTools | None:
        """The catalog of ``tools`` (built in the ``index`` pool unless cached: what the first
        round needs; the search index waits for the upstream's 2xx); ``raw``, the body they
        were parsed from in full, to remember their bytes by (`_parse_known`).

        Raises:
            _Refused: 503 when the index pool cannot take the list, or not within ``timeout``.
        """
        settings = self._engine.snapshot()
        if not settings.skills.tool_search_enabled:
            return None
        delimiter = settings.tools.dot_delimiter
        found = self._cache.lookup(tools, api, delimiter)
        span = None if raw is None else tools_span(raw)
        if found is None:
            found = await self._build(tools, api, delimiter, raw, span)
        if raw is not None and span is not None:
            start, end = span
            self._cache.add_source(tools, raw[start:end])
            self._remember_length(end - start)
        return found

    async def _build(
        self,
        tools: list[Any],
        api: Api,
        delimiter: str,
        raw: bytes | None,
        span: tuple[int, int] | None,
    ) -> CallerTools | None:
        """Index a new list in the ``index`` pool; requests carrying the same raw list
        meanwhile (a burst of clients starting together) wait for that one build rather than
        each taking a place in the pool's bounded queue.

        Raises:
            _Refused: 503 when the index pool cannot take the list, or not within ``timeout``.
        """
        key = None
        if raw is not None and span is not None:
            key = (
                hashlib.sha256(raw[span[0] : span[1]]).digest()
                + f"\x00{api}\x00{delimiter}".encode()
            )
            if await self._indexing.wait(key):
                found = self._cache.lookup(tools, api, delimiter)
                if found is not None:
                    return found
        work = POOLS.index.run(self._cache.get, tools, api, delimiter, deadline=self.timeout)
        try:
            return await self._indexing.run(key, work)  # one that leaves lets it finish
        except PoolBusy:
            raise _busy("too many new tool lists", "serve --index-builds") from None
        except TimeoutError:
            busy = _busy("a new tool list is still being indexed", "serve --index-builds")
            raise busy from None

    def _settle(self) -> None:
        """After a new tool list was indexed: move the long-lived heap out of the collector's way.

        Each request parses a large tool list into short-lived objects; with the cached
        catalogs on the heap, every full collection the parse triggers walks them all (about
        three quarters of a request's time at 1,000 tools). Frozen objects are still freed by
        reference counting when the cache drops them; they are only skipped by the cycle
        collector. Happens once per distinct tool list.
        """
        gc.collect()
        gc.freeze()

    async def _forward(self, receive: _Receive, send: _Send, scope: _Scope, rest: str) -> None:
        body = await _read_body(receive, _headers(scope), self.max_body)
        tools = self._engine.snapshot().tools
        if tools.allow or tools.deny:
            check = functools.partial(refusal, scope["method"], rest, body)
            why = await asyncio.to_thread(check) if len(body) > _INLINE_CHECK else check()
            if why is not None:
                raise _Refused(403, why, code="tool_not_permitted")
        url = self._origin + quote(self._base_path + rest, safe="/:@!$&'()*+,;=~")
        query = scope.get("query_string") or b""
        if query:
            url += "?" + query.decode("latin-1")
        forward = [
            (k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _HOP_HEADERS
        ]
        admitted = ADMITTED.get()
        if admitted.keyed:  # the client's key is the proxy's: the operator's goes on
            forward = [
                (k, v)
                for k, v in forward
                if k.lower() not in (b"authorization", b"api-key", b"x-api-key")
            ]
            key = admitted.upstream_key(None)
            forward.append((b"authorization", f"Bearer {key}".encode()))
        request = self._http.build_request(scope["method"], url, headers=forward, content=body)
        if request.url.host != self._host:  # never: the URL is built from parsed parts
            raise _Refused(400, "the request target is not a path")
        try:
            response = await _until_disconnect(receive, self._http.send(request))
        except _Disconnected:
            raise
        except Exception as exc:  # any transport failure of the SDK's HTTP library
            logger.warning("proxy: upstream request failed: %s", type(exc).__name__)
            failed = f"upstream failed: {type(exc).__name__}"
            raise _Refused(502, failed, "upstream_error") from None
        if response.status_code >= 500:
            raise _Refused(502, f"upstream failed: {response.text[:2000]}", "upstream_error")
        out = [(b"content-length", str(len(response.content)).encode())]
        content_type = response.headers.get("content-type")
        if content_type:
            out.append((b"content-type", content_type.encode("latin-1")))
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        await send({"type": "http.response.body", "body": response.content})


def _admission(
    start: BotSettings, api_keys: Sequence[str] | None
) -> tuple[ClientKeys | None, Admission]:
    """The proxy's own keys (``api_keys``, else the ``[proxy] keys`` file) and its admission
    rule; named clients with no upstream key at all are refused here, at start-up.

    Raises:
        OSError: the keys file cannot be read.
        ValueError: keys or clients without an upstream key, or a bad keys file.
    """
    operator = start.model.api_key or os.environ.get("OPENAI_API_KEY", "").strip()
    if api_keys is None and start.proxy.keys is not None:
        api_keys = read_keys(start.proxy.keys)
    keys = ClientKeys(api_keys, operator) if api_keys is not None else None
    admission = Admission(operator, keys)
    if start.proxy.clients:
        admission.check(start.proxy.clients)
    return keys, admission


def _operator_keys(settings: BotSettings) -> UpstreamKeys:
    """The upstream keys the operator configured: ``[model] api_key``, ``OPENAI_API_KEY``,
    and the embeddings endpoint's key."""
    semantic = settings.skills.tool_search_embeddings
    embeddings = semantic.api_key_env if semantic is not None else None
    return UpstreamKeys(
        [
            settings.model.api_key,
            os.environ.get("OPENAI_API_KEY", "").strip(),
            os.environ.get(embeddings, "").strip() if embeddings else None,
        ]
    )


def _normalised_path(scope: _Scope) -> str:
    """The request path with dot segments (RFC 3986) and empty segments removed.

    Raises:
        _Refused: the target is not origin-form (``/...``), spells a slash or a backslash in
            percent-encoding, or climbs above the root.
    """
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    if not raw.startswith(b"/"):
        raise _Refused(400, "the request target must be a path starting with '/'")
    lowered = raw.lower()
    if b"%2f" in lowered or b"%5c" in lowered or b"\\" in raw or b"%00" in lowered:
        raise _Refused(400, "the request path encodes '/', '\\' or NUL")
    try:
        decoded = unquote(raw.decode("ascii"), errors="strict")
    except UnicodeError:
        raise _Refused(400, "the request path is not valid UTF-8") from None
    segments: list[str] = []
    for segment in decoded.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                raise _Refused(404, "the request path leaves the root", code="not_found")
            segments.pop()
            continue
        segments.append(segment)
    return "/" + "/".join(segments)


def _headers(scope: _Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse(raw: bytes) -> dict[str, Any]:
    """The JSON body as an object (no ``NaN``/``Infinity``, no nesting beyond Python's limit)."""
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise _Refused(400, "the JSON body is nested too deeply") from None
    except ValueError as exc:  # also UnicodeDecodeError
        raise _Refused(400, f"could not parse the JSON body: {exc}") from None
    if not isinstance(body, dict):
        raise _Refused(400, "the JSON body is not an object")
    return body


async def _until_disconnect(receive: _Receive, work: Awaitable[_T]) -> _T:
    """``work``'s result; cancelled, raising `_Disconnected`, when the client leaves first."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnect(receive))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    try:
        return task.result()
    finally:  # no cycle (the task, its exception, the traceback, this frame) keeps the request
        del task, watcher


async def _while_reading(
    receive: _Receive, work: Awaitable[_T], keep: int, ended: bool
) -> tuple[_T, list[bytes], bool]:
    """``work``'s result while the body is read on (unless it ``ended``), at most ``keep``
    bytes of it; cancelled, raising `_Disconnected`, when the client leaves meanwhile:
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
                raise _Disconnected
            chunks.append(received.get("body", b""))
            size += len(chunks[-1])
            ended = not received.get("more_body", False)
        return await task, chunks, ended
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        del task


async def _within(seconds: float, work: Awaitable[_T]) -> _T:
    """``work``'s result, or `TimeoutError` after ``seconds`` (no task of its own, unlike
    `asyncio.wait_for` on Python 3.11, whose task would hold a failure's traceback in a
    cycle with the request's frames)."""
    async with asyncio.timeout(seconds):
        return await work


async def _disconnect(receive: _Receive) -> None:
    """Returns when the client has disconnected; raises `_Disconnected` then."""
    while (await receive())["type"] != "http.disconnect":
        pass
    raise _Disconnected


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("api-key") or None


def _forwarded_headers(headers: dict[str, str]) -> dict[str, str]:
    """Client headers worth passing upstream (organisation, project, beta flags)."""
    keep = ("openai-organization", "openai-project", "openai-beta")
    return {k: v for k, v in headers.items() if k in keep}


def _error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and "error" in body:
        return body
    if isinstance(body, dict):
        return {"error": body}
    return {"error": {"message": exc.message, "type": "upstream_error"}}


def _upstream_failed(exc: openai.APIError) -> _Refused:
    logger.warning("proxy: upstream failed: %s (%r)", type(exc).__name__, exc.__cause__)
    return _Refused(502, f"upstream failed: {exc.message}", "upstream_error")


async def _error(
    send: _Send,
    status: int,
    message: str,
    kind: str,
    *,
    code: str | None = None,
    param: str | None = None,
    retry_after: int | None = None,
    close: bool = False,
) -> None:
    error: dict[str, str | None] = {"message": message, "type": kind, "param": param}
    error["code"] = code
    await _json(send, status, {"error": error}, retry_after=retry_after, close=close)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


async def _masked(send: _Send, keys: UpstreamKeys, message: MutableMapping[str, Any]) -> None:
    """``send`` of ``message`` with the operator's upstream keys masked in its body."""
    body = message.get("body")
    if body:
        message = {**message, "body": keys.mask(body)}
    await send(message)


async def _json_bytes(send: _Send, status: int, raw: bytes) -> None:
    """An upstream's own JSON answer, passed on as it is."""
    await _raw(send, status, raw, "application/json")


async def _raw(send: _Send, status: int, raw: bytes, content_type: str) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(raw)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def _target(scope: _Scope) -> str:
    """The request target as sent (path and query), for the access log."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    query: bytes = scope.get("query_string") or b""
    target = raw.decode("latin-1")
    return f"{target}?{query.decode('latin-1')}" if query else target


async def _json(
    send: _Send,
    status: int,
    payload: object,
    *,
    retry_after: int | None = None,
    close: bool = False,
) -> None:
    raw = json.dumps(payload, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


async def _relay(
    receive: _Receive,
    send: _Send,
    stream: Any,
    *,
    events: bool,
    flush: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Relay ``stream``; when the client leaves, the stream and its upstream request end.
    ``flush`` runs before each event is sent (the shared state's aliases, `_shared`)."""
    try:
        await _until_disconnect(receive, _sse(send, stream, events=events, flush=flush))
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            closed = close()
            if inspect.isawaitable(closed):
                await closed


async def _sse(
    send: _Send,
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
        detail = exc.message if isinstance(exc, openai.APIError) else type(exc).__name__
        await fail(f"upstream failed: {detail}", "upstream_error", "upstream_error")
        return
    if events:
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def _read_body(
    receive: _Receive, headers: Mapping[str, str], limit: int, start: Sequence[bytes] = ()
) -> bytes:
    """The whole request body; ``start``, its chunks read already (ending with an empty one
    when the body has ended).

    Raises:
        _Refused: 413 when it is (or announces to be) larger than ``limit``; it is never cut.
        _Disconnected: the client left while sending it.
    """
    length = headers.get("content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise _Refused(400, "the Content-Length header is not a number")
        if int(length) > limit:
            raise _Refused(413, _too_large(limit), code="request_too_large")
    chunks = list(start)
    size = sum(map(len, chunks))
    if size > limit:
        raise _Refused(413, _too_large(limit), code="request_too_large")
    if start and not start[-1]:
        return b"".join(chunks)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Refused(413, _too_large(limit), code="request_too_large")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _drain(receive: _Receive) -> None:
    """Read the request body to its end, keeping none of it.

    Raises:
        _Disconnected: the client left while sending it.
    """
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        if not message.get("more_body", False):
            return


def _too_large(limit: int) -> str:
    return f"the request body is larger than this proxy accepts ({limit} bytes, serve --max-body)"


def redact_query(target: str) -> str:
    """``target`` with the values of secret-looking query parameters (``key``, ``api-key``,
    ``token``, ``secret`` ...) replaced by ``REDACTED``."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    parts = []
    for item in query.split("&"):
        name, equals, _ = item.partition("=")
        lowered = unquote(name).lower()
        secret = equals and any(word in lowered for word in _SECRET_WORDS)
        parts.append(f"{name}=REDACTED" if secret else item)
    return f"{path}?{'&'.join(parts)}"


class _RedactQuery(logging.Filter):
    """Redacts secret query parameters in uvicorn's access log lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
        return True


def redact_access_log() -> None:
    """Redact secret query parameters in uvicorn's access log (idempotent)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _RedactQuery) for f in access.filters):
        access.addFilter(_RedactQuery())


def _env_number(name: str, kind: Callable[[str], _T]) -> _T | None:
    value = os.environ.get(name)
    return kind(value) if value else None


def app_from_env() -> ProxyApp:
    """The app for uvicorn's factory mode: upstream, config and limits from the environment.

    Raises:
        RuntimeError: ``BOT_TOOLSEARCH_UPSTREAM`` is not set.
    """
    upstream = os.environ.get(ENV_UPSTREAM)
    if not upstream:
        raise RuntimeError(f"set {ENV_UPSTREAM} to the upstream base URL")
    max_body = _env_number(ENV_MAX_BODY, int)
    max_tools = _env_number(ENV_MAX_TOOLS, int)
    in_flight = _env_number(ENV_MAX_IN_FLIGHT, int)
    builds = _env_number(ENV_INDEX_BUILDS, int)
    read_timeout = _env_number(ENV_READ_TIMEOUT, float)
    keys = os.environ.get(ENV_API_KEYS)
    configure_logging(os.environ.get(ENV_LOG_LEVEL) or None, os.environ.get(ENV_ACCESS_LOG))
    # ``serve`` states the tool-search mode in its banner, once, not once per worker.
    logging.getLogger("bot_toolsearch.mode").setLevel(logging.ERROR)
    return ProxyApp(
        upstream,
        config=os.environ.get(ENV_CONFIG) or None,
        timeout=_env_number(ENV_TIMEOUT, float),
        max_body=DEFAULT_MAX_BODY if max_body is None else max_body,
        max_tools=DEFAULT_MAX_TOOLS if max_tools is None else max_tools,
        max_in_flight=DEFAULT_MAX_IN_FLIGHT if in_flight is None else in_flight,
        index_builds=DEFAULT_INDEX_BUILDS if builds is None else builds,
        api_keys=keys.split() if keys else None,
        freeze_heap=True,
        read_timeout=DEFAULT_READ_TIMEOUT if read_timeout is None else read_timeout,
        upstream_api=os.environ.get(ENV_UPSTREAM_API) or "openai",
    )
