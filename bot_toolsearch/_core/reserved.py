"""A real tool named ``tool_search``: skipped wherever the virtual search tool is offered.

Every door follows one rule. While a request offers the virtual ``tool_search`` (tool search on,
some permitted tool deferred), a real tool of that name is left out: it is not sent, not
callable and not in the directory, and the one summary warning a catalog build logs for it
says so, once per tool set; every other tool stays searchable. While no virtual tool is
offered (tool search off, or nothing left to defer), the real tool is an ordinary tool. The
`Bot`, the MCP door, the wrapper and the proxy all keep the real tool out of their catalog and
in their tool set, and apply the rule per request with `ReservedTool`; a `ToolCatalog` built
directly skips such a tool with that same warning.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .catalog import TOOL_SEARCH_NAME, log_reserved_skipped

__all__ = ["ReservedTool"]


class ReservedTool:
    """A tool set's real tool named ``tool_search`` (if any), and its one warning.

    Args:
        names: the tool set's names in order (the warning names the real tool's position).

    >>> reserved = ReservedTool(["a", "tool_search", "b"])
    >>> reserved.present, sorted(reserved.skip(frozenset({"a", "tool_search"})))
    (True, ['a'])
    >>> names = frozenset({"a"})
    >>> reserved.skip(names) is names, ReservedTool(["a"]).present
    (True, False)
    """

    __slots__ = ("_lock", "_logged", "position", "total")

    def __init__(self, names: Iterable[str]) -> None:
        listed = list(names)
        self.position: int | None = (
            listed.index(TOOL_SEARCH_NAME) if TOOL_SEARCH_NAME in listed else None
        )
        """Where the real tool is among the names (``None``: there is none)."""
        self.total = len(listed)
        """How many names the tool set has."""
        self._logged = False
        self._lock = threading.Lock()

    @property
    def present(self) -> bool:
        """Whether the tool set has a real tool named ``tool_search``."""
        return self.position is not None

    @staticmethod
    def skip(names: frozenset[str]) -> frozenset[str]:
        """``names`` as a request that offers the virtual ``tool_search`` may use them: without
        the real one (``names`` itself when it does not hold that name)."""
        return names - {TOOL_SEARCH_NAME} if TOOL_SEARCH_NAME in names else names

    def warn(self) -> None:
        """Log the summary warning of the skipped real tool: the first time only."""
        if self.position is None or self._logged:
            return
        with self._lock:
            if self._logged:
                return
            self._logged = True
        log_reserved_skipped(self.position, self.total)
