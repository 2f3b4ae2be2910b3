"""A client's own tool-search list read once: the reads of ``defer_loading``/namespace lists,
kept as the plain lists' catalogs are.

A server receives the same tool list on every request of a conversation. A plain list is
parsed once (the proxy finds its bytes again and hands over the cached objects) and looked up
by identity; `NativeCache` does the same for a list in OpenAI's tool-search dialect: the read
(`bot_toolsearch._wrap.native.read_tools`) is kept for the very tool objects it was made from,
and the bytes they were parsed from are remembered once an upstream accepted a request
carrying them (`add_source`), so the next request with the same bytes gets the same objects
and no read. At most `_SIZE` lists are kept, most recently used first.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .caller_tools import Api
from .native import ToolsReader, _Tools, read_tools

__all__ = ["NativeCache"]

_SIZE = 8
"""Most lists whose read is kept."""
_SOURCES = 2
"""Most raw spellings remembered per list."""


@dataclass(slots=True, eq=False)
class _Read:
    api: Api
    elements: tuple[Any, ...]
    read: _Tools
    sources: list[bytes] = field(default_factory=list)


class NativeCache:
    """The reads of the dialect's tool lists, by the identity of their entries."""

    def __init__(self, reader: ToolsReader = read_tools, size: int = _SIZE) -> None:
        self._reader = reader
        self._size = size
        self._entries: list[_Read] = []
        self._lock = threading.Lock()
        self.reads = 0
        """How many lists were read so far (a repeated list is read once)."""

    def read(self, tools: Sequence[Any], api: Api) -> _Tools:
        """The read of ``tools``: the cached one when these very objects were read before.

        Raises:
            CatalogError: as `read_tools` (nothing is cached then).
        """
        found = self.cached(tools, api)
        if found is not None:
            return found
        elements = tuple(tools)
        made = self._reader(elements, api)
        with self._lock:
            self.reads += 1
            self._entries.insert(0, _Read(api, elements, made))
            del self._entries[self._size :]
        return made

    def cached(self, tools: Sequence[Any], api: Api) -> _Tools | None:
        """The read of ``tools`` when these very objects were read before, else ``None``
        (one pointer test per tool)."""
        with self._lock:
            for at, entry in enumerate(self._entries):
                if entry.api == api and _same(entry.elements, tools):
                    if at:
                        self._entries.insert(0, self._entries.pop(at))
                    return entry.read
        return None

    def by_source(self, raw: bytes, start: int, end: int) -> tuple[Any, ...] | None:
        """The entries of a read list parsed from exactly ``raw[start:end]``, or ``None``.
        Compares bytes, never parses them."""
        with self._lock:
            for entry in self._entries:
                for source in entry.sources:
                    if len(source) == end - start and raw.startswith(source, start):
                        return entry.elements
        return None

    def add_source(self, tools: Sequence[Any], source: bytes) -> bool:
        """Remember that ``tools`` (these very objects, read before) was parsed from
        ``source``; whether a read list holds them."""
        with self._lock:
            for entry in self._entries:
                if _same(entry.elements, tools):
                    if source not in entry.sources:
                        entry.sources.insert(0, source)
                        del entry.sources[_SOURCES:]
                    return True
        return False


def _same(cached: tuple[Any, ...], tools: Sequence[Any]) -> bool:
    """Whether two tool lists hold the very same objects."""
    return len(cached) == len(tools) and all(map(operator.is_, cached, tools))
