"""``stream=True`` for the Responses API: hidden rounds consumed, one well-formed event stream.

Each upstream round is streamed. The caller gets one ``response.created`` and one
``response.in_progress``, held until the first other event it gets: they are the round it is
first shown something in (the final round, unless an earlier one streamed text before it
searched), and that round's response id is the stream's one id, from ``response.created`` to
the terminal event (`ResponsesPlan.present`; `ResponseAliases` when it is not the final
round's). Then ``sequence_number`` counting from 0 across the whole stream, ``output_index``
counting the items the caller was shown, and one terminal event (``response.completed``, or
``response.incomplete``/``response.failed`` as the upstream ended) whose ``response`` is the
final round's as `ResponsesPlan.feed` rewrote it: only the caller's calls, canonical names,
``usage`` summed over every round, and an ``output`` that lists exactly the items the caller
was shown.

Message text streams through as it arrives, unless it starts like a tool-call envelope (``{``,
``<``, a code fence: the plan may read calls from it), which is held until the round ends.
Every other item (function calls, reasoning) is held: only at the end of a round is it known
whether the wrapper answers it. A client that speaks OpenAI's dialect is shown each search of
a hidden round (its ``tool_search_call`` and ``tool_search_output``, whole) before the first
item of a later round, so items come in the order they happened. A hidden round's held
items are dropped; its streamed text stays (the caller saw it) and is part of the final
``output``. The final round's held items are
sent as whole items (``output_item.added``, the arguments or text in one piece,
``output_item.done``). An upstream ``error`` event is passed on and ends the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Self

from openai.types.responses import (
    Response,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseErrorEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

from bot_toolsearch._services.threads import off_loop

from .plan import busy
from .replies import check_response, iterate_async, iterate_sync, stream_request
from .responses import ResponsesPlan, create_round, create_round_async
from .surface import AsyncStreamResponse, SyncStreamResponse

__all__ = ["AsyncResponsesStream", "SyncResponsesStream"]

_ENVELOPE_STARTS = ("{", "<", "`", "~")
_OPENING = ("response.created", "response.in_progress")
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class _Caller:
    """What the caller's stream carries across rounds."""

    def __init__(self, plan: ResponsesPlan) -> None:
        self.plan = plan
        self.sequence = 0
        self.opened = False
        self.held: dict[str, Any] = {}  # the latest round's opening events, not yet sent
        self.identity: str | None = None  # the stream's one response id, once opened
        self.items: list[tuple[str, Any]] = []  # (item id, item) in caller order

    def opening(self) -> list[Any]:
        """The opening events, once, before the first other event the caller gets (unnumbered,
        the sender numbers them with what follows). They are the latest round's: the first
        the caller is shown something in, so its response id (the final round's unless an
        earlier round streamed text) is the stream's, from the first event to the last."""
        if self.opened:
            return []
        self.opened = True
        out: list[Any] = []
        for kind in _OPENING:
            event = self.held.get(kind)
            if event is None:
                continue
            response = event.response.model_copy()
            self.identity = self.identity or getattr(response, "id", None) or None
            self.plan.present(response, self.identity)
            out.append(event.model_copy(update={"response": response}))
        return out  # numbered by the sender, with what follows them

    def send(self, event: Any, index: int | None = None) -> Any:
        """``event`` renumbered for the caller (and moved to caller index ``index``)."""
        update: dict[str, Any] = {"sequence_number": self.sequence}
        if index is not None:
            update["output_index"] = index
        self.sequence += 1
        return event.model_copy(update=update)

    def place(self, item_id: str) -> int:
        """A new caller output index for the item ``item_id``."""
        self.items.append((item_id, None))
        return len(self.items) - 1

    def searches(self) -> list[Any]:
        """The searches of the hidden rounds so far not yet shown, as whole items: they
        happened before anything the current round shows, so they come first."""
        shown = {item_id for item_id, _ in self.items}
        out: list[Any] = []
        for item in self.plan.searches_so_far():
            item_id = str(getattr(item, "id", "") or "")
            if item_id in shown:
                continue
            index = self.place(item_id)
            self.items[index] = (item_id, item)
            out.extend(_whole_item(self, item, index))
        return out


class _Lane:
    """One upstream output item of a round."""

    __slots__ = ("events", "index", "item_id", "kind", "text")

    def __init__(self, kind: str, item_id: str) -> None:
        self.kind = kind
        self.item_id = item_id
        self.events: list[Any] = []
        self.text = ""
        self.index: int | None = None  # the caller index once it streams live


