"""The proxy's bounds on concurrent work: requests in flight, and the answer past a bound.

A request past a bound is refused at once, never queued without end: 429 when more than
``max_in_flight`` requests are being served (``serve --max-in-flight``), 503 when the ``index``
pool cannot take a new tool list (``serve --index-builds``; its queue is full), another pool
is full, or the bodies held at once would pass `BodyBytes` (a request counts in flight only
once its body is whole, so the bodies still arriving are bounded by their bytes); all with
``Retry-After`` (the openai SDK honours it when it retries).
"""

from __future__ import annotations

from typing import Protocol

__all__ = [
    "DEFAULT_INDEX_BUILDS",
    "DEFAULT_MAX_IN_FLIGHT",
    "RETRY_AFTER",
    "BodyBytes",
    "Gate",
    "InFlight",
    "body_bytes_for",
]

DEFAULT_MAX_IN_FLIGHT = 256
"""Most requests served at once by one worker; one more is answered 429."""
DEFAULT_INDEX_BUILDS = 2
"""Most new tool lists indexed at once by one worker (the ``index`` pool's threads); up to
four times as many wait, more are answered 503."""
RETRY_AFTER = 1
"""Seconds a refused client is told to wait (``Retry-After``)."""


class Gate(Protocol):
    """A bound of requests in flight: `InFlight`, or a named client's
    (`bot_toolsearch._proxy.admission.ClientGate`)."""

    def enter(self) -> bool:
        """Count one more request; ``False`` (nothing counted) past the bound."""
        ...

    def leave(self) -> None:
        """A counted request is done."""
        ...


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


def body_bytes_for(max_body: int) -> int:
    """The default bound of `BodyBytes`: a gigabyte, or four of the largest bodies."""
    return max(1024**3, 4 * max_body)


class BodyBytes:
    """The request body bytes one worker holds at once (arriving, or whole and being served),
    bounded by ``limit`` (one event loop: no lock).

    >>> held = BodyBytes(10)
    >>> held.take(6), held.take(6), held.held
    (True, False, 6)
    >>> held.give(6); held.take(10)
    True
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the body bytes bound must be at least 1, got {limit}")
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes; ``False`` (nothing held) past the limit."""
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        """Bytes taken before are no longer held."""
        self.held -= size
