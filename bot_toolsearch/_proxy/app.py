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

This module is the ASGI router: a request is made one `Request` (`request`) and passed down
its route's stages in one direction: admission (`admission`: keys, clients, their in-flight
bounds), the body (`body`: deadlines, limits, the key probe), the tool list (`tools`: parsing,
checks, the catalog), and the call upstream with its answer (`relay`); every other path is
forwarded (`forward`), and ``POST /v1/messages`` has its route (`messages`).

The request target is normalised once (dot segments removed, empty segments dropped) and
must stay inside the root; the outgoing URL is the upstream's scheme, host and port plus the
upstream's base path and the normalised path, so no spelling of a path reaches another host,
leaves the upstream's base path, or bypasses tool search.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
from collections.abc import Callable, Sequence
from typing import TypeVar
from urllib.parse import unquote, urlsplit

import openai

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._services.shared_state import open_state
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch._wrap.client import engine_of, wrap_openai

from .access_log import configure_logging, redact_access_log, redact_query
from .admission import admission_from
from .body import BodyStage, KeyProbe
from .client_copies import ClientCopies
from .edge import WEBSOCKET_REFUSED, framing_problem, is_websocket_upgrade, refuse_websocket
from .exchange import Observer, note_body, note_route
from .forward import Forward
from .heap import Leftovers
from .keys import operator_keys
from .limits import DEFAULT_INDEX_BUILDS, DEFAULT_MAX_IN_FLIGHT, BodyBytes, InFlight, body_bytes_for
from .messages import MESSAGES_PATH, MessagesRoute
from .metrics import CONTENT_TYPE, ProxyMetrics
from .reading import (
    DEFAULT_READ_TIMEOUT,
    ENV_READ_TIMEOUT,
    BodiesFull,
    BodyTimeout,
    InFlightFull,
    Reading,
)
from .relay import Relay, count_request, masked, send_error, send_json, send_raw, send_refusal
from .request import Disconnected, Receive, Refused, Request, Scope, Send
from .tools import ToolStage, accept_on_2xx
from .upstream_http import upstream_http, without_platform_headers
from .upstream_timing import UpstreamTimer

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
    "POOLS",
    "ProxyApp",
    "app_from_env",
    "redact_query",
]

logger = logging.getLogger("bot_toolsearch")
_T = TypeVar("_T")

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

_FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones under ``freeze_heap`` (CPython's
default is 10). Each request parses a large tool list that stays alive while the upstream
answers; with 50 requests in flight, every full collection walked millions of those objects
(1,000 tools, one worker: 29 requests/s before, 43 after, profiled). Cyclic garbage waits
longer to be freed; reference counting frees everything else at once."""
_TOOL_SEARCH_PATHS = frozenset({"/chat/completions", "/responses"})
_PLAIN_PATH_BREAKERS = (b"%", b"\\", b"/.", b"//")
"""What a path needs `_normalised_path`'s full reading for: without these bytes (and in
ASCII) no segment is encoded, empty, ``.`` or ``..``."""
_ROUTE_PATHS = {
    path.encode(): path
    for path in (
        "/v1/chat/completions",
        "/v1/responses",
        f"/v1{MESSAGES_PATH}",
        "/healthz",
        "/metrics",
    )
}
"""The routes' own paths, spelled as they are: each is its normalised path, found without
reading it (a few bytes searches cost a microsecond, issue 44)."""


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
        self.max_body = max_body
        self.max_tools = max_tools
        self._in_flight = InFlight(max_in_flight)
        self._body_bytes = BodyBytes(body_bytes_for(max_body) if body_bytes is None else body_bytes)
        if index_builds < 1:
            raise ValueError(f"index_builds must be at least 1, got {index_builds}")
        POOLS.configure(index_builds=index_builds, index_queue=4 * index_builds)
        redact_access_log()
        self.metrics = ProxyMetrics(lambda: len(self._cache), lambda: self._cache.cached_bytes)
        """The counters ``GET /metrics`` exposes."""
        self._observer = Observer(self.metrics)
        timer = UpstreamTimer(lambda api, seconds: self.metrics.upstream.at(api).observe(seconds))
        self._http = upstream_http((count_request, timer.sent), (accept_on_2xx, timer.answered))
        # One retry: a pooled keep-alive connection the upstream closed meanwhile fails once.
        # The whole call stays within ``timeout`` (`bot_toolsearch._proxy.relay`).
        inner = without_platform_headers(
            openai.AsyncOpenAI(
                base_url=self.upstream, api_key="unset", max_retries=1, http_client=self._http
            )
        )
        self._client = wrap_openai(
            inner, config=config, settings=settings, on_round=self._observer.on_round
        )
        engine = engine_of(self._client)
        assert engine is not None
        self._engine = engine
        self._cache = engine.cache
        self.timeout = timeout if timeout is not None else engine.snapshot().model.timeout
        self._client = self._client.with_options(timeout=self.timeout)
        start = engine.snapshot()
        self._keys, self._admission = admission_from(start, api_keys)
        self._state, self._upstream_keys = open_state(start.proxy.state), operator_keys(start)
        """The shared state (`state`), and the operator's upstream keys, masked in everything
        sent to a client."""
        probe = KeyProbe(self._http, self.upstream, self.timeout)
        self._body = BodyStage(
            probe,
            max_body=max_body,
            read_timeout=read_timeout,
            body_bytes=self._body_bytes,
            in_flight=self._in_flight,
        )
        self._tools = ToolStage(
            engine,
            probe,
            self.metrics,
            max_tools=max_tools,
            timeout=self.timeout,
            freeze_heap=freeze_heap,
        )
        self._facts = self._tools.facts
        self._relay = Relay(ClientCopies(self._client), engine, self.timeout, self._state)
        self._forward = Forward(self.upstream, self._http, engine, max_body, self.timeout)
        self._messages = self._messages_route(upstream_api, max_tools)
        """``POST /v1/messages`` with tool search (``upstream_api="messages"``)."""

    def _messages_route(self, upstream_api: str, max_tools: int) -> MessagesRoute | None:
        if upstream_api == "messages":
            return MessagesRoute(
                self.upstream,
                self._http,
                self._engine,
                timeout=self.timeout,
                max_tools=max_tools,
                on_round=self._observer.on_round,
                body=self._body,
            )
        if upstream_api != "openai":
            raise ValueError(f"upstream_api must be 'openai' or 'messages', got {upstream_api!r}")
        return None

    async def aclose(self) -> None:
        """Close the upstream connections and stop watching ``config.toml``."""
        await self._client.close()
        if self._state is not None:
            await self._state.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await refuse_websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        keys = self._upstream_keys
        exchange = self._observer.begin(scope["method"], scope)
        # One send wrapper: the tool-search headers, the status, the keys masked.
        observed = self._observer.sender(exchange, send, keys.mask if keys else None)
        if keys:  # what the proxy sends of its own below, the operator's keys masked too
            send = functools.partial(masked, send, keys)
        reading = Reading(receive, self.read_timeout, self._in_flight, self._body_bytes)
        refused = 0
        try:
            await self._route(scope, reading, observed)
        except Disconnected:
            return
        except asyncio.CancelledError:  # the server stops: what still runs is cancelled
            if not exchange.status:
                await send_error(
                    send,
                    503,
                    "the proxy is shutting down",
                    "server_error",
                    code="server_shutting_down",
                    close=True,
                )
                exchange.status = 503
            return  # the request's own task ends here: no traceback for a stop
        except Refused as exc:
            if not exchange.status:
                await send_refusal(send, exc)
                refused = exchange.status = exc.status  # the access log's and metrics' status
        except Exception as exc:  # the last resort: never a text/plain 500 or a traceback
            logger.error("proxy: internal error: %s", type(exc).__name__)
            if not exchange.status:
                await send_error(send, 500, "internal error in the proxy", "server_error")
                exchange.status = 500
            else:
                await send({"type": "http.response.body", "body": b""})
        finally:
            reading.leave()
            status = refused or exchange.status
            self._observer.finish(exchange)
            if self._freeze_heap and not 200 <= status < 400:
                self._leftovers.refused(reading.size)

    async def _route(self, scope: Scope, receive: Reading, send: Send) -> None:
        """The request made a `Request` and passed down its route's stages."""
        raw_headers = scope["headers"]
        headers = _headers(raw_headers)
        # The edge's checks, run on the headers that can fail them (names are in ``headers``).
        framing = framing_problem(raw_headers) if "transfer-encoding" in headers else None
        if framing is not None:
            raise Refused(400, framing, code="invalid_framing", close=True)
        if "upgrade" in headers and is_websocket_upgrade(raw_headers):
            raise Refused(426, WEBSOCKET_REFUSED, code="websocket_not_supported")
        path = _normalised_path(scope)
        if path == "/healthz":
            note_route("healthz")
            stuck = POOLS.stuck()
            if stuck:
                pools = {status.name: status.as_json() for status in stuck}
                await send_json(send, 503, {"status": "stuck", "pools": pools})
            else:
                await send_json(send, 200, {"status": "ok"})
            return
        if path == "/metrics" and scope["method"] == "GET":
            note_route("metrics")
            await send_raw(send, 200, self.metrics.render(), CONTENT_TYPE)
            return
        request = Request(scope, receive, send, path, headers)
        rest, post = request.rest, request.method == "POST"
        try:
            self._admission.stage(request, self._engine.snapshot().proxy.clients)
            if rest == MESSAGES_PATH and self._messages is not None and post:
                await self._messages(request)
            elif rest in _TOOL_SEARCH_PATHS and post:
                request.chat = rest == "/chat/completions"
                note_route("chat_completions" if request.chat else "responses")
                await self._create(request)
            else:
                await self._forward(request)
        except (BodyTimeout, BodiesFull, InFlightFull) as exc:
            raise self._body.refusal(exc) from None

    async def _create(self, request: Request) -> None:
        """A tool-searched request down its stages: body, tools, the call and its answer."""
        if not await self._body.read(request) or not await self._tools.read(request):
            return
        note_body(request.body)
        await self._tools.catalog(request)
        answer = await self._relay.call(request)
        if answer is None:
            return
        self._body.probe.known.accept(request.key_digest)
        self._tools.taken(request)
        await self._relay.answer(request, answer)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


