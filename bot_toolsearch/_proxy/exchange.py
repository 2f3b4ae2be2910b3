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
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from bot_toolsearch._protocol.trace import RoundTrace

from .access_log import ACCESS_LOGGER
from .metrics import ProxyMetrics

__all__ = ["Exchange", "Observer", "Route", "current", "note_body"]

access_log = logging.getLogger(ACCESS_LOGGER)

Route = str
"""``chat_completions``, ``responses``, ``forwarded``, ``healthz`` or ``metrics``."""

_LOADED_CHARS = 1024
"""Most characters of ``x-toolsearch-loaded`` (a header line must stay well under the 8 KB
most servers accept)."""
_API = {"chat_completions": "chat", "responses": "responses"}

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
    rounds: list[RoundTrace] = field(default_factory=list)
    token: contextvars.Token[Exchange | None] | None = field(default=None, repr=False)

    @property
    def api(self) -> str | None:
        """``chat`` or ``responses`` for a tool-search route, else ``None``."""
        return _API.get(self.route)

    def summary(self) -> dict[str, Any]:
        """What tool search did, summed over the rounds."""
        loaded = [name for r in self.rounds for name in r.loaded]
        return {
            "rounds": len(self.rounds),
            "hidden_rounds": sum(r.hidden for r in self.rounds),
            "searches": sum(len(r.searches) for r in self.rounds),
            "loaded": list(dict.fromkeys(loaded)),
            "refusals": sum(len(r.refusals) for r in self.rounds),
            "input_tokens": sum(r.prompt_tokens for r in self.rounds),
            "output_tokens": sum(r.output_tokens for r in self.rounds),
        }

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The ``x-toolsearch-*`` headers of this reply (none before any round)."""
        if self.stream:
            return [(b"x-toolsearch-summary", b"sse-comment")] if self.status == 200 else []
        if not self.rounds:
            return []
        facts = self.summary()
        out = [(f"x-toolsearch-{k.replace('_', '-')}", str(v)) for k, v in facts.items()]
        out = [(k, v) for k, v in out if k != "x-toolsearch-loaded"]
        out.append(("x-toolsearch-loaded", _names(facts["loaded"])))
        return [(k.encode(), v.encode("ascii")) for k, v in out]

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

    def begin(self, method: str, path: str) -> Exchange:
        """A new exchange, current for the request's tasks and threads."""
        exchange = Exchange(method, path)
        exchange.token = _CURRENT.set(exchange)
        return exchange

    def on_round(self, trace: RoundTrace) -> None:
        """The wrapped client's ``on_round``: count the round, keep it on the exchange."""
        exchange = _CURRENT.get()
        if exchange is None:
            return
        exchange.rounds.append(trace)
        api = exchange.api or "chat"
        metrics = self.metrics
        metrics.rounds.inc(api=api)
        if trace.hidden:
            metrics.hidden_rounds.inc(api=api)
        if trace.searches:
            metrics.searches.inc(len(trace.searches), api=api)
        if trace.loaded:
            metrics.loads.inc(len(trace.loaded), api=api)
        for call in trace.refusals:
            metrics.refusals.inc(api=api, reason=call.reason or call.outcome)

    def sender(self, exchange: Exchange, send: _Send) -> _Send:
        """``send`` that adds the tool-search headers (or a stream's closing comment) and
        notes the status."""

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
            await send(message)

        return observed

    def finish(self, exchange: Exchange) -> None:
        """Count the request and write its access-log record."""
        if exchange.token is not None:
            _CURRENT.reset(exchange.token)
            exchange.token = None
        status = exchange.status or 499  # the client left before any answer
        seconds = time.perf_counter() - exchange.started
        self.metrics.requests.inc(route=exchange.route, code=f"{status // 100}xx")
        if not access_log.isEnabledFor(logging.INFO):
            return
        record: dict[str, Any] = {
            "method": exchange.method,
            "path": exchange.path,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
            "route": exchange.route,
        }
        if exchange.api is not None:
            record |= {"model": exchange.model, "stream": exchange.stream, **exchange.summary()}
        access_log.info(
            "%s %s %d", exchange.method, exchange.path, status, extra={"access": record}
        )
