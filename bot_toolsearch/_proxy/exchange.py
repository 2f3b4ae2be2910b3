"""What tool search did for one proxied request: the response headers, the stream's closing
summary, the metrics and the access-log record.

The wrapped client reports each upstream round (`wrap_openai(on_round=...)`); the proxy
collects them per HTTP request through a context variable (the rounds run in the request's own
tasks and worker threads, which inherit it). A non-streamed tool-searched reply carries:

- ``x-toolsearch-rounds``: model requests made; ``x-toolsearch-hidden-rounds``: of those, the
  ones the proxy answered itself;
- ``x-toolsearch-searches``: ``tool_search`` calls answered; ``x-toolsearch-loaded``: the
  tools they loaded (comma-separated, at most `_LOADED_CHARS` characters, then ``...+N``);
- ``x-toolsearch-refusals``: calls refused or unusable;
- ``x-toolsearch-input-tokens`` / ``x-toolsearch-output-tokens``: usage summed over rounds.

Headers go out before a stream's first byte, when the rounds are not over, so a streamed reply
carries only ``x-toolsearch-summary: sse-comment``; the same facts end the stream as one SSE
comment line (``: x-toolsearch rounds=2 hidden-rounds=1 ...``), which SSE clients (the openai
SDK included) skip. No trailers: most HTTP/1.1 clients and proxies drop them.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME
from bot_toolsearch._protocol.trace import RoundTrace

from .access_log import ACCESS_LOGGER, logged_target
from .metrics import ProxyMetrics

__all__ = ["Exchange", "Observer", "Route", "current", "note_body", "note_client", "note_route"]

access_log = logging.getLogger(ACCESS_LOGGER)

Route = str
"""``chat_completions``, ``responses``, ``messages``, ``forwarded``, ``healthz`` or
``metrics``."""

_LOADED_CHARS = 1024
"""Most characters of ``x-toolsearch-loaded`` (a header line must stay well under the 8 KB
most servers accept)."""
_API = {"chat_completions": "chat", "responses": "responses", "messages": "messages"}

_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class Exchange:
    """One HTTP request as the proxy saw it."""

    method: str
    path: str
    route: Route = "forwarded"
    started: float = field(default_factory=time.perf_counter)
    status: int = 0
    stream: bool = False
    model: str | None = None
    rounds: int = 0
    hidden_rounds: int = 0
    searches: int = 0
    loaded: dict[str, None] = field(default_factory=dict)
    refusals: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    client: str | None = None
    """The ``[[proxy.clients]]`` name the request came from, if any (never its key)."""
    token: contextvars.Token[Exchange | None] | None = field(default=None, repr=False)
    scope: Mapping[str, Any] | None = field(default=None, repr=False)
    """The request's ASGI scope: ``path`` read from it only if the access log writes it."""

    def target(self) -> str:
        """``path``, else the scope's target as the access log writes it (`logged_target`)."""
        if self.path or self.scope is None:
            return self.path
        return logged_target(self.scope)

    @property
    def api(self) -> str | None:
        """``chat``, ``responses`` or ``messages`` for a tool-search route, else ``None``."""
        return _API.get(self.route)

    def add(self, trace: RoundTrace) -> tuple[int, int]:
        """Count one round; its searches and refusals."""
        self.rounds += 1
        self.hidden_rounds += trace.hidden
        self.input_tokens += trace.prompt_tokens
        self.output_tokens += trace.output_tokens
        if not trace.calls and not trace.loaded:  # a plain answer: nothing else to count
            return 0, 0
        searches = sum(call.name == TOOL_SEARCH_NAME for call in trace.calls)
        refusals = sum(call.outcome in ("refused", "invalid") for call in trace.calls)
        self.searches += searches
        self.loaded.update(dict.fromkeys(trace.loaded))
        self.refusals += refusals
        return searches, refusals

    def summary(self) -> dict[str, Any]:
        """What tool search did, summed over the rounds."""
        return {
            "rounds": self.rounds,
            "hidden_rounds": self.hidden_rounds,
            "searches": self.searches,
            "loaded": list(self.loaded),
            "refusals": self.refusals,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The ``x-toolsearch-*`` headers of this reply (none before any round)."""
        if self.stream:
            return [(b"x-toolsearch-summary", b"sse-comment")] if self.status == 200 else []
        if not self.rounds:
            return []
        return [
            (b"x-toolsearch-rounds", b"%d" % self.rounds),
            (b"x-toolsearch-hidden-rounds", b"%d" % self.hidden_rounds),
            (b"x-toolsearch-searches", b"%d" % self.searches),
            (b"x-toolsearch-refusals", b"%d" % self.refusals),
            (b"x-toolsearch-input-tokens", b"%d" % self.input_tokens),
            (b"x-toolsearch-output-tokens", b"%d" % self.output_tokens),
            (
                b"x-toolsearch-loaded",
                _names(list(self.loaded)).encode("ascii") if self.loaded else b"",
            ),
        ]

    def comment(self) -> bytes:
        """The closing SSE comment of a stream."""
        facts = self.summary()
        parts = [
            f"{k.replace('_', '-')}={_names(v) if k == 'loaded' else v}" for k, v in facts.items()
        ]
        return f": x-toolsearch {' '.join(parts)}\n\n".encode("ascii")


def _names(names: list[str]) -> str:
    """Tool names as one header value: ASCII (others percent-encoded), comma-separated,
    bounded."""
    out: list[str] = []
    size = 0
    for i, name in enumerate(names):
        safe = quote(name, safe="._-:/@+")
        if size + len(safe) + 1 > _LOADED_CHARS:
            out.append(f"...+{len(names) - i}")
            break
        out.append(safe)
        size += len(safe) + 1
    return ",".join(out)


_CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "bot_toolsearch_proxy_exchange", default=None
)


def current() -> Exchange | None:
    """The exchange of the request being served, if any."""
    return _CURRENT.get()


def note_route(route: Route) -> None:
    """Note which route the current exchange took."""
    exchange = _CURRENT.get()
    if exchange is not None:
        exchange.route = route


def note_client(name: str) -> None:
    """Note which named client the current exchange came from."""
    exchange = _CURRENT.get()
    if exchange is not None:
        exchange.client = name


def note_body(body: dict[str, Any]) -> None:
    """Note what the current exchange's JSON body asks: a stream, which model."""
    exchange = _CURRENT.get()
    if exchange is not None:
        exchange.stream = body.get("stream") is True
        model = body.get("model")
        exchange.model = model if isinstance(model, str) else None


class Observer:
    """The metrics and access log of one proxy app, and its requests' exchanges."""

    def __init__(self, metrics: ProxyMetrics) -> None:
        self.metrics = metrics

    def begin(self, method: str, scope: Mapping[str, Any]) -> Exchange:
        """A new exchange for the request of ``scope``, current for the request's tasks and
        threads (its target is read from ``scope`` only for the access log)."""
        exchange = Exchange(method, "", scope=scope)
        exchange.token = _CURRENT.set(exchange)
        return exchange

    def on_round(self, trace: RoundTrace) -> None:
        """The wrapped client's ``on_round``: count the round, keep it on the exchange."""
        exchange = _CURRENT.get()
        if exchange is None:
            return
        searches, refusals = exchange.add(trace)
        api = exchange.api or "chat"
        metrics = self.metrics
        metrics.rounds.at(api).inc()
        if trace.hidden:
            metrics.hidden_rounds.at(api).inc()
        if searches:
            metrics.searches.at(api).inc(searches)
        if trace.loaded:
            metrics.loads.at(api).inc(len(trace.loaded))
        if refusals:
            for call in trace.refusals:
                metrics.refusals.inc(api=api, reason=call.reason or call.outcome)

    def sender(
        self, exchange: Exchange, send: _Send, mask: Callable[[bytes], bytes] | None = None
    ) -> _Send:
        """``send`` that adds the tool-search headers (or a stream's closing comment), notes
        the status on ``exchange``, and applies ``mask`` to each body (the operator's keys,
        `bot_toolsearch._proxy.keys.UpstreamKeys`): one wrapper, not one per concern."""

        async def observed(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                exchange.status = int(message["status"])
                if exchange.api is not None:
                    message = {**message, "headers": [*message["headers"], *exchange.headers()]}
            elif (
                exchange.stream
                and exchange.status == 200
                and exchange.api is not None
                and not message.get("more_body", False)
            ):
                body = bytes(message.get("body", b""))
                message = {**message, "body": exchange.comment() + body}
            if mask is not None:
                data = message.get("body")
                if data:
                    message = {**message, "body": mask(data)}
            await send(message)

        return observed

    def finish(self, exchange: Exchange) -> None:
        """Count the request and write its access-log record."""
        if exchange.token is not None:
            _CURRENT.reset(exchange.token)
            exchange.token = None
        status = exchange.status or 499  # the client left before any answer
        code = f"{status // 100}xx"
        metrics = self.metrics
        metrics.requests.at(code, exchange.route).inc()  # labels: code, route
        metrics.refresh()
        if exchange.client is not None:
            metrics.client_requests.at(exchange.client, code).inc()  # labels: client, code
        if not access_log.isEnabledFor(logging.INFO):
            return
        seconds = time.perf_counter() - exchange.started
        path = exchange.target()
        record: dict[str, Any] = {
            "method": exchange.method,
            "path": path,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
            "route": exchange.route,
        }
        if exchange.client is not None:
            record["client"] = exchange.client
        if exchange.api is not None:
            record |= {"model": exchange.model, "stream": exchange.stream, **exchange.summary()}
        access_log.info("%s %s %d", exchange.method, path, status, extra={"access": record})