_HEADER_NAMES = {
    name.encode(): name
    for name in (
        "accept",
        "accept-encoding",
        "accept-language",
        "anthropic-beta",
        "anthropic-version",
        "api-key",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
        "openai-beta",
        "openai-organization",
        "openai-project",
        "traceparent",
        "transfer-encoding",
        "user-agent",
        "x-api-key",
        "x-forwarded-for",
        "x-request-id",
        "x-stainless-arch",
        "x-stainless-async",
        "x-stainless-lang",
        "x-stainless-os",
        "x-stainless-package-version",
        "x-stainless-read-timeout",
        "x-stainless-retry-count",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        "x-stainless-timeout",
    )
}
"""Common header names as servers send them (lower case), each its own name: found, not
decoded and lower-cased again on every request (issue 44)."""


def _headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers by name, lower-cased (the last of a repeated name wins)."""
    names = _HEADER_NAMES
    return {
        names[k] if k in names else k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw
    }


def _normalised_path(scope: Scope) -> str:
    """The request path with dot segments (RFC 3986) and empty segments removed.

    Raises:
        Refused: the target is not origin-form (``/...``), spells a slash or a backslash in
            percent-encoding, or climbs above the root.
    """
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    known = _ROUTE_PATHS.get(raw)
    if known is not None:
        return known
    if not raw.startswith(b"/"):
        raise Refused(400, "the request target must be a path starting with '/'")
    if (  # `_PLAIN_PATH_BREAKERS`, spelled out: no generator for the common path
        raw.isascii()
        and b"%" not in raw
        and b"\\" not in raw
        and b"/." not in raw
        and b"//" not in raw
    ):
        # Nothing encoded, no dot or empty segment: the path as sent, less a trailing slash.
        plain = raw.decode("ascii")
        return plain[:-1] if len(plain) > 1 and plain.endswith("/") else plain
    return _read_path(raw)


def _read_path(raw: bytes) -> str:
    """`_normalised_path`'s full reading of a target that starts with ``/``.

    Raises:
        Refused: as `_normalised_path`.
    """
    lowered = raw.lower()
    if b"%2f" in lowered or b"%5c" in lowered or b"\\" in raw or b"%00" in lowered:
        raise Refused(400, "the request path encodes '/', '\\' or NUL")
    try:
        decoded = unquote(raw.decode("ascii"), errors="strict")
    except UnicodeError:
        raise Refused(400, "the request path is not valid UTF-8") from None
    segments: list[str] = []
    for segment in decoded.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                raise Refused(404, "the request path leaves the root", code="not_found")
            segments.pop()
            continue
        segments.append(segment)
    return "/" + "/".join(segments)


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
