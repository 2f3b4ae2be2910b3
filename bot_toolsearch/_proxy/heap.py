"""What refused requests leave on the heap of a process that only serves the proxy.

``serve`` freezes the heap after each newly indexed tool list and makes full collections a
hundred times rarer (`ProxyApp(freeze_heap=True)`), so cyclic garbage waits long. A refused
request must leave none that holds its body (the proxy's own awaits form no cycle with a
failure's traceback); what cycles the libraries below still form (an HTTP response and its
stream, an SDK client copy) are small, and `Leftovers` collects them: one full collection per
``budget`` bytes of refused bodies, so no stream of refused requests grows the heap without
bound, and a flood pays for its own collections.
"""

from __future__ import annotations

import gc

__all__ = ["DEFAULT_BUDGET", "Leftovers"]

DEFAULT_BUDGET = 64 * 1024 * 1024
"""Bytes of refused request bodies between two full collections."""


class Leftovers:
    """Full collections paid for by refused requests: one per ``budget`` bytes of their bodies
    (a bodiless request counts as one kilobyte).

    >>> leftovers = Leftovers(budget=2048)
    >>> leftovers.refused(1000), leftovers.refused(0), leftovers.refused(500)
    (False, True, False)
    """

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self._budget = budget
        self._pending = 0
        self.collections = 0
        """Full collections run so far."""

    def refused(self, size: int) -> bool:
        """A request was refused after reading ``size`` body bytes; whether that ran a full
        collection."""
        self._pending += max(size, 1024)
        if self._pending < self._budget:
            return False
        self._pending = 0
        self.collections += 1
        gc.collect()
        return True
