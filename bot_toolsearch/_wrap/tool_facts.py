"""What a server asks of every request's tool list, answered once per list: whether it speaks
the tool-search dialect and how many tools it names.

Both are facts of the list alone, and a server receives the same list on every request of a
conversation. `speaks_native` and the count of `count_named` walk every entry with key tests
(at 769 tools about a tenth of the proxy's own CPU per request); `ToolFacts` keeps them for
the very tool objects they were taken from, as `NativeCache` keeps a dialect list's read, so
a list found again by its bytes (the proxy's `_parse_known`: the cache's own objects) costs
one pointer test per tool. Only lists the caller says are held elsewhere are remembered
(``remember``), so nothing a client sends once is kept alive here; at most `_SIZE` lists,
most recently used first.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .caller_tools import Api
from .native import count_named, speaks_native

__all__ = ["Facts", "ToolFacts"]

_SIZE = 8
"""Most lists whose facts are kept."""


@dataclass(frozen=True, slots=True)
class Facts:
    """A tool list's facts: whether it speaks the dialect, how many tools it names
    (a namespace counted as its members)."""

    native: bool
    named: int


@dataclass(slots=True, eq=False)
class _Entry:
    api: Api
    elements: tuple[Any, ...]
    facts: Facts


class ToolFacts:
    """The facts of tool lists, by the identity of their entries (one event loop's use)."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._entries: list[_Entry] = []
        self.walks = 0
        """How many lists were walked so far (a remembered list is walked once)."""

    def of(self, tools: Sequence[Any], api: Api, *, remember: bool) -> Facts:
        """The facts of ``tools``: the kept ones when these very objects were seen before;
        ``remember``: keep them (the entries are held elsewhere anyway)."""
        for at, entry in enumerate(self._entries):
            if entry.api == api and _same(entry.elements, tools):
                if at:
                    self._entries.insert(0, self._entries.pop(at))
                return entry.facts
        self.walks += 1
        facts = Facts(speaks_native(tools, api), count_named({"tools": tools}, api)[0])
        if remember:
            self._entries.insert(0, _Entry(api, tuple(tools), facts))
            del self._entries[self._size :]
        return facts

    def named(self, body: Mapping[str, Any], api: Api, *, remember: bool) -> tuple[int, int]:
        """`count_named` of a request body, its ``tools`` count taken from `of`."""
        tools = body.get("tools")
        listed = (
            self.of(tools, api, remember=remember).named if isinstance(tools, list | tuple) else 0
        )
        rest = {"input": body["input"]} if "input" in body else {}
        return listed, count_named(rest, api)[1]


def _same(cached: tuple[Any, ...], tools: Sequence[Any]) -> bool:
    """Whether two tool lists hold the very same objects (one test for the very tuple)."""
    if cached is tools:
        return True
    return len(cached) == len(tools) and all(map(operator.is_, cached, tools))