class _Round:
    """One upstream round of a streamed call (sans-IO)."""

    def __init__(self, caller: _Caller) -> None:
        self._caller = caller
        self._lanes: dict[int, _Lane] = {}
        self.response: Response | None = None
        self.terminal = "response.completed"
        self.error: Any = None

    def feed(self, event: Any) -> list[Any]:
        """The events to send the caller now for one upstream event."""
        caller = self._caller
        start = caller.sequence
        out = self._feed(event)
        if not out or caller.opened:
            return out
        opening = caller.opening()
        caller.sequence = start
        return [caller.send(e) for e in (*opening, *out)]

    def _feed(self, event: Any) -> list[Any]:
        kind = getattr(event, "type", None)
        caller = self._caller
        if kind in _OPENING:
            if not caller.opened:
                caller.held[kind] = event
            return []
        if kind in _TERMINAL:
            self.response = event.response
            self.terminal = kind
            return []
        if kind == "error":
            self.error = event
            return [caller.send(event)]
        index = getattr(event, "output_index", None)
        if not isinstance(index, int):
            return []
        lane = self._lanes.get(index)
        if lane is None:
            item = getattr(event, "item", None)
            lane = self._lanes[index] = _Lane(
                str(getattr(item, "type", "") or ""), str(getattr(item, "id", "") or "")
            )
        if lane.index is not None:
            return [caller.send(event, lane.index)]
        lane.events.append(event)
        if lane.kind == "message" and kind == "response.output_text.delta":
            lane.text += event.delta or ""
            stripped = lane.text.lstrip()
            if stripped and not stripped.startswith(_ENVELOPE_STARTS):
                searched = caller.searches()
                lane.index = caller.place(lane.item_id)
                held, lane.events = lane.events, []
                return [*searched, *(caller.send(e, lane.index) for e in held)]
        return []

    def settle(self) -> None:
        """After a round: the items the caller was shown live take their final form."""
        if self.response is None:
            return
        shown = {lane.item_id for lane in self._lanes.values() if lane.index is not None}
        by_id = {getattr(item, "id", None): item for item in self.response.output or ()}
        caller = self._caller
        caller.items = [
            (item_id, by_id[item_id] if item_id in shown and item_id in by_id else item)
            for item_id, item in caller.items
        ]

    def finish(self, final: Response) -> list[Any]:
        """The caller's last events: the held items the plan kept, then the terminal one."""
        caller = self._caller
        shown = {lane.item_id for lane in self._lanes.values() if lane.index is not None}
        shown.update(item_id for item_id, _ in caller.items)  # and the searches shown early
        out: list[Any] = [caller.send(e) for e in caller.opening()]
        caller.plan.present(final, caller.identity)
        for item in final.output or ():
            item_id = str(getattr(item, "id", None) or getattr(item, "call_id", "") or "")
            if item_id and item_id in shown:
                continue
            index = caller.place(item_id)
            caller.items[index] = (item_id, item)
            out.extend(_whole_item(caller, item, index))
        final.output = [item for _, item in caller.items if item is not None]
        terminal = {"type": self.terminal, "response": final, "sequence_number": 0}
        event_type = _TERMINAL_EVENTS[self.terminal]
        out.append(caller.send(event_type.model_construct(**terminal)))
        return out


def _terminal_events() -> dict[str, Any]:
    from openai.types.responses import (
        ResponseCompletedEvent,
        ResponseFailedEvent,
        ResponseIncompleteEvent,
    )

    return {
        "response.completed": ResponseCompletedEvent,
        "response.incomplete": ResponseIncompleteEvent,
        "response.failed": ResponseFailedEvent,
    }


_TERMINAL_EVENTS = _terminal_events()


def _whole_item(caller: _Caller, item: Any, index: int) -> list[Any]:
    """The events of one output item sent in one piece."""

    def send(event: Any) -> Any:
        return caller.send(event, index)

    out = [
        send(
            ResponseOutputItemAddedEvent.model_construct(
                type="response.output_item.added", item=item, output_index=index, sequence_number=0
            )
        )
    ]
    if isinstance(item, ResponseFunctionToolCall):
        out.append(
            send(
                ResponseFunctionCallArgumentsDoneEvent.model_construct(
                    type="response.function_call_arguments.done",
                    item_id=item.id or item.call_id,
                    output_index=index,
                    arguments=item.arguments,
                    sequence_number=0,
                )
            )
        )
    elif isinstance(item, ResponseOutputMessage):
        out.extend(_message_parts(send, item, index))
    out.append(
        send(
            ResponseOutputItemDoneEvent.model_construct(
                type="response.output_item.done", item=item, output_index=index, sequence_number=0
            )
        )
    )
    return out


