"""The round loop written once: send a plan's request, feed the reply, until it answers.

A plan is sans-IO (`RoundPlan`): ``request()`` says what to send upstream next, ``feed(reply)``
reads the upstream's reply and returns the caller's answer, or ``None`` to go round again.
`drive` is the async driver and `drive_sync` the sync one, with the transport passed in, so a
dialect is a plan plus a transport and no dialect writes the loop itself. The Messages dialect
runs on it (`bot_toolsearch._wrap.messages`); the Chat and Responses plans have the same shape
and can move onto it from their own loops in `bot_toolsearch._wrap.client`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from bot_toolsearch._services.threads import off_loop

__all__ = ["RoundPlan", "drive", "drive_sync"]

_A_co = TypeVar("_A_co", covariant=True)
_A = TypeVar("_A")


class RoundPlan(Protocol[_A_co]):
    """What a driver needs of a plan."""

    offload: bool
    """Reading a reply may take long (a search embeds, an index builds): off the loop."""

    def request(self) -> Any:
        """The next upstream request."""

    def feed(self, reply: Any) -> _A_co | None:
        """Read one reply: the caller's answer, or ``None`` to send `request` again."""


async def drive(plan: RoundPlan[_A], send: Callable[[Any], Awaitable[Any]]) -> _A:
    """Run ``plan`` over the async transport ``send`` until it answers."""
    while True:
        reply = await send(plan.request())
        done = await off_loop(plan.offload, plan.feed, reply)
        if done is not None:
            return done


def drive_sync(plan: RoundPlan[_A], send: Callable[[Any], Any]) -> _A:
    """Run ``plan`` over the sync transport ``send`` until it answers."""
    while True:
        done = plan.feed(send(plan.request()))
        if done is not None:
            return done
