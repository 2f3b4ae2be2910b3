"""The caller's tool list as the wrapper indexes it, cached by a cheap fingerprint.

A framework resends its full tool list on every ``create`` call; indexing it costs time
proportional to the catalog, so the catalog is built once and reused while the list is
unchanged (see `ToolsCache` for what "unchanged" costs to check).

A new list gets only what its first round needs: the catalog (names, wire names, the
directory). Its keyword index and its vectors (the semantic stage, a paid endpoint) are built
only once the upstream has *accepted* a request carrying it (a 2xx answer,
`CallerTools.accept`), in the ``index`` pool, so input that a stranger sends with a wrong or no
key costs neither the operator's embeddings endpoint nor the index's CPU and memory.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import operator
import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from bot_toolsearch._config.settings import BotSettings, EmbeddingsSettings
from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME, ToolCatalog, indexes_built
from bot_toolsearch._core.reserved import ReservedTool
from bot_toolsearch._errors import CatalogError
from bot_toolsearch._services.indexing import build_index, index_built
from bot_toolsearch._services.permissions import pattern_filter
from bot_toolsearch._services.semantic import warm_semantic
from bot_toolsearch._services.threads import POOLS, PoolBusy
from bot_toolsearch._tools.tool import Tool
from bot_toolsearch._transports.names import WireNames
from bot_toolsearch._transports.wire import wire_tool

__all__ = ["Api", "CallerTools", "CallerView", "ToolsCache", "tool_name"]

logger = logging.getLogger("bot_toolsearch")

Api = Literal["chat", "responses"]
"""Which tool shape the list uses: Chat Completions (nested ``function``) or Responses (flat)."""

_CACHE_SIZE = 32
"""Most distinct tool lists remembered (one per agent or framework sharing the wrapper)."""
_CACHE_BYTES = 256 * 1024 * 1024
"""Most bytes of memory the remembered lists hold, as `ToolsCache.held` estimates it; one list
larger than this is still kept while it is the newest."""
_UNACCEPTED_KEPT = 8
"""Most lists kept that no upstream has accepted yet (`CallerTools.accepted`): the newest ones,
and they go first when the cache is over its bounds, so strangers' lists cannot push out the
lists in use."""
_HELD_PER_JSON_BYTE = 6
"""Bytes of memory a cached list holds per byte of its JSON, without a search index: the
parsed entries (about 3.6) and the catalog with its wire names (about 2.6), measured with
tracemalloc on 20,000 tools."""
_INDEX_PER_JSON_BYTE = 3
"""Bytes of memory each search index of a list adds per byte of its JSON (about 2.5,
measured the same way)."""
_SOURCES_PER_LIST = 4
"""Most raw JSON spellings remembered per cached list (see `ToolsCache.add_source`)."""
_FALLBACK_TOOL_BYTES = 4096
"""The size counted for each tool of a list that cannot be measured as JSON."""


def tool_name(tool: object, api: Api) -> str | None:
    """The function name of one caller tool entry, or ``None`` when it is not a function tool."""
    if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
        return None
    if api == "chat":
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    else:
        name = tool.get("name")
    return name if isinstance(name, str) else None


def _chat_schema(tool: Mapping[str, Any], api: Api) -> Mapping[str, Any]:
    """The Chat Completions shape the core indexes."""
    if api == "chat":
        return tool
    function = {k: v for k, v in tool.items() if k in ("name", "description", "parameters")}
    return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True, eq=False)
class CallerView:
    """What ``[tools] allow``/``deny`` leave of a caller tool list (cached per pattern pair)."""

    permitted: frozenset[str]
    """The caller's function tools this call may use."""
    hidden: tuple[str, ...]
    """The catalog names it may not use."""
    names: WireNames
    """Canonical <-> wire names of the permitted tools plus ``tool_search``: built over the
    permitted tools only, so a denied tool never changes a permitted tool's wire spelling."""
    entries: Mapping[str, Mapping[str, Any]]
    """Permitted canonical name -> the caller's own entry, with the wire name set."""
    plain: bool
    """Every permitted name is its own wire name (nothing to encode or decode)."""
    unsearched: tuple[Mapping[str, Any], ...] = ()
    """What a call without tool search sends: the permitted entries in the caller's order,
    with the caller's own ``tool_search`` when it has one and the patterns permit it."""
    unsearched_names: tuple[str, ...] = ()
    """The canonical names of ``unsearched``, in order."""


