"""The streamed round loop written once, for every dialect, sync and async.

A streamed call runs a plan's rounds as a plain call does (`bot_toolsearch._wrap.rounds`), but
each upstream round is a stream of events and the caller gets a stream back. What is the same
for every dialect is written here once, as a generator of steps (`steps`) that two thin
drivers feed, the sync one (`SyncRoundStream`) and the async one (`AsyncRoundStream`), as
httpx's ``Auth.auth_flow`` is fed by its sync and async clients: each round's events are read
one at a time and relayed as the dialect's round says (live, or held until the round ends);
the round whole goes to the plan, which answers the engine's calls (a hidden round: nothing
more is shown of it but what it streamed, and the next round is opened) or says it is the
last (its held events and the stream's closing ones follow); an error event the dialect passes
on ends the stream. The consumer's stream closes the upstream round it is reading, so one
that leaves cancels the work.

A dialect is an adapter (`StreamDialect`): it opens a round per upstream stream, parses that
round's events into the plan's terms and renders what the caller sees: Chat Completions
(`bot_toolsearch._wrap.streaming`), Responses (`bot_toolsearch._wrap.responses_streaming`)
and Anthropic's Messages (`bot_toolsearch._wrap.messages_streaming`).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol, Self

from bot_toolsearch._services.threads import off_loop

from .rounds import RoundPlan
from .surface import AsyncStreamResponse, SyncStreamResponse

__all__ = [
    "AsyncRoundStream",
    "StreamDialect",
    "StreamRound",
    "SyncRoundStream",
    "steps",
]

END: Final = object()
"""Sent for a `_READ` step when the upstream round has no more events."""
_READ: Final = "read"
"""Step: the next event of the upstream round (or `END`) is sent back."""
_OPEN: Final = "open"
"""Step: the next upstream round is opened and its stream sent back."""
_DONE: Final = object()
"""No more steps: the stream is over."""


@dataclass(frozen=True, slots=True)
class _Feed:
    """Step: the plan reads ``reply`` (off the event loop when it may take long); its answer,
    or ``None`` for another round, is sent back."""

    reply: Any


class StreamRound(Protocol):
    """One upstream round of a streamed call, in a dialect's terms (sans-IO)."""

    @property
    def stopped(self) -> bool:
        """Whether the stream ends after the events `feed` just returned (an error event)."""

    def feed(self, event: Any) -> list[Any]:
        """The caller's events now, for one upstream event."""

    def whole(self) -> Any:
        """The round as one reply for the plan, once its events are read; ``None`` when it
        ended without one (`ended` says so to the caller). Raises where the dialect raises."""

    def ended(self) -> list[Any]:
        """The caller's last events when the round ended without a whole reply."""

    def finish(self, final: Any) -> list[Any]:
        """The caller's events once the plan read the round: ``final`` is its answer (the
        held events the answer keeps and the stream's closing ones), or ``None`` (a hidden
        round: usually nothing)."""


class StreamDialect(Protocol):
    """A dialect's streamed rounds: what a driver needs of it."""

    @property
    def plan(self) -> RoundPlan[Any]:
        """The call's plan: it reads each round whole."""

    def round(self, upstream: Any) -> StreamRound:
        """A new round reading the upstream stream ``upstream``."""

    def busy(self, reply: Any) -> bool:
        """Whether reading ``reply`` may take long enough to leave the event loop."""


def steps(dialect: StreamDialect, upstream: Any) -> Generator[Any, Any, None]:
    """The streamed rounds of one call as steps, starting on the open round ``upstream``.

    Yields a list of the caller's events, `_READ` (send the round's next event, or `END`),
    a `_Feed` (send the plan's answer) or `_OPEN` (send the next round's stream); returns when
    the stream is over.
    """
    while True:
        round_ = dialect.round(upstream)
        while (event := (yield _READ)) is not END:
            out = round_.feed(event)
            if out:
                yield out
            if round_.stopped:
                return
        reply = round_.whole()
        if reply is None:
            yield round_.ended()
            return
        final = yield _Feed(reply)
        out = round_.finish(final)
        if out:
            yield out
        if final is not None:
            return
        upstream = yield _OPEN


