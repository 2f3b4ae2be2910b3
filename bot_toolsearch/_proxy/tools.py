"""The tools stage: a request's body parsed and its tool list checked, found in the cache or
indexed, and what a list in the client's own tool-search dialect costs kept bounded.

A body whose top-level ``tools`` bytes are a list parsed before is parsed without them, and
the cached list stands in (`ToolStage.read`). The list is bounded (``--max-tools``, dialect
namespaces and resent ``tool_search_output`` items counted); a list in the dialect naming
many tools waits for the key probe (`bot_toolsearch._proxy.body.KeyProbe.many_tools`). A new
list gets its catalog (what the first round needs) in the ``index`` pool, one build shared by
the requests carrying the same bytes; its keyword index and vectors are built only once the
upstream answers 2xx to a request carrying it (`accept_on_2xx`).
"""

from __future__ import annotations

import contextvars
import functools
import gc
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._services.threads import POOLS, PoolBusy, SharedWork
from bot_toolsearch._wrap.caller_tools import Api, CallerTools
from bot_toolsearch._wrap.engine import Engine
from bot_toolsearch._wrap.tool_facts import ToolFacts

from .body import KeyProbe
from .metrics import ProxyMetrics
from .raw_tools import tools_span
from .request import Refused, Request, busy, until_disconnect

__all__ = ["ToolStage", "accept_on_2xx", "parse_body"]

_LENGTHS = 8
"""Most tool-list byte lengths `ToolStage._parse_known` tries before scanning the value."""

_ACCEPT: contextvars.ContextVar[Callable[[], object] | None] = contextvars.ContextVar(
    "bot_toolsearch_proxy_accept", default=None
)
"""What to call when the upstream answers 2xx to this request (its tool list is accepted)."""


def accept_on_2xx(response: Any) -> None:
    """The HTTP client's response hook: headers are in, and a 2xx accepts the request's tool
    list (its index build starts now, in parallel with the model's answer)."""
    accept = _ACCEPT.get()
    if accept is not None and 200 <= response.status_code < 300:
        accept()