@dataclass(frozen=True, slots=True, eq=False)
class CallerTools:
    """One caller tool list, indexed: what every ``create`` call with that list shares."""

    api: Api
    """The tool shape of the list."""
    catalog: ToolCatalog | None
    """The core's index of the function tools but one named ``tool_search``; ``None`` passes
    every request through (no other function tool)."""
    entries: Mapping[str, Mapping[str, Any]]
    """Canonical (the caller's) name -> the caller's own entry, with the wire name set."""
    others: tuple[Any, ...]
    """Tools that are not function tools (built-in tools, custom tools): sent every round."""
    names: WireNames
    """Canonical <-> wire names of every catalog tool plus ``tool_search``."""
    plain: bool
    """Every catalog name is its own wire name (nothing to encode or decode)."""
    real: Mapping[str, Any] | None = None
    """The caller's own tool named ``tool_search`` (its first), if any: sent and the caller's
    to run only in a call without tool search (`bot_toolsearch._core.reserved`)."""
    real_at: int = 0
    """How many ``entries`` precede ``real`` in the caller's order."""
    reserved: ReservedTool = field(default_factory=lambda: ReservedTool(()))
    """The warning of a skipped ``real``, logged once per list (`Projection` logs it)."""
    _permissions: dict[tuple[tuple[str, ...], tuple[str, ...]], CallerView] = field(
        default_factory=dict, repr=False
    )
    _checkers: dict[str, Tool | None] = field(default_factory=dict, repr=False)
    _noted: set[str] = field(default_factory=set, repr=False)
    _warmed: set[EmbeddingsSettings] = field(default_factory=set, repr=False)
    _directories: set[Hashable] = field(default_factory=set, repr=False)
    _memo: dict[Hashable, object] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _acceptance: list[concurrent.futures.Future[None] | None] = field(
        default_factory=list, repr=False
    )
    """Empty until `accept`; then the build it started (``None`` once done)."""

    @classmethod
    def build(cls, tools: Sequence[Any], api: Api, dot_delimiter: str) -> CallerTools:
        """Index ``tools``; malformed and duplicate function tools are skipped with a warning."""
        functions: list[Mapping[str, Any]] = []
        others: list[Any] = []
        for tool in tools:
            if isinstance(tool, Mapping) and tool.get("type", "function") == "function":
                functions.append(tool)
            else:
                others.append(tool)
        # A caller tool named ``tool_search`` is kept out of the catalog: a call that offers
        # the virtual tool skips it (with the catalog's one summary warning, `Projection`), a
        # call without tool search sends it; every other tool stays searchable.
        listed = [tool_name(tool, api) for tool in functions]
        real_at = listed.index(TOOL_SEARCH_NAME) if TOOL_SEARCH_NAME in listed else None
        catalog: ToolCatalog | None = ToolCatalog(
            [
                _chat_schema(t, api)
                for t, n in zip(functions, listed, strict=True)
                if n != TOOL_SEARCH_NAME
            ]
        )
        names = WireNames.build(
            [*(catalog.names if catalog is not None else ()), TOOL_SEARCH_NAME],
            dot_delimiter=dot_delimiter,
        )
        entries: dict[str, Mapping[str, Any]] = {}
        real: Mapping[str, Any] | None = None
        before = 0
        for position, (tool, name) in enumerate(zip(functions, listed, strict=True)):
            if position == real_at:
                real = wire_tool(tool, names, api, canonical=TOOL_SEARCH_NAME)
                before = len(entries)
            if catalog is None or name is None or name not in catalog or name in entries:
                continue
            entries[name] = wire_tool(tool, names, api, canonical=name)
        plain = all(canonical == wire for canonical, wire in names.pairs)
        if catalog is not None and not len(catalog):
            catalog = None
        reserved = ReservedTool(n if n is not None else "" for n in listed)
        return cls(api, catalog, entries, tuple(others), names, plain, real, before, reserved)

    @property
    def accepted(self) -> bool:
        """Whether the upstream accepted a request carrying this list (or it was pinned)."""
        return bool(self._acceptance)

    def accept(self, settings: BotSettings) -> concurrent.futures.Future[None] | None:
        """The upstream accepted a request carrying this list (or the operator pinned it):
        build what searches under ``settings`` use (`prepare`) in the ``index`` pool, once.
        Cheap when it is built or being built; never raises (with the pool full, the first
        search builds the index). Returns the build started or under way, if any."""
        # Every request after the first finds it all built: said without the lock (what
        # the locked check below answers then), as each request's reply calls this.
        acceptance = self._acceptance
        if acceptance:
            done = acceptance[0]
            if (done is None or done.done()) and self.prepared(settings) and self._warm(settings):
                return None
        with self._lock:
            running = self._acceptance[0] if self._acceptance else None
            if running is not None and not running.done():
                return running
            if self._acceptance and self.prepared(settings) and self._warm(settings):
                return None
            try:
                future = POOLS.index.submit(self._prepare_accepted, settings)
            except PoolBusy:
                self._acceptance[:] = [None]
                return None
            self._acceptance[:] = [future]
            return future

    def pin(self) -> None:
        """Treat this list as accepted without an upstream answer (the operator's own list);
        nothing is built now: the next call under tool search builds its index."""
        with self._lock:
            if not self._acceptance:
                self._acceptance.append(None)

    def _warm(self, settings: BotSettings) -> bool:
        wanted = settings.skills.tool_search_embeddings
        return wanted is None or wanted in self._warmed

    def _prepare_accepted(self, settings: BotSettings) -> None:
        try:
            self.prepare(settings)
        except Exception:  # never expected: the search builds the index then
            logger.exception("cannot build tool search's index ahead; the first search builds it")

    def prepared(self, settings: BotSettings) -> bool:
        """Whether calls under ``settings`` find everything built (see `prepare`)."""
        return (
            self.catalog is None
            or not settings.skills.tool_search_enabled
            or index_built(self.catalog, settings.tools.namespaces)
        )

    def prepare(self, settings: BotSettings) -> None:
        """Build the search index keyword searches under ``settings`` use (with their
        namespace descriptions), when tool search is on: once per list and descriptions, when
        the list is accepted or the descriptions change, never in a search. With the
        semantic stage on, the tool texts start being embedded in the background, once per
        list and embeddings settings (`warm_semantic`). Only for an accepted list (`accept`
        calls it): what the upstream refused is never indexed nor embedded."""
        if self.catalog is None or not settings.skills.tool_search_enabled:
            return
        build_index(self.catalog, settings.tools.namespaces)
        wanted = settings.skills.tool_search_embeddings
        if wanted is None or wanted in self._warmed:
            return
        with self._lock:
            if wanted in self._warmed:
                return
            self._warmed.add(wanted)
        warm_semantic(settings, self.catalog)

    def directory_built(self, key: Hashable) -> bool:
        """Whether a call under the settings `key` names built this list's directory."""
        with self._lock:
            return key in self._directories

    def add_directory(self, key: Hashable) -> None:
        """Remember that the directory of the settings ``key`` names is built (see `setup`)."""
        with self._lock:
            if len(self._directories) >= _CACHE_SIZE:
                self._directories.clear()
            self._directories.add(key)

    def memo_get(self, key: Hashable) -> object | None:
        """What `memo_put` kept under ``key`` for this list, or ``None``."""
        return self._memo.get(key)

    def memo_put(self, key: Hashable, value: object) -> None:
        """Keep ``value``, derived from this list and ``key`` (what a call under some
        settings shares with every other call of this list under them, `Projection`): freed
        with the list, at most `_CACHE_SIZE` values, the oldest out first."""
        with self._lock:
            self._memo.pop(key, None)
            if len(self._memo) >= _CACHE_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = value

    def note_once(self, text: str) -> None:
        """Log a warning about this tool list once (every call with it would repeat it)."""
        with self._lock:
            if text in self._noted:
                return
            self._noted.add(text)
        logger.warning("%s", text)

    def checker(self, name: str) -> Tool | None:
        """A schema-only `Tool` to check the arguments of a call to ``name`` with (``None``
        when the name is unknown or its parameters are unusable); built once per name."""
        with self._lock:
            if name in self._checkers:
                return self._checkers[name]
        entry = self.entries.get(name)
        found: Tool | None = None
        if entry is not None:
            function = entry.get("function") if self.api == "chat" else entry
            parameters = function.get("parameters") if isinstance(function, Mapping) else None
            try:
                found = Tool(
                    name, "", parameters if isinstance(parameters, Mapping) else None, _never
                )
            except CatalogError:
                found = None
        with self._lock:
            self._checkers[name] = found
        return found

    def view(self, allow: Sequence[str], deny: Sequence[str]) -> CallerView:
        """What ``[tools] allow``/``deny`` leave of this list, with its own wire names."""
        key = (tuple(allow), tuple(deny))
        cached = self._permissions.get(key)
        if cached is not None:
            return cached
        permitted = pattern_filter(frozenset(self.entries), allow, deny)
        hidden = tuple(n for n in self.entries if n not in permitted)
        real = self.real
        if real is not None and not pattern_filter(frozenset({TOOL_SEARCH_NAME}), allow, deny):
            real = None
        if not hidden:
            view = CallerView(permitted, hidden, self.names, self.entries, self.plain)
        else:
            names = WireNames.build(
                [n for n in self.entries if n in permitted] + [TOOL_SEARCH_NAME],
                dot_delimiter=self.names.dot_delimiter,
            )
            entries = {
                n: wire_tool(e, names, self.api, canonical=n)
                for n, e in self.entries.items()
                if n in permitted
            }
            plain = all(canonical == wire for canonical, wire in names.pairs)
            view = CallerView(permitted, hidden, names, entries, plain)
        unsearched = list(view.entries.values())
        order = list(view.entries)
        if real is not None:
            at = sum(1 for n in list(self.entries)[: self.real_at] if n in permitted)
            unsearched.insert(at, real)
            order.insert(at, TOOL_SEARCH_NAME)
        view = replace(view, unsearched=tuple(unsearched), unsearched_names=tuple(order))
        with self._lock:
            if len(self._permissions) >= _CACHE_SIZE:
                self._permissions.pop(next(iter(self._permissions)))
            self._permissions[key] = view
        return view


