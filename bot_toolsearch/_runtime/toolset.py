"""The bot's tool set: entries, the catalog built once per change, and per-ask filtering."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.prompt import TOOL_SEARCH_NAME
from bot_toolsearch._core.reserved import ReservedTool
from bot_toolsearch._errors import CatalogError
from bot_toolsearch._services.permissions import pattern_filter
from bot_toolsearch._tools.schema import function_schema
from bot_toolsearch._tools.source import ToolSetSnapshot
from bot_toolsearch._tools.tool import Agent, Tool
from bot_toolsearch._transports.names import WireNames

__all__ = [
    "END",
    "SEND_MESSAGE",
    "Builtin",
    "Entry",
    "ToolFilter",
    "ToolSet",
    "ToolView",
    "not_a_tool",
    "permitted_names",
]

logger = logging.getLogger("bot_toolsearch")

SEND_MESSAGE = "send_message"
END = "end"

ToolFilter = Callable[[Mapping[str, Any], frozenset[str]], Iterable[str] | Awaitable[Iterable[str]]]
"""The permission hook: ``tool_filter(context, names) -> allowed names``, sync or async."""


@dataclass(frozen=True, slots=True)
class Builtin:
    """A host tool the runtime implements itself (``send_message``, ``end``)."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def schema(self) -> dict[str, Any]:
        """The Chat Completions function tool schema (a fresh object)."""
        parameters = {
            "type": "object",
            "properties": dict(self.parameters.get("properties", {})),
            "required": list(self.parameters.get("required", [])),
        }
        return function_schema(self.name, self.description, parameters)


BUILTINS = (
    Builtin(
        SEND_MESSAGE,
        "Send a chat message to the user. The texts you send form your reply.",
        {
            "properties": {"text": {"type": "string", "description": "The message text."}},
            "required": ["text"],
        },
    ),
    Builtin(
        END,
        "Finish this turn of the conversation. Call it alone, after your work is done.",
        {"properties": {}},
    ),
)

Entry = Tool | Agent | Builtin


