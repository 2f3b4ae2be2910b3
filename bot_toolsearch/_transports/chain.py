"""One round of a Responses chain, sans-IO: chained or stateless, and the lost-call resend.

The `Bot` (`responses.py`) and the wrapper (`_wrap/responses.py`) chain the same way: a round
continues from the last response with ``previous_response_id`` and only the new items, unless
the chain is stateless (forced, ``store=False``, no response id, or calls recovered from text),
when the whole input is sent. When the server has lost the calls of the previous response
(HTTP 400 "No tool call found for function call output with call_id ..."), the round is resent
once with the whole input, and the chain stays stateless.

`chain_round` decides; it does no IO. It yields the keyword arguments of each
``responses.create`` to send, is sent the reply or thrown the error, and returns the reply.
`drive` and `drive_async` are its thin shells, the way httpx drives ``Auth.auth_flow``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import openai

__all__ = [
    "ChainState",
    "Round",
    "chain_round",
    "continue_from",
    "drive",
    "drive_async",
    "is_missing_call_output_error",
]

logger = logging.getLogger("bot_toolsearch")

_MISSING_CALL = "no tool call found for function call output with call_id"

R = TypeVar("R")

Round = Generator[dict[str, Any], R, R]
"""A round: yields each request's keyword arguments, is sent the reply, returns it."""


class ChainState(Protocol):
    """Where a chain continues from (`TransportState` for the `Bot`, the plan's for the wrapper)."""

    previous_response_id: str | None
    stateless: bool
    stateless_replays: int


def chain_round(
    state: ChainState,
    request: Mapping[str, Any],
    *,
    new: Callable[[], Sequence[Mapping[str, Any]]],
    full: Callable[[], Any],
    scope: str = "ask",
) -> Round[R]:
    """One ``responses.create`` round: chained when ``state`` has a response to continue from
    and is not stateless, else stateless; a chained round whose calls the server lost is
    resent once statelessly and ``state`` stays stateless.

    Args:
        state: the chain; updated on a resend (``stateless``, ``stateless_replays``).
        request: the keyword arguments of every request but ``input`` (and, when chained,
            ``previous_response_id``, which replaces any given here).
        new: the items the server has not seen since ``state.previous_response_id``.
        full: the whole input, sent when stateless.
        scope: what stays stateless after a resend, for the log ("ask", "call").

    Raises:
        openai.APIStatusError: thrown in and not the recoverable 400 (re-raised as is).
    """
    previous = state.previous_response_id
    if previous is None or state.stateless:
        return (yield {**request, "input": full()})
    items = list(new())
    try:
        return (yield {**request, "previous_response_id": previous, "input": items})
    except openai.BadRequestError as exc:
        has_output = any(item.get("type") == "function_call_output" for item in items)
        if not (has_output and is_missing_call_output_error(exc)):
            raise
        logger.warning(
            "responses: the server lost the calls of response %s; "
            "resending statelessly for the rest of this %s",
            previous,
            scope,
        )
        state.stateless = True
        state.stateless_replays += 1
        return (yield {**request, "input": full()})


def continue_from(state: ChainState, response_id: str | None) -> None:
    """Continue the chain from ``response_id``; with none, stay stateless from now on."""
    state.previous_response_id = response_id
    if response_id is None:
        state.stateless = True  # nothing to continue from: resend the whole input


def is_missing_call_output_error(exc: openai.BadRequestError) -> bool:
    """Whether a 400 says the server does not know a ``function_call_output``'s call id."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    message = str(body.get("message") or exc.message)
    param = body.get("param")
    return _MISSING_CALL in message.casefold() and param in (None, "input")


def drive(flow: Round[R], send: Callable[..., R]) -> R:
    """Run ``flow`` with ``send`` (sync): each request sent, its reply or error fed back."""
    request = next(flow)
    while True:
        try:
            reply = send(**request)
        except openai.APIStatusError as exc:
            request = flow.throw(exc)
            continue
        try:
            request = flow.send(reply)
        except StopIteration as stop:
            result: R = stop.value
            return result


async def drive_async(flow: Round[R], send: Callable[..., Awaitable[R]]) -> R:
    """`drive` for the async hosts."""
    request = next(flow)
    while True:
        try:
            reply = await send(**request)
        except openai.APIStatusError as exc:
            request = flow.throw(exc)
            continue
        try:
            request = flow.send(reply)
        except StopIteration as stop:
            result: R = stop.value
            return result
