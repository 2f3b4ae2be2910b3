"""How long a client may take to send a request body, and when the request counts in flight.

A request's body must arrive within ``read_timeout`` seconds of the proxy waiting for it (the
proxy's own work meanwhile, a key probe, not counted); a slower client is answered 408 and its
connection closed (``serve --read-timeout``; the head has its deadline in
`bot_toolsearch._proxy.head_deadline`). A request counts against ``--max-in-flight`` (and its
named client's ``max_in_flight``) only once its whole body has arrived, so sockets that send a
head and drip the body hold no place that a whole request needs: they wait out their deadline
and are refused. What bodies still arriving cost is bounded by their bytes instead
(`BodyBytes`: past it, 503 and the connection closed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .limits import BodyBytes, Gate, InFlight

__all__ = [
    "DEFAULT_READ_TIMEOUT",
    "ENV_READ_TIMEOUT",
    "BodiesFull",
    "BodyTimeout",
    "InFlightFull",
    "Reading",
]

ENV_READ_TIMEOUT = "BOT_TOOLSEARCH_READ_TIMEOUT"
"""``serve --read-timeout`` for each worker: the app's body deadline and the head deadline."""

DEFAULT_READ_TIMEOUT = 30.0
"""Seconds a client may take to send a request's head, and again its body (``serve
--read-timeout``); slower is refused with 408. A 64 MB body at 3 MB/s fits."""

_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyTimeout(Exception):
    """The client did not send its whole body within the deadline."""


class InFlightFull(Exception):
    """The whole body arrived, but an in-flight bound is reached: ``gate``'s."""

    def __init__(self, gate: Gate) -> None:
        super().__init__(gate)
        self.gate = gate


class BodiesFull(Exception):
    """The body's next bytes would pass the bound of body bytes held at once."""


class Reading:
    """A request's ``receive``: the body within ``timeout`` seconds of waiting for it, the request
    counted in ``gate`` (and in those of `count_also`) once the body is whole, its bytes
    held in ``held`` as they arrive (`leave` gives both back), and the body's size in bytes
    (`size`). After the body, messages pass through unchanged (a disconnect).

    The deadline is one timer per request, not one per message (a body arrives in many): it
    fires once the time spent waiting could have reached ``timeout``, and then either moves
    on by the time the proxy spent on its own work meanwhile, or ends the wait in progress
    (`BodyTimeout`), or, between two waits, makes the next one fail at once.
    """

    __slots__ = (
        "_cancelling",
        "_counted",
        "_expired",
        "_gates",
        "_held",
        "_inside",
        "_loop",
        "_receive",
        "_since",
        "_taken",
        "_task",
        "_timeout",
        "_timer",
        "_waited",
        "size",
        "whole",
    )

    def __init__(self, receive: _Receive, timeout: float, gate: InFlight, held: BodyBytes) -> None:
        self._receive, self._timeout, self._held = receive, timeout, held
        self._gates: list[Gate] = [gate]
        self._counted: list[Gate] = []
        self._waited = 0.0
        self._since = 0.0
        self._inside = False
        self._expired = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._timer: asyncio.TimerHandle | None = None
        self._taken = 0
        self.size = 0
        self.whole = False

    def count_also(self, gate: Gate) -> None:
        """Count the request in ``gate`` too, once its body is whole (a named client's bound).

        Raises:
            InFlightFull: the body is whole already, and ``gate`` is full.
        """
        self._gates.append(gate)
        if self.whole:
            self._enter(gate)

    def _enter(self, gate: Gate) -> None:
        if not gate.enter():
            raise InFlightFull(gate)
        self._counted.append(gate)

    async def __call__(self) -> MutableMapping[str, Any]:
        """The next message.

        Raises:
            BodyTimeout: the body is not whole within the deadline.
            InFlightFull: it is whole, and an in-flight bound is reached (nothing counted).
            BodiesFull: its bytes would pass the bound of body bytes held at once.
        """
        if self.whole:
            return await self._receive()
        if self._expired:
            raise BodyTimeout
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        task = self._task = asyncio.current_task(loop)
        cancelling = self._cancelling = 0 if task is None else task.cancelling()
        since = self._since = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(since + self._timeout - self._waited, self._fire)
        self._inside = True
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            if self._expired and task is not None and task.uncancel() <= cancelling:
                raise BodyTimeout from None
            raise
        finally:
            self._inside = False
            self._task = None
            self._waited += loop.time() - since
        if message["type"] == "http.request":
            size = len(message.get("body", b""))
            if size and not self._held.take(size):
                raise BodiesFull
            self._taken += size
            self.size += size
            if not message.get("more_body", False):
                self._whole()
        return message

    def _whole(self) -> None:
        """The body is whole: its deadline stops, and the request is counted.

        Raises:
            InFlightFull: an in-flight bound is reached (nothing counted).
        """
        self.whole = True
        self._stop_timer()
        try:
            for gate in self._gates:
                self._enter(gate)
        except InFlightFull:
            self._uncount()
            raise

    def _fire(self) -> None:
        """The deadline's timer: moved on by the time not spent waiting, or spent."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        left = self._timeout - self._waited - (now - self._since if self._inside else 0.0)
        if left > 0:  # the proxy's own work meanwhile (a key probe) does not count
            self._timer = loop.call_at(now + left, self._fire)
            return
        self._expired = True
        if self._inside and self._task is not None:
            self._task.cancel()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def leave(self) -> None:
        """The request is done: its bytes given back, and uncounted if it was counted."""
        self._stop_timer()
        self._held.give(self._taken)
        self._taken = 0
        self._uncount()

    def _uncount(self) -> None:
        counted, self._counted = self._counted, []
        for gate in counted:
            gate.leave()
