"""The caller's tool list as the wrapper indexes it, cached by a cheap fingerprint.

A framework resends its full tool list on every ``create`` call; indexing it costs time
proportional to the catalog, so the catalog is built once and reused while the list is
unchanged. The fingerprint is checked in two steps: the same list object holding the same
element objects (a few tens of µs at 10,000 tools), else the same tool names in the same order
and an equal copy (a framework that rebuilds the list each call); only a changed list is
indexed again.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME, ToolCatalog
from bot_toolsearch._errors import ToolSearchNameCollisionError
from bot_toolsearch._runtime.toolset import pattern_filter
from bot_toolsearch._transports.names import WireNames

__all__ = ["Api", "CallerTools", "ToolsCache", "tool_name"]

logger = logging.getLogger("bot_toolsearch")

Api = Literal["chat", "responses"]
"""Which tool shape the list uses: Chat Completions (nested ``function``) or Responses (flat)."""

_CACHE_SIZE = 8
"""Distinct tool lists remembered (one per agent or framework sharing the wrapper)."""


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
class CallerTools:
    """One caller tool list, indexed: what every ``create`` call with that list shares."""

    api: Api
    """The tool shape of the list."""
    catalog: ToolCatalog | None
    """The core's index of the function tools; ``None`` passes every request through (a
    caller tool is named ``tool_search``, or there is no function tool)."""
    entries: Mapping[str, Mapping[str, Any]]
    """Canonical (the caller's) name -> the caller's own entry, with the wire name set."""
    others: tuple[Any, ...]
    """Tools that are not function tools (built-in tools, custom tools): sent every round."""
    names: WireNames
    """Canonical <-> wire names of every catalog tool plus ``tool_search``."""
    plain: bool
    """Every catalog name is its own wire name (nothing to encode or decode)."""
    _permissions: dict[
        tuple[tuple[str, ...], tuple[str, ...]], tuple[frozenset[str], tuple[str, ...]]
    ] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
        try:
            catalog = ToolCatalog([_chat_schema(tool, api) for tool in functions])
        except ToolSearchNameCollisionError:
            logger.error(
                "a caller tool is named %r: tool search is off for this tool list "
                "(every request passes through unchanged)",
                TOOL_SEARCH_NAME,
            )
            catalog = None
        names = WireNames.build(
            [*(catalog.names if catalog is not None else ()), TOOL_SEARCH_NAME],
            dot_delimiter=dot_delimiter,
        )
        entries: dict[str, Mapping[str, Any]] = {}
        for tool in functions:
            name = tool_name(tool, api)
            if catalog is None or name is None or name not in catalog or name in entries:
                continue
            entries[name] = _with_wire_name(tool, api, names.to_wire(name))
        plain = all(canonical == wire for canonical, wire in names.pairs)
        if catalog is not None and not len(catalog):
            catalog = None
        return cls(api, catalog, entries, tuple(others), names, plain)

    def permissions(
        self, allow: Sequence[str], deny: Sequence[str]
    ) -> tuple[frozenset[str], tuple[str, ...]]:
        """The permitted names and the hidden catalog names under ``[tools] allow``/``deny``."""
        key = (tuple(allow), tuple(deny))
        cached = self._permissions.get(key)
        if cached is not None:
            return cached
        everything = frozenset(self.entries)
        permitted = pattern_filter(everything, allow, deny)
        hidden = tuple(n for n in self.entries if n not in permitted)
        with self._lock:
            if len(self._permissions) >= _CACHE_SIZE:
                self._permissions.pop(next(iter(self._permissions)))
            self._permissions[key] = (permitted, hidden)
        return permitted, hidden


def _with_wire_name(tool: Mapping[str, Any], api: Api, wire: str) -> Mapping[str, Any]:
    if api == "chat":
        function = tool["function"]
        if function.get("name") == wire:
            return tool
        return {**tool, "function": {**function, "name": wire}}
    return tool if tool.get("name") == wire else {**tool, "name": wire}


@dataclass(slots=True, eq=False)
class _Entry:
    source: Sequence[Any]
    elements: tuple[Any, ...]
    names: tuple[str | None, ...]
    snapshot: list[Any]
    tools: CallerTools


class ToolsCache:
    """The indexed caller tool lists, most recently used last, keyed by a cheap fingerprint."""

    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[Api, str, tuple[str | None, ...]], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tools: Sequence[Any], api: Api, dot_delimiter: str) -> CallerTools:
        """The indexed form of ``tools``, built only when no equal list was indexed before."""
        elements = tuple(tools)
        with self._lock:
            for entry in reversed(self._entries.values()):
                # Same list object with the same element objects: nothing to look at.
                if (
                    entry.source is tools
                    and entry.tools.api == api
                    and _delimiter(entry) == dot_delimiter
                    and entry.elements == elements
                ):
                    return entry.tools
        names = _names(elements, api)
        key = (api, dot_delimiter, names)
        with self._lock:
            found = self._entries.get(key)
        if found is not None and (found.elements == elements or found.snapshot == list(elements)):
            with self._lock:
                found.source, found.elements = tools, elements
                self._entries.move_to_end(key)
            return found.tools
        built = CallerTools.build(elements, api, dot_delimiter)
        snapshot = _snapshot(elements)
        with self._lock:
            self._entries[key] = _Entry(tools, elements, names, snapshot, built)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return built


def _names(elements: tuple[Any, ...], api: Api) -> tuple[str | None, ...]:
    """Every entry's function name (``None`` for other entries), plain dicts the fast way."""
    try:
        if api == "chat":
            names = tuple(tool["function"]["name"] for tool in elements)
        else:
            names = tuple(tool["name"] for tool in elements)
    except (KeyError, TypeError, IndexError):
        return tuple(tool_name(tool, api) for tool in elements)
    if all(type(name) is str for name in names):
        return names
    return tuple(tool_name(tool, api) for tool in elements)


def _delimiter(entry: _Entry) -> str:
    return entry.tools.names.dot_delimiter


def _snapshot(elements: tuple[Any, ...]) -> list[Any]:
    """A deep copy to compare later lists with (a caller may mutate its own dicts)."""
    try:
        return copy.deepcopy(list(elements))
    except Exception:  # an uncopyable entry: never equal, so the list is indexed each time
        return [object()]