def _message_parts(
    send: Callable[[Any], Any], item: ResponseOutputMessage, index: int
) -> list[Any]:
    out: list[Any] = []
    for content_index, part in enumerate(item.content):
        where: dict[str, Any] = {
            "item_id": item.id,
            "output_index": index,
            "content_index": content_index,
        }
        text = getattr(part, "text", None)
        out.append(
            send(
                ResponseContentPartAddedEvent.model_construct(
                    type="response.content_part.added", part=part, sequence_number=0, **where
                )
            )
        )
        if isinstance(text, str):
            out.append(
                send(
                    ResponseTextDeltaEvent.model_construct(
                        type="response.output_text.delta",
                        delta=text,
                        logprobs=[],
                        sequence_number=0,
                        **where,
                    )
                )
            )
            out.append(
                send(
                    ResponseTextDoneEvent.model_construct(
                        type="response.output_text.done",
                        text=text,
                        logprobs=[],
                        sequence_number=0,
                        **where,
                    )
                )
            )
        out.append(
            send(
                ResponseContentPartDoneEvent.model_construct(
                    type="response.content_part.done", part=part, sequence_number=0, **where
                )
            )
        )
    return out


def _ended_early(caller: _Caller) -> Any:
    return caller.send(
        ResponseErrorEvent.model_construct(
            type="error",
            code="upstream_stream_ended",
            message="the upstream stream ended without a final response event",
            param=None,
            sequence_number=0,
        )
    )


class AsyncResponsesStream:
    """The caller's stream of a ``responses.create(stream=True)`` call (async iterator)."""

    def __init__(
        self, create: Callable[..., Awaitable[Any]], plan: ResponsesPlan, first: Any
    ) -> None:
        self._create = create
        self._plan = plan
        self._upstream = first
        self._iterator = self._run()

    @classmethod
    async def start(cls, create: Callable[..., Awaitable[Any]], plan: ResponsesPlan) -> Self:
        """Send the first round (an upstream error raises here, as from the SDK)."""
        return cls(create, plan, await create_round_async(create, plan))

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return AsyncStreamResponse(self, self.close)

    @property
    def upstream_response(self) -> Any:
        """The HTTP response of the current upstream round."""
        return self._upstream.response

    async def _next_round(self) -> None:
        self._upstream = await create_round_async(self._create, self._plan)

    async def _run(self) -> AsyncIterator[Any]:
        caller = _Caller(self._plan)
        while True:
            round_ = _Round(caller)
            async for event in iterate_async(self._upstream, chat=False):
                for out in round_.feed(event):
                    yield out
                if round_.error is not None:
                    return
            if round_.response is None:
                yield _ended_early(caller)
                return
            response = check_response(round_.response, stream_request(self._upstream))
            heavy = self._plan.offload or busy(response)
            final = await off_loop(heavy, self._plan.feed, response)
            round_.settle()
            if final is not None:
                for out in round_.finish(final):
                    yield out
                return
            await self._next_round()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        """Close the upstream stream."""
        await self._upstream.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class SyncResponsesStream:
    """The caller's stream of a sync ``responses.create(stream=True)`` call (iterator)."""

    def __init__(self, create: Callable[..., Any], plan: ResponsesPlan, first: Any) -> None:
        self._create = create
        self._plan = plan
        self._upstream = first
        self._iterator = self._run()

    @classmethod
    def start(cls, create: Callable[..., Any], plan: ResponsesPlan) -> Self:
        """Send the first round (an upstream error raises here, as from the SDK)."""
        return cls(create, plan, create_round(create, plan))

    @property
    def response(self) -> Any:
        """The HTTP response of the current upstream round; closing it closes the stream."""
        return SyncStreamResponse(self, self.close)

    @property
    def upstream_response(self) -> Any:
        """The HTTP response of the current upstream round."""
        return self._upstream.response

    def _next_round(self) -> None:
        self._upstream = create_round(self._create, self._plan)

    def _run(self) -> Iterator[Any]:
        caller = _Caller(self._plan)
        while True:
            round_ = _Round(caller)
            for event in iterate_sync(self._upstream, chat=False):
                yield from round_.feed(event)
                if round_.error is not None:
                    return
            if round_.response is None:
                yield _ended_early(caller)
                return
            response = check_response(round_.response, stream_request(self._upstream))
            final = self._plan.feed(response)
            round_.settle()
            if final is not None:
                yield from round_.finish(final)
                return
            self._next_round()

    def __iter__(self) -> Iterator[Any]:
        return self._iterator

    def __next__(self) -> Any:
        return next(self._iterator)

    def close(self) -> None:
        """Close the upstream stream."""
        self._upstream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
