"""The round loop written once: send a plan's request, feed the reply, until it answers.

A plan is sans-IO (`RoundPlan`): ``request()`` says what to send upstream next, ``feed(reply)``
reads the upstream's reply and returns the caller's answer, or ``None`` to go round again.
`drive` is the async driver and `drive_sync` the sync one, with the transport passed in, so a
dialect is a plan plus a transport and no dialect writes the loop itself. The Messages dialect
(`bot_toolsearch._wrap.messages`) and the Chat Completions and Responses plans run on it (a
Responses round is a `chain_round` flow its transport drives); their streamed calls run on
its streamed twin, `bot_toolsearch._wrap.stream_driver`.
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


async def drive(
    plan: RoundPlan[_A],
    send: Callable[[Any], Awaitable[Any]],
    busy: Callable[[Any], bool] | None = None,
) -> _A:
    """Run ``plan`` over the async transport ``send`` until it answers; a reply is read off
    the event loop when the plan says so, or when ``busy(reply)`` finds it large."""
    while True:
        reply = await send(plan.request())
        if plan.offload or (busy is not None and busy(reply)):
            done = await off_loop(True, plan.feed, reply)
        else:
            done = plan.feed(reply)
        if done is not None:
            return done


def drive_sync(plan: RoundPlan[_A], send: Callable[[Any], Any]) -> _A:
    """Run ``plan`` over the sync transport ``send`` until it answers."""
    while True:
        done = plan.feed(send(plan.request()))
        if done is not None:
            return done
