"""How a caller speaks tool search: who decides the deferred set, how searches are reported.

The engine's rounds are the same for every caller; a dialect is only data it reads. The
default (`CONFIG`) is the config's: ``[skills]`` decides what is deferred, and a search is
answered in a hidden round the caller never sees. A client that speaks tool search itself
(OpenAI's ``tool_search`` tool and ``defer_loading`` keys) fixes the deferred set per request
and reads a report of each search (the edge, `bot_toolsearch._wrap.native`, renders it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CONFIG", "Dialect"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the engine reads of a caller's way of asking for tool search."""

    deferred: frozenset[str] | None = None
    """The caller fixed the deferred set: every permitted tool outside it is loaded from
    round 1 (with ``tool_search_always_loaded`` on top); ``None``: the config decides."""
    report_searches: bool = False
    """The caller's reply reports each search and what it loaded (the engine records them in
    `Answer.searched`), instead of hiding them entirely."""

    def always_loaded(self, permitted: Iterable[str]) -> tuple[str, ...]:
        """The permitted names this dialect loads from round 1 (none when the config decides)."""
        if self.deferred is None:
            return ()
        return tuple(name for name in permitted if name not in self.deferred)


CONFIG = Dialect()
"""The config decides what is deferred; searches are hidden."""