def _never(**_: Any) -> None:  # pragma: no cover - a checker's handler is never called
    raise RuntimeError("the caller runs its own tools")


@dataclass(slots=True, eq=False)
class _Entry:
    api: Api
    dot_delimiter: str
    elements: tuple[Any, ...]
    tools: CallerTools
    json_size: int
    sources: list[bytes] = field(default_factory=list)
    """Raw JSON bytes that ``elements`` (these very objects) was parsed from."""

    @property
    def held(self) -> int:
        """About how many bytes of memory this list holds: its entries, catalog and search
        indexes (estimated from its JSON size), and the raw spellings remembered."""
        catalog = self.tools.catalog
        indexes = 0 if catalog is None else indexes_built(catalog)
        per_byte = _HELD_PER_JSON_BYTE + _INDEX_PER_JSON_BYTE * indexes
        return self.json_size * per_byte + sum(len(source) for source in self.sources)


class ToolsCache:
    """The indexed caller tool lists, most recently used first, keyed by a cheap fingerprint.

    The fingerprint is the API, the wire-name delimiter, the length and the entries
    themselves, compared element by element with Python's identity shortcut at every level:
    the same list object costs one pointer comparison per tool, a list rebuilt around the same
    ``parameters`` objects (what frameworks do) a few dictionary lookups per tool, and only a
    list parsed anew (the proxy) compares its schemas in full. The caller's entries are
    treated as values: a dict the wrapper has seen and that is then changed in place is not
    noticed; pass a new dict (or list) to change a tool.

    The cache holds at most ``size`` lists and at most ``max_bytes`` of memory, counted as what
    each list really holds (`held`: its parsed entries, catalog and search indexes, which take
    several times the list's JSON size); the most recently used list always stays, however
    large. Lists no upstream has accepted (`CallerTools.accepted`) are kept only
    `_UNACCEPTED_KEPT` at a time and are dropped first.
    """

    def __init__(self, size: int = _CACHE_SIZE, max_bytes: int = _CACHE_BYTES) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self.builds = 0
        """How many lists were indexed so far (a server settles its heap after a new one)."""

    def lookup(self, tools: Sequence[Any], api: Api, dot_delimiter: str) -> CallerTools | None:
        """The indexed form of ``tools`` when an equal list is cached, else ``None`` (cheap:
        nothing is indexed)."""
        elements = tuple(tools)
        newest = self._entries[:1]  # one atomic read: another thread may be reordering
        if newest and newest[0].elements is elements:
            entry = newest[0]
            if entry.api == api and entry.dot_delimiter == dot_delimiter:
                # The list the newest entry holds, as a server sends it (`by_source`): what
                # the general path below would find first and leave as it is.
                return entry.tools
        with self._lock:
            candidates = [
                entry
                for entry in self._entries
                if entry.api == api
                and entry.dot_delimiter == dot_delimiter
                and len(entry.elements) == len(elements)
            ]
        for entry in candidates:
            cached = entry.elements
            # The very objects (a list found by its bytes, a caller resending its list) need
            # no comparison of values; another list fails this at its first other object.
            same = _same_objects(cached, elements)
            if same or _equal(cached, elements):
                with self._lock:
                    if entry.elements is not cached:  # another call's tuple meanwhile
                        same = _same_objects(entry.elements, elements)
                    if not same:
                        # Equal values, other objects: the bytes no longer name these.
                        entry.sources.clear()
                    # The newest equal tuple: the next call's identity shortcuts hit sooner.
                    entry.elements = elements
                    if not self._entries or self._entries[0] is not entry:
                        if entry in self._entries:
                            self._entries.remove(entry)
                        self._entries.insert(0, entry)
                return entry.tools
        return None

    def get(self, tools: Sequence[Any], api: Api, dot_delimiter: str) -> CallerTools:
        """The indexed form of ``tools``, built only when no equal list was indexed before."""
        found = self.lookup(tools, api, dot_delimiter)
        if found is not None:
            return found
        elements = tuple(tools)
        built = CallerTools.build(elements, api, dot_delimiter)
        entry = _Entry(api, dot_delimiter, elements, built, _json_size(elements))
        with self._lock:
            self.builds += 1
            self._entries.insert(0, entry)
            self._evict()
        return built

    def _evict(self) -> None:
        """Drop lists past the bounds (under the lock): unaccepted ones past
        `_UNACCEPTED_KEPT`, then unaccepted before accepted, least recently used first. The
        newest list always stays. Sizes are read now: a list whose index was built since it
        came counts it."""
        newest, rest = self._entries[0], self._entries[1:]
        allowed = _UNACCEPTED_KEPT - (0 if newest.tools.accepted else 1)
        unaccepted = [entry for entry in rest if not entry.tools.accepted]
        dropped = {id(entry) for entry in unaccepted[max(0, allowed) :]}
        kept = [newest, *(entry for entry in rest if id(entry) not in dropped)]
        sizes = {id(entry): entry.held for entry in kept}
        total = sum(sizes.values())
        older = kept[:0:-1]  # least recently used first, the newest excluded
        leaving = [e for e in older if not e.tools.accepted] + [
            e for e in older if e.tools.accepted
        ]
        for entry in leaving:
            if total <= self._max_bytes and len(kept) <= self._size:
                break
            kept.remove(entry)
            total -= sizes[id(entry)]
        self._entries[:] = kept

    def by_source(self, raw: bytes, start: int, end: int) -> tuple[Any, ...] | None:
        """The cached elements parsed from exactly the bytes ``raw[start:end]`` (see
        `add_source`), or ``None``. Compares bytes, never parses them."""
        with self._lock:
            for entry in self._entries:
                for source in entry.sources:
                    if len(source) == end - start and raw.startswith(source, start):
                        return entry.elements
        return None

    def add_source(self, tools: Sequence[Any], source: bytes) -> None:
        """Remember that ``tools``, just looked up or indexed, was parsed from the raw JSON
        ``source``: `by_source` then returns these very objects for the same bytes, so a
        server can skip parsing them again. Nothing happens when no cached list holds these
        very objects."""
        elements = tuple(tools)
        with self._lock:
            for entry in self._entries:
                if _same_objects(entry.elements, elements):
                    if source not in entry.sources:
                        entry.sources.insert(0, source)  # counted against ``max_bytes`` too
                        del entry.sources[_SOURCES_PER_LIST:]
                    return

    @property
    def cached_bytes(self) -> int:
        """The memory every cached list holds, estimated (what ``max_bytes`` bounds)."""
        with self._lock:
            return sum(entry.held for entry in self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def prepare(self, settings: BotSettings) -> None:
        """`CallerTools.prepare` every cached list an upstream accepted for ``settings``
        (after a reload that changes the namespace descriptions or turns tool search on;
        nothing when built)."""
        with self._lock:
            lists = [entry.tools for entry in self._entries if entry.tools.accepted]
        for tools in lists:
            tools.prepare(settings)


def _json_size(elements: tuple[Any, ...]) -> int:
    """About how many bytes a tool list takes as JSON (what the cache's byte bound counts)."""
    try:
        return len(json.dumps(elements, default=repr, check_circular=True))
    except (ValueError, TypeError, RecursionError):  # a caller object JSON cannot walk
        return _FALLBACK_TOOL_BYTES * len(elements)


def _same_objects(cached: tuple[Any, ...], elements: tuple[Any, ...]) -> bool:
    """Whether two tool lists hold the very same objects."""
    if cached is elements:
        return True
    if len(cached) != len(elements):
        return False
    return all(map(operator.is_, cached, elements))  # C speed: one pointer test per tool


def _equal(cached: tuple[Any, ...], elements: tuple[Any, ...]) -> bool:
    """Whether two tool lists are equal (an entry that cannot be compared never is)."""
    if cached is elements:
        return True
    try:
        return bool(cached == elements)
    except Exception:  # a caller object whose __eq__ raises
        return False
