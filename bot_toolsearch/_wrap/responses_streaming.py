"""``stream=True`` for the Responses API: hidden rounds consumed, one well-formed event stream.

The Responses dialect of the shared stream driver (`bot_toolsearch._wrap.stream_driver`, which
runs the rounds, sync and async). Each upstream round is streamed. The caller gets one
``response.created`` and one ``response.in_progress``, held until the first other event it gets:
they are the round it is first shown something in (the final round, unless an earlier one
streamed text before it searched), and that round's response id is the stream's one id, from
``response.created`` to the terminal event (`ResponsesPlan.present`; `ResponseAliases` when it
is not the final round's). Then ``sequence_number`` counting from 0 across the whole stream,
``output_index`` counting the items the caller was shown, and one terminal event
(``response.completed``, or ``response.incomplete``/``response.failed`` as the upstream ended)
whose ``response`` is the final round's as `ResponsesPlan.feed` rewrote it: only the caller's
calls, canonical names, ``usage`` summed over every round, and an ``output`` that lists exactly
the items the caller was shown.

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

import functools
from collections.abc import Awaitable, Callable
from typing import Any

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

from .plan import busy
from .replies import check_response, iterate_async, iterate_sync, stream_request
from .responses import ResponsesPlan, create_round, create_round_async
from .stream_driver import AsyncRoundStream, SyncRoundStream

__all__ = ["responses_stream_async", "responses_stream_sync"]

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

    def __init__(self, caller: _Caller, upstream: Any = None) -> None:
        self._caller = caller
        self._upstream = upstream
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

    @property
    def stopped(self) -> bool:
        """Whether an upstream ``error`` event was passed on: it ends the stream."""
        return self.error is not None

    def whole(self) -> Response | None:
        """The round's final response, checked; ``None`` when the stream ended without one."""
        if self.response is None:
            return None
        return check_response(self.response, stream_request(self._upstream))

    def ended(self) -> list[Any]:
        """The error event of a stream that ended without a final response event."""
        return [_ended_early(self._caller)]

    def _settle(self) -> None:
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

    def finish(self, final: Response | None) -> list[Any]:
        """The caller's last events: the held items the plan kept, then the terminal one
        (none after a hidden round)."""
        self._settle()
        if final is None:
            return []
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


class _ResponsesRounds:
    """The Responses dialect of the stream driver: one `_Round` per upstream stream."""

    def __init__(self, plan: ResponsesPlan) -> None:
        self.plan = plan
        self._caller = _Caller(plan)

    def round(self, upstream: Any) -> _Round:
        return _Round(self._caller, upstream)

    def busy(self, reply: Any) -> bool:
        return busy(reply)


async def responses_stream_async(create: Callable[..., Awaitable[Any]], plan: ResponsesPlan) -> Any:
    """The caller's stream of an async ``responses.create(stream=True)`` call; the first
    round is sent here (an upstream error raises here, as from the SDK)."""
    events = functools.partial(iterate_async, chat=False)
    rounds = _ResponsesRounds(plan)
    return await AsyncRoundStream.start(rounds, lambda: create_round_async(create, plan), events)


def responses_stream_sync(create: Callable[..., Any], plan: ResponsesPlan) -> Any:
    """The caller's stream of a sync ``responses.create(stream=True)`` call; the first round
    is sent here (an upstream error raises here, as from the SDK)."""
    events = functools.partial(iterate_sync, chat=False)
    rounds = _ResponsesRounds(plan)
    return SyncRoundStream.start(rounds, lambda: create_round(create, plan), events)