class ToolStage:
    """The tool list of a tool-searched request.

    Args:
        engine: the wrapper's engine (its settings, tool-list cache and dialect cache).
        probe: the key probe, asked before a dialect list naming many tools is read.
        metrics: where index build times go.
        max_tools: the most tools one request may name.
        timeout: seconds an index build may take.
        freeze_heap: move the heap out of the collector's way after a new list (`_settle`).
    """

    def __init__(
        self,
        engine: Engine,
        probe: KeyProbe,
        metrics: ProxyMetrics,
        *,
        max_tools: int,
        timeout: float,
        freeze_heap: bool,
    ) -> None:
        self._engine, self._cache, self._probe, self._metrics = engine, engine.cache, probe, metrics
        self._max_tools, self._timeout, self._freeze_heap = max_tools, timeout, freeze_heap
        self._lengths: list[int] = []
        """Byte lengths of the ``tools`` values parsed before, newest first (`_parse_known`)."""
        self.facts = ToolFacts()
        """Whether a tool list speaks the dialect and how many tools it names, kept for the
        cached lists `_parse_known` hands over."""
        self._indexing = SharedWork()
        """New tool lists being indexed, by the digest of their raw bytes: a request with the
        same list waits for that build instead of queueing its own (`_build`)."""

    async def read(self, request: Request) -> bool:
        """``request.raw`` parsed into ``body``, its ``tools`` checked, and whether they are
        ``known`` (cached) or ``native`` (the client's dialect); ``False`` when a dialect list
        naming many tools met a refused key and that answer was sent.

        Raises:
            Refused: a malformed body (400), or more tools than ``max_tools`` (400).
        """
        raw = request.raw
        body, cached = self._parse_known(raw)
        known = cached is not None
        request.body, request.known = body, known
        tools = request.tools = self._check(body, request.chat, cached)
        api: Api = "chat" if request.chat else "responses"
        request.native = (
            not known and tools is not None and self.facts.of(tools, api, remember=False).native
        )
        return await self._probe.many_tools(request)

    async def catalog(self, request: Request) -> None:
        """The request's tool list indexed (in the index pool, so the event loop keeps
        serving), and its acceptance set up: a 2xx from the upstream starts its search index
        and vectors (`accept_on_2xx`). A list in a client's own tool-search dialect is indexed
        as the wrapper makes it ordinary (`bot_toolsearch._wrap.client`), never as sent."""
        request.builds = self._cache.builds
        tools, raw = request.tools, None if request.known else request.raw
        _ACCEPT.set(None)
        api: Api = "chat" if request.chat else "responses"
        if not tools or self.facts.of(tools, api, remember=raw is None).native:
            return
        found = self._cached(tools, api, raw)
        if found is None:
            found = await until_disconnect(request.receive, self._index(tools, api, raw))
        if found is not None:
            _ACCEPT.set(functools.partial(self._accept, found, self._engine.snapshot()))

    def taken(self, request: Request) -> None:
        """The upstream took the request: a dialect list's bytes are remembered, and after a
        new list the heap is settled (``freeze_heap``)."""
        if request.native and request.tools:
            self._remember_native(request.tools, request.raw)
        if self._freeze_heap and self._cache.builds != request.builds:
            _settle()

    def _check(
        self, body: dict[str, Any], chat: bool, cached: tuple[Any, ...] | None
    ) -> Sequence[Any] | None:
        """The request's tool list after the checks the proxy makes before calling upstream
        (``cached``: the cache's own entries it was found as, `_parse_known`)."""
        if "stream" in body and not isinstance(body["stream"], bool | None):
            raise Refused(400, "'stream' must be a boolean", param="stream")
        if chat and not isinstance(body.get("messages"), list):
            raise Refused(400, "'messages' must be an array", param="messages")
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list) and tools is not cached:
            raise Refused(400, "'tools' must be an array", param="tools")
        api: Api = "chat" if chat else "responses"
        listed, resent = self.facts.named(body, api, remember=cached is not None)
        if listed + resent > self._max_tools:
            raise Refused(
                400,
                f"the request names {listed + resent} tools ({listed} in 'tools', namespace"
                f" members counted, {resent} in 'input' tool_search_output items); this proxy"
                f" accepts at most {self._max_tools} (serve --max-tools)",
                code="array_above_max_length",
                param="tools" if listed > self._max_tools else None,
            )
        return tools

    def _remember_native(self, tools: Sequence[Any], raw: bytes) -> None:
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

    def _parse_known(self, raw: bytes) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
        """The JSON body, and the cache's own entries when its ``tools`` are a cached list
        found by its bytes (else ``None``).

        When the body's top-level ``tools`` bytes are byte for byte a tool list parsed before
        (and still cached), only the rest of the body is parsed and ``tools`` is the cached
        list: the cache's own tuple (immutable, so every lookup of it on the way, the
        engine's plan included, is one identity test, whatever the list's length). Anything
        else parses the whole body, exactly as `json` reads it.
        """
        span = tools_span(raw, self._lengths, known_only=True) if self._lengths else None
        if span is not None:
            start, end = span
            elements = self._cache.by_source(raw, start, end)
            if elements is None:
                elements = self._engine.native.by_source(raw, start, end)
            if elements is not None:
                try:
                    body = _loads(raw[:start] + b"null" + raw[end:])
                except (ValueError, RecursionError):
                    body = None
                if isinstance(body, dict) and "tools" in body and body["tools"] is None:
                    body["tools"] = elements
                    return body, elements
        return parse_body(raw), None

    def _accept(self, found: CallerTools, settings: BotSettings) -> None:
        """The upstream took a request carrying ``found``: its index build starts (`accept`),
        and its time, from acceptance to built, goes to ``GET /metrics``."""
        started = time.perf_counter()
        future = found.accept(settings)
        if future is not None:
            future.add_done_callback(
                lambda _: self._metrics.index_builds.observe(time.perf_counter() - started)
            )

    def _cached(self, tools: Sequence[Any], api: Api, raw: bytes | None) -> CallerTools | None:
        """The catalog of a list found by its bytes (``raw`` is ``None``: `_parse_known`),
        without a task: nothing to wait for, so no watch for the client leaving either; else
        ``None`` (`_index` decides)."""
        if raw is not None:
            return None
        settings = self._engine.snapshot()
        if not settings.skills.tool_search_enabled:
            return None
        return self._cache.lookup(tools, api, settings.tools.dot_delimiter)

    async def _index(self, tools: Sequence[Any], api: Api, raw: bytes | None) -> CallerTools | None:
        """The catalog of ``tools`` (built in the ``index`` pool unless cached: what the first
        round needs; the search index waits for the upstream's 2xx); ``raw``, the body they
        were parsed from in full, to remember their bytes by (`_parse_known`).

        Raises:
            Refused: 503 when the index pool cannot take the list, or not within ``timeout``.
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
        tools: Sequence[Any],
        api: Api,
        delimiter: str,
        raw: bytes | None,
        span: tuple[int, int] | None,
    ) -> CallerTools | None:
        """Index a new list in the ``index`` pool; requests carrying the same raw list
        meanwhile (a burst of clients starting together) wait for that one build rather than
        each taking a place in the pool's bounded queue.

        Raises:
            Refused: 503 when the index pool cannot take the list, or not within ``timeout``.
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
        work = POOLS.index.run(self._cache.get, tools, api, delimiter, deadline=self._timeout)
        try:
            return await self._indexing.run(key, work)  # one that leaves lets it finish
        except PoolBusy:
            raise busy("too many new tool lists", "serve --index-builds") from None
        except TimeoutError:
            still = busy("a new tool list is still being indexed", "serve --index-builds")
            raise still from None


def _settle() -> None:
    """After a new tool list was indexed: move the long-lived heap out of the collector's way.

    Each request parses a large tool list into short-lived objects; with the cached
    catalogs on the heap, every full collection the parse triggers walks them all (about
    three quarters of a request's time at 1,000 tools). Frozen objects are still freed by
    reference counting when the cache drops them; they are only skipped by the cycle
    collector. Happens once per distinct tool list.
    """
    gc.collect()
    gc.freeze()


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
"""The decoder of `_loads`, made once: ``json.loads`` with an argument makes one per call
(about 2 µs a request, issue 44)."""


def _loads(raw: bytes) -> Any:
    """``json.loads(raw, parse_constant=...)`` refusing ``NaN`` and ``Infinity``: the same
    value, or the same error, from one decoder made once.

    Raises:
        ValueError: ``raw`` is not JSON (`UnicodeDecodeError` when it is not text).
        RecursionError: it is nested too deeply.
    """
    return _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON body as an object (no ``NaN``/``Infinity``, no nesting beyond Python's limit).

    Raises:
        Refused: 400 when it is not a JSON object.
    """
    try:
        body = _loads(raw)
    except RecursionError:
        raise Refused(400, "the JSON body is nested too deeply") from None
    except ValueError as exc:  # also UnicodeDecodeError
        raise Refused(400, f"could not parse the JSON body: {exc}") from None
    if not isinstance(body, dict):
        raise Refused(400, "the JSON body is not an object")
    return body