@dataclass(frozen=True, slots=True, eq=False)
class ToolSet:
    """Every tool the bot has, with the catalog the tool-search core indexes (built once).

    A real tool named exactly ``tool_search`` is kept out of the catalog but stays in
    ``entries`` and ``schemas``: an ask under tool search leaves it out (`searchable`, the rule
    of `bot_toolsearch._core.reserved`), an ask without tool search sends and runs it.
    """

    entries: Mapping[str, Entry]
    """Canonical name -> what runs it, for every usable tool."""
    catalog: ToolCatalog
    """The core's index over every entry except a real ``tool_search``."""
    schemas: tuple[Mapping[str, Any], ...]
    """Every entry's schema, in entry order. Shared: never mutate."""
    reserved: ReservedTool
    """The real tool named ``tool_search``, if any, and its one warning."""
    names: frozenset[str] = frozenset()
    """Every entry's name (what the permission hook receives)."""
    namespaces: Mapping[str, str] = field(default_factory=dict)
    """Namespace descriptions from the tool sources (MCP servers, folder READMEs); the
    config's ``[tools.namespaces]`` wins over them (`namespace_descriptions`)."""
    _wire: dict[tuple[str, frozenset[str]], WireNames] = field(default_factory=dict, repr=False)
    # Per-ask results that depend only on this tool set and the settings, computed once:
    # allow/deny pattern results, per-permitted-set views, names already warned about.
    _patterns: dict[tuple[tuple[str, ...], tuple[str, ...]], frozenset[str]] = field(
        default_factory=dict, repr=False
    )
    _views: dict[int, tuple[frozenset[str], ToolView]] = field(default_factory=dict, repr=False)
    _searchable: dict[int, tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=dict, repr=False
    )
    _warned: set[tuple[str, str]] = field(default_factory=set, repr=False)
    _merged: dict[int, tuple[Mapping[str, str], Mapping[str, str]]] = field(
        default_factory=dict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def build(
        cls,
        tools: Sequence[Tool],
        agents: Sequence[Agent],
        namespaces: Mapping[str, str] | None = None,
    ) -> ToolSet:
        """Index the host's built-ins, then ``tools``, then ``agents``.

        ``namespaces`` are the sources' namespace descriptions (kept as given).

        Raises:
            CatalogError: two tools (or a tool and a built-in or agent) share a name.
        """
        entries: dict[str, Entry] = {}
        for entry in (*BUILTINS, *tools, *agents):
            if not isinstance(entry, Tool | Agent | Builtin):
                raise CatalogError(not_a_tool(entry))
            if entry.name in entries:
                raise CatalogError(f"duplicate tool name {entry.name!r}", name=entry.name)
            entries[entry.name] = entry
        built = [_shared(e) for e in entries.values()]
        # A real ``tool_search`` is left out here, not skipped by the catalog: whether an ask
        # leaves it out depends on its settings, and so does its warning (`searchable`).
        catalog = ToolCatalog(
            [s for name, s in zip(entries, built, strict=True) if name != TOOL_SEARCH_NAME]
        )
        # The catalog skips (and logs) names it cannot index safely; they are unusable anywhere.
        usable = {
            name: entry
            for name, entry in entries.items()
            if name in catalog or name == TOOL_SEARCH_NAME
        }
        # The catalog serialised every schema (its own isolated copy) and walked the same
        # objects for the index; the tool lists share them too, so no schema is parsed again.
        shared = dict(zip(entries, built, strict=True))
        schemas = tuple(shared[name] for name in usable)
        reserved = ReservedTool(usable)
        return cls(usable, catalog, schemas, reserved, frozenset(usable), dict(namespaces or {}))

    @classmethod
    def from_snapshot(cls, snapshot: ToolSetSnapshot, agents: Sequence[Agent]) -> ToolSet:
        """The tool set of a registry snapshot plus ``agents``, checked where it is built.

        A snapshot tool named ``tool_search`` is kept as in `build`: asks under tool search
        leave it out (`searchable`), asks without tool search send and run it.

        Raises:
            CatalogError: a snapshot tool uses a built-in's name (``send_message``, ``end``)
                or an agent's name; the message names the tool's source.
        """
        reserved = {b.name: "the host's built-in tool" for b in BUILTINS}
        reserved.update((a.name, f"agent {a.name!r}") for a in agents)
        for name in snapshot.tools:
            if name in reserved:
                source = snapshot.sources.get(name, "?")
                raise CatalogError(
                    f"tool {name!r} from {source} uses the name of {reserved[name]}; "
                    "rename the tool",
                    name=name,
                )
        return cls.build(tuple(snapshot.tools.values()), agents, snapshot.namespaces)

    def namespace_descriptions(self, configured: Mapping[str, str]) -> Mapping[str, str]:
        """The sources' namespace descriptions overridden by ``configured``, cached per
        configured mapping (settings change rarely; asks reuse the merged mapping)."""
        if not self.namespaces:
            return configured
        key = id(configured)
        hit = self._merged.get(key)
        if hit is not None and hit[0] is configured:
            return hit[1]
        merged = {**self.namespaces, **configured}
        with self._lock:
            if len(self._merged) >= _CACHE_SIZE:
                self._merged.pop(next(iter(self._merged)))
            self._merged[key] = (configured, merged)  # holding it keeps the id unique
        return merged

    def wire_names(self, dot_delimiter: str, permitted: frozenset[str] | None = None) -> WireNames:
        """The wire-name map for the tools an ask may use plus ``tool_search``.

        Built over ``permitted`` only (every entry when ``None``), so a tool the ask may not
        use can never change a permitted tool's wire spelling (a hash suffix would tell the
        model that something hidden holds that spelling). The same permitted set always gets
        the same map, cached per ``(delimiter, permitted)``, so prompt caching is unharmed.
        """
        names = self.names if permitted is None else permitted
        key = (dot_delimiter, names)
        wire = self._wire.get(key)
        if wire is None:
            usable = [name for name in names if name in self.entries]
            wire = WireNames.build([*usable, TOOL_SEARCH_NAME], dot_delimiter=dot_delimiter)
            with self._lock:
                if len(self._wire) >= _CACHE_SIZE:
                    self._wire.pop(next(iter(self._wire)))
                wire = self._wire.setdefault(key, wire)
        return wire

    def pattern_permitted(self, allow: Sequence[str], deny: Sequence[str]) -> frozenset[str]:
        """The names ``[tools] allow``/``deny`` leave, computed once per (allow, deny).

        ``allow`` restricts only registered tools and agents: the host's ``send_message`` and
        ``end`` stay unless ``deny`` removes them. The same frozenset object is returned for
        the same patterns, so per-ask views keyed on it are reused too.
        """
        key = (tuple(allow), tuple(deny))
        names = self._patterns.get(key)
        if names is None:
            names = pattern_filter(self.names, allow, deny, keep={b.name for b in BUILTINS})
            with self._lock:
                if len(self._patterns) >= _CACHE_SIZE:
                    self._patterns.pop(next(iter(self._patterns)))
                names = self._patterns.setdefault(key, names)
        return names

    def view(self, permitted: frozenset[str]) -> ToolView:
        """The permitted schemas (catalog order) and hidden catalog names, cached per set.

        The cache is keyed by the frozenset's identity: asks whose permitted set comes straight
        from `pattern_permitted` (no permission hook) share one view.
        """
        cached = self._views.get(id(permitted))
        if cached is not None and cached[0] is permitted:
            return cached[1]
        if len(permitted) == len(self.entries):
            view = ToolView(self.schemas, ())
        else:
            schemas = tuple(
                s for n, s in zip(self.entries, self.schemas, strict=True) if n in permitted
            )
            hidden = tuple(n for n in self.catalog.names if n not in permitted)
            view = ToolView(schemas, hidden)
        with self._lock:
            if len(self._views) >= _CACHE_SIZE:
                self._views.pop(next(iter(self._views)))
            self._views[id(permitted)] = (permitted, view)  # holding it keeps the id unique
        return view

    def searchable(self, permitted: frozenset[str]) -> frozenset[str]:
        """``permitted`` as an ask that offers the virtual ``tool_search`` may use it: without
        a real tool of that name (`ReservedTool.skip`); the same object for the same set, so
        the views and wire names cached per permitted set are shared. Nothing is logged here:
        the ask logs `ReservedTool.warn` once it offers the virtual tool."""
        if not self.reserved.present or TOOL_SEARCH_NAME not in permitted:
            return permitted
        cached = self._searchable.get(id(permitted))
        if cached is not None and cached[0] is permitted:
            return cached[1]
        searchable = self.reserved.skip(permitted)
        with self._lock:
            if len(self._searchable) >= _CACHE_SIZE:
                self._searchable.pop(next(iter(self._searchable)))
            self._searchable[id(permitted)] = (permitted, searchable)  # keeps the id unique
        return searchable

    def warn_unknown(self, setting: str, names: Iterable[str]) -> None:
        """Log one WARNING per name in ``names`` that is no tool here, once per tool set."""
        for raw in names:
            name = raw.strip()  # as prefetch and the session read it
            if name in self.entries or name == TOOL_SEARCH_NAME or (setting, name) in self._warned:
                continue
            with self._lock:
                if (setting, name) in self._warned:
                    continue
                self._warned.add((setting, name))
            logger.warning("[skills] %s names %r, which matches no tool", setting, name)


def not_a_tool(entry: object) -> str:
    """What to say of something passed as a tool that is no `Tool` or `Agent`."""
    if callable(entry) and hasattr(entry, "__name__"):
        return (
            f"not a Tool or Agent: the function {entry.__name__!r}; decorate it with @tool "
            "(from bot_toolsearch import tool)"
        )
    return f"not a Tool or Agent: {type(entry).__name__} {entry!r:.60}"


@dataclass(frozen=True, slots=True)
class ToolView:
    """What one permitted set leaves of a `ToolSet`."""

    schemas: tuple[Mapping[str, Any], ...]
    """Permitted entries' schemas, in catalog order. Shared: never mutate."""
    hidden: tuple[str, ...]
    """Catalog names that are not permitted."""


_CACHE_SIZE = 16
"""Distinct pattern pairs / permitted sets remembered per tool set (settings change rarely)."""


def _shared(entry: Entry) -> Mapping[str, Any]:
    """An entry's schema without copying its parameters (a `Tool` copied them once when it
    was made; built-ins and agents build a fresh small schema)."""
    return entry.shared_schema() if isinstance(entry, Tool) else entry.schema()


async def permitted_names(
    toolset: ToolSet,
    settings: BotSettings,
    context: Mapping[str, Any],
    tool_filter: ToolFilter | None,
) -> frozenset[str]:
    """The tools this ask may use: the permission hook first, then ``[tools] allow``/``deny``.

    ``allow`` restricts only registered tools and agents: the host's ``send_message`` and
    ``end`` stay unless the hook or ``deny`` removes them, so a bot can always answer.
    """
    # The pattern result is cached per tool set: repeated asks pay nothing per catalog tool.
    names = toolset.pattern_permitted(settings.tools.allow, settings.tools.deny)
    if tool_filter is None:
        return names
    allowed = tool_filter(context, toolset.names)
    if inspect.isawaitable(allowed):
        allowed = await allowed
    # A hook cannot add tools: names it returns that the bot does not have are ignored. The
    # hook runs first in meaning; intersecting afterwards gives the same set.
    return names.intersection(_strings(allowed))


def _strings(values: object) -> Collection[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError("tool_filter must return an iterable of tool names")
    return {v for v in values if isinstance(v, str)}
