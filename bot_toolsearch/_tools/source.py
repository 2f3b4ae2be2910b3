"""The seam between tool registries and the runtime: an immutable, generation-stamped tool set.

An ``ask()`` reads ``source.snapshot()`` exactly once and uses that snapshot for everything: the
catalog it searches *and* the tools it executes. A registry reload swaps in a new snapshot for
the next ask; a running ask keeps calling the tools of the snapshot it started on, so a tool
removed in generation N+1 still runs for an ask that started on N (its `Tool` and handler live
in the old snapshot). An MCP tool of a server that has since been removed or has died fails
with a clear "server unavailable" error instead.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME, ToolCatalog

from .tool import Tool

__all__ = ["CODE_SOURCE", "StaticToolSource", "ToolSetSnapshot", "ToolSource", "fingerprint"]

CODE_SOURCE = "code"
"""Source label of tools passed in code (`Tool` objects)."""


@dataclass(frozen=True, slots=True)
class ToolSetSnapshot:
    """One immutable tool set: what an ask may offer and execute.

    Build it with `ToolSetSnapshot.build`; the catalog is built there once and reused by every
    ask that reads this snapshot.
    """

    generation: int
    """Increases by one with every swap; 0 for the first snapshot."""
    fingerprint: str
    """SHA-256 of the tools' schemas as sorted canonical JSON (see `fingerprint`)."""
    tools: Mapping[str, Tool]
    """Canonical name to `Tool`, in catalog order (plus a real ``tool_search`` last); executes
    the calls of asks on this snapshot."""
    catalog: ToolCatalog
    """The search index over the tools' schemas, except a real ``tool_search`` (left out
    while the virtual tool is offered, an ordinary tool otherwise:
    `bot_toolsearch._core.reserved`)."""
    sources: Mapping[str, str]
    """Canonical name to source label: ``"code"``, ``"folder:tools/music/search_songs"``,
    ``"mcp:time"``."""
    namespaces: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Namespace to description, from the tool sources: an MCP server's instructions (or
    description) for ``<server>``, a tool folder's namespace README. ``[tools.namespaces]``
    in the config wins over these (the runtime merges them per ask)."""

    @classmethod
    def build(
        cls,
        tools: Iterable[tuple[Tool, str]],
        *,
        generation: int = 0,
        reuse: ToolSetSnapshot | None = None,
        namespaces: Mapping[str, str] | None = None,
    ) -> ToolSetSnapshot:
        """A snapshot over ``(tool, source label)`` pairs, in order.

        A tool named ``tool_search`` stays in ``tools`` (callable without tool search) but not
        in the catalog: the doors leave it out while they offer the virtual search tool
        (`bot_toolsearch._core.reserved`).

        Args:
            tools: the tools with their source labels; names must be unique (first one wins).
            generation: the generation to stamp.
            reuse: a previous snapshot whose catalog is reused when the fingerprint matches,
                so a change that touches only handlers does not rebuild the index.
            namespaces: namespace descriptions from the tool sources (copied).
        """
        by_name: dict[str, Tool] = {}
        sources: dict[str, str] = {}
        for tool, source in tools:
            if tool.name not in by_name:
                by_name[tool.name] = tool
                sources[tool.name] = source
        schemas = {name: tool.shared_schema() for name, tool in by_name.items()}
        # The real tool's schema is in the fingerprint: asks without tool search send it.
        digest = fingerprint(schemas.values())
        if reuse is not None and reuse.fingerprint == digest:
            catalog = reuse.catalog
        else:
            catalog = ToolCatalog([s for n, s in schemas.items() if n != TOOL_SEARCH_NAME])
        # The catalog skips (and logs) schemas it cannot use; such a tool must not be callable.
        usable = {name: tool for name, tool in by_name.items() if name in catalog}
        if TOOL_SEARCH_NAME in by_name:
            usable[TOOL_SEARCH_NAME] = by_name[TOOL_SEARCH_NAME]
        return cls(
            generation=generation,
            fingerprint=digest,
            tools=MappingProxyType(usable),
            catalog=catalog,
            sources=MappingProxyType({name: sources[name] for name in usable}),
            namespaces=MappingProxyType(dict(namespaces or {})),
        )


def fingerprint(schemas: Iterable[Mapping[str, object]]) -> str:
    """SHA-256 hex digest of tool schemas, independent of their order and key order.

    >>> a = {"type": "function", "function": {"name": "a", "parameters": {}}}
    >>> b = {"type": "function", "function": {"name": "b", "parameters": {}}}
    >>> fingerprint([a, b]) == fingerprint([b, a])
    True
    """
    canonical = sorted(
        json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        for schema in schemas
    )
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


@runtime_checkable
class ToolSource(Protocol):
    """Anything that hands out the current tool set; `ToolRegistry` is one."""

    def snapshot(self) -> ToolSetSnapshot:
        """The current snapshot: one reference read, never blocking on a reload."""
        ...


class StaticToolSource:
    """A `ToolSource` over a fixed list of code tools (one snapshot, generation 0).

    Args:
        tools: the tools; a later duplicate name is ignored.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._snapshot = ToolSetSnapshot.build((tool, CODE_SOURCE) for tool in tools)

    def snapshot(self) -> ToolSetSnapshot:
        """The one snapshot."""
        return self._snapshot
