"""The `Bot`'s tools over time: one `ToolSet` per tool snapshot, built off the ask path."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from bot_toolsearch._errors import CatalogError
from bot_toolsearch._tools.registry import ToolRegistry
from bot_toolsearch._tools.source import ToolSetSnapshot, ToolSource
from bot_toolsearch._tools.tool import Agent

from .toolset import ToolSet

__all__ = ["BotTools", "StaticTools", "ToolSetCache"]

logger = logging.getLogger("bot_toolsearch")


class BotTools(Protocol):
    """Where an ask gets its tool set from."""

    def current(self) -> ToolSet:
        """The current tool set (may build it; prefer `acurrent` on the event loop)."""
        ...

    async def acurrent(self) -> ToolSet:
        """The current tool set, built in a worker thread if the source has just swapped."""
        ...

    def close(self) -> None:
        """Stop listening to the source."""
        ...


class StaticTools:
    """Tools given in code: one tool set for the bot's life."""

    def __init__(self, toolset: ToolSet) -> None:
        self._toolset = toolset

    def current(self) -> ToolSet:
        """The tool set."""
        return self._toolset

    async def acurrent(self) -> ToolSet:
        """The tool set."""
        return self._toolset

    def close(self) -> None:
        """Nothing to stop."""


class ToolSetCache:
    """One `ToolSet` per snapshot of a `ToolSource`; a snapshot that cannot form one is refused.

    A `ToolRegistry` announces each swap, and the tool set is built right then in the
    swapping thread, so the next ask only reads a reference; ``prepare``, if given, runs on
    each new tool set there, before any ask sees it (the `Bot` builds the search index). A
    snapshot whose tools clash with the host's built-ins or the agents is logged once and
    refused: asks keep the last good tool set (its `Tool` objects included) until a good
    snapshot arrives.

    Raises:
        CatalogError: the source's first snapshot cannot form a tool set.
    """

    def __init__(
        self,
        source: ToolSource,
        agents: Sequence[Agent],
        prepare: Callable[[ToolSet], None] | None = None,
    ) -> None:
        self._source = source
        self._agents = tuple(agents)
        self._prepare = prepare
        self._lock = threading.Lock()  # one build at a time; swaps in order
        snapshot = source.snapshot()
        self._current = (snapshot, self._build(snapshot))
        self._rejected: ToolSetSnapshot | None = None
        self._undo: Callable[[], None] | None = None
        if isinstance(source, ToolRegistry):
            self._undo = source.subscribe(self._on_swap)

    def current(self) -> ToolSet:
        """The tool set of the source's current snapshot (or the last good one)."""
        snapshot = self._source.snapshot()
        if self._current[0] is snapshot or snapshot is self._rejected:
            return self._current[1]
        return self._install(snapshot)

    async def acurrent(self) -> ToolSet:
        """As `current`, building in a worker thread if the swap has not been handled yet."""
        snapshot = self._source.snapshot()
        if self._current[0] is snapshot or snapshot is self._rejected:
            return self._current[1]
        return await asyncio.to_thread(self._install, snapshot)

    def close(self) -> None:
        """Stop listening to the registry."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def _on_swap(self, snapshot: ToolSetSnapshot) -> None:
        self._install(snapshot, only_if_current=True)

    def _install(self, snapshot: ToolSetSnapshot, *, only_if_current: bool = False) -> ToolSet:
        with self._lock:
            kept = self._current
            if kept[0] is snapshot or snapshot is self._rejected:
                return kept[1]
            if only_if_current and snapshot is not self._source.snapshot():
                return kept[1]  # a newer swap has happened; its own call installs it
            try:
                toolset = self._build(snapshot)
            except CatalogError as exc:
                self._rejected = snapshot
                logger.error(
                    "tool snapshot generation %d refused: %s; asks keep generation %d",
                    snapshot.generation,
                    exc,
                    kept[0].generation,
                )
                return kept[1]
            self._current = (snapshot, toolset)
            return toolset

    def _build(self, snapshot: ToolSetSnapshot) -> ToolSet:
        toolset = ToolSet.from_snapshot(snapshot, self._agents)
        if self._prepare is not None:
            self._prepare(toolset)
        return toolset