class _RoundStream:
    """What the sync and async streams share: the dialect, its transport, the open round.

    Args:
        dialect: the dialect's rounds (`StreamDialect`).
        open_: opens the next upstream round (the plan's next request, streamed).
        events: the events of one upstream round's stream.
        first: the first round's stream, already open.
        close: closes one upstream round's stream (its own ``close()`` if not given).
        render: each of the dialect's events as the caller gets it (the SDK's type; ``None``
            leaves it out), if not as it is.
    """

    def __init__(
        self,
        dialect: StreamDialect,
        open_: Callable[[], Any],
        events: Callable[[Any], Any],
        first: Any,
        *,
        close: Callable[[Any], Any] | None = None,
        render: Callable[[Any], Any] | None = None,
    ) -> None:
        self._dialect = dialect
        self._open = open_
        self._events = events
        self._upstream = first
        self._close = close or _own_close
        self._render = render
        self._flow = steps(dialect, first)

    @property
    def upstream_response(self) -> Any:
        """The HTTP response of the current upstream round."""
        return self._upstream.response

    def _advance(self, sent: Any) -> Any:
        """The flow's next step, sent ``sent`` (what the last step asked for); `_DONE` at the
        end."""
        try:
            return self._flow.send(sent)
        except StopIteration:
            return _DONE

    def _shown(self, events: list[Any]) -> Iterable[Any]:
        render = self._render
        if render is None:
            return events
        return (shown for event in events if (shown := render(event)) is not None)


def _own_close(upstream: Any) -> Any:
    return upstream.close()


class SyncRoundStream(_RoundStream):
    """The caller's stream of a sync streamed call (iterator, context manager)."""

    @classmethod
    def start(
        cls,
        dialect: StreamDialect,
        open_: Callable[[], Any],
        events: Callable[[Any], Iterator[Any]],
        **options: Any,
    ) -> Self:
        """The stream, its first round opened here (an upstream error raises here)."""
        return cls(dialect, open_, events, open_(), **options)

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return SyncStreamResponse(self, self.close)

    def _run(self) -> Iterator[Any]:
        events: Iterator[Any] | None = None
        step = self._advance(None)
        while step is not _DONE:
            sent: Any = None
            if step is _READ:
                events = events or self._events(self._upstream)
                sent = next(events, END)
            elif isinstance(step, _Feed):
                sent = self._dialect.plan.feed(step.reply)
            elif step is _OPEN:
                events, self._upstream = None, self._open()
                sent = self._upstream
            else:
                yield from self._shown(step)
            step = self._advance(sent)

    def __iter__(self) -> Iterator[Any]:
        return self._iterator

    def __next__(self) -> Any:
        return next(self._iterator)

    @functools.cached_property
    def _iterator(self) -> Iterator[Any]:
        return self._run()

    def close(self) -> None:
        """Close the upstream stream."""
        self._close(self._upstream)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRoundStream(_RoundStream):
    """The caller's stream of an async streamed call (async iterator, context manager)."""

    @classmethod
    async def start(
        cls,
        dialect: StreamDialect,
        open_: Callable[[], Awaitable[Any]],
        events: Callable[[Any], AsyncIterator[Any]],
        **options: Any,
    ) -> Self:
        """The stream, its first round opened here (an upstream error raises here)."""
        return cls(dialect, open_, events, await open_(), **options)

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return AsyncStreamResponse(self, self.close)

    async def _run(self) -> AsyncIterator[Any]:
        events: AsyncIterator[Any] | None = None
        step = self._advance(None)
        while step is not _DONE:
            sent: Any = None
            if step is _READ:
                events = events or self._events(self._upstream)
                sent = await anext(events, END)
            elif isinstance(step, _Feed):
                plan, reply = self._dialect.plan, step.reply
                sent = await off_loop(plan.offload or self._dialect.busy(reply), plan.feed, reply)
            elif step is _OPEN:
                events, self._upstream = None, await self._open()
                sent = self._upstream
            else:
                for event in self._shown(step):
                    yield event
            step = self._advance(sent)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    @functools.cached_property
    def _iterator(self) -> AsyncIterator[Any]:
        return self._run()

    async def close(self) -> None:
        """Close the upstream stream."""
        await self._close(self._upstream)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
