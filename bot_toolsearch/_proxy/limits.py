"""The proxy's bounds on concurrent work: requests in flight, and the answer past a bound.

A request past a bound is refused at once, never queued without end: 429 when more than
``max_in_flight`` requests are being served (``serve --max-in-flight``), 503 when the ``index``
pool cannot take a new tool list (``serve --index-builds``; its queue is full) or another pool
is full; both with ``Retry-After`` (the openai SDK honours it when it retries).
"""

from __future__ import annotations

__all__ = ["DEFAULT_INDEX_BUILDS", "DEFAULT_MAX_IN_FLIGHT", "RETRY_AFTER", "InFlight"]

DEFAULT_MAX_IN_FLIGHT = 256
"""Most requests served at once by one worker; one more is answered 429."""
DEFAULT_INDEX_BUILDS = 2
"""Most new tool lists indexed at once by one worker (the ``index`` pool's threads); up to
four times as many wait, more are answered 503."""
RETRY_AFTER = 1
"""Seconds a refused client is told to wait (``Retry-After``)."""


class InFlight:
    """A count of the requests being served, bounded by ``limit`` (one event loop: no lock).

    >>> gate = InFlight(1)
    >>> gate.enter(), gate.enter()
    (True, False)
    >>> gate.leave(); gate.enter()
    True
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {limit}")
        self.limit = limit
        self.count = 0

    def enter(self) -> bool:
        """Count one more request; ``False`` (nothing counted) past the limit."""
        if self.count >= self.limit:
            return False
        self.count += 1
        return True

    def leave(self) -> None:
        """A counted request is done."""
        self.count -= 1
