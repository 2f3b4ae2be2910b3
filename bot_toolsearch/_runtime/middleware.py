"""The middleware protocol and the pipeline that composes middlewares around ``ask()``.

A middleware sees every model request before it is sent (``prepare_request``) and every batch
of tool calls before they run (``handle_calls``), and may answer calls itself. Middlewares do not
know about each other: each gets the request (or the calls) and returns a new one (or one result
per call), passing the rest inwards. The pipeline is built once per settings generation, in
onion order: the first middleware listed is the outermost, so it sees requests first and wraps
every inner middleware's handling of calls (Starlette's ``build_middleware_stack``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._protocol.messages import shown_name
from bot_toolsearch._transports.base import ToolDeclaration

if TYPE_CHECKING:
    from .context import AskContext

__all__ = [
    "CallHandler",
    "LoggingMiddleware",
    "Middleware",
    "Pipeline",
    "RoundRequest",
    "forward_unanswered",
    "merge_results",
]

logger = logging.getLogger("bot_toolsearch")


@dataclass(frozen=True, slots=True)
class RoundRequest:
    """One model request as middlewares see it. Names are canonical; the transport encodes.

    Replace it with ``dataclasses.replace``; never mutate the lists in place, since the host
    may share them between rounds.
    """

    messages: Sequence[Mapping[str, Any]]
    """Chat Completions style messages (``system``, ``user``, ``assistant``, ``tool``)."""
    tools: Sequence[Mapping[str, Any]]
    """Chat Completions function tool schemas, in the order they are sent."""
    exposed: frozenset[str]
    """Canonical names the model may call in this round; other calls are refused."""
    declarations: Sequence[ToolDeclaration] = ()
    """Responses ``additional_tools`` declarations of tools loaded in this ask (canonical),
    placed by the transport after their calls' results; never messages."""


CallHandler = Callable[["AskContext", Sequence[CallRequest]], Awaitable[list[CallResult]]]
"""Handles a batch of calls and returns exactly one result per call, in call order."""


@runtime_checkable
class Middleware(Protocol):
    """What the pipeline calls. Every method must be present; return the input unchanged (or
    ``await call_next(ctx, calls)``) for hooks you do not need.

    Per-ask state belongs in ``ctx.state`` (keyed by your middleware), never on the middleware
    object: one object serves concurrent asks.
    """

    name: str
    """Short name, used in logs."""

    async def start_ask(self, ctx: AskContext) -> None:
        """Called once per ask, after tool filtering and prefetch, before the first round."""

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Return the request to send (possibly changed) for this round."""

    async def handle_calls(
        self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
    ) -> list[CallResult]:
        """Return exactly one result per call, in order; pass the calls you do not answer on."""

    async def finish_ask(self, ctx: AskContext) -> None:
        """Called once when the ask ends (also on errors); record stats here."""


async def forward_unanswered(
    ctx: AskContext,
    calls: Sequence[CallRequest],
    answered: Mapping[int, CallResult],
    call_next: CallHandler,
) -> list[CallResult]:
    """Send the calls not in ``answered`` (by position in ``calls``) inwards, then merge.

    Keeps the contract every middleware owes its caller: one result per call, in call order.
    """
    rest = [call for i, call in enumerate(calls) if i not in answered]
    inner = await call_next(ctx, rest) if rest else []
    return merge_results(len(calls), answered, inner)


def merge_results(
    count: int, answered: Mapping[int, CallResult], inner: Sequence[CallResult]
) -> list[CallResult]:
    """One result per position ``0..count-1``: ``answered[i]`` if given, else the next of ``inner``.

    Raises:
        RuntimeError: ``inner`` does not hold exactly one result per position not answered.
    """
    expected = sum(1 for i in range(count) if i not in answered)
    if len(inner) != expected:
        raise RuntimeError(f"inner handler returned {len(inner)} results for {expected} calls")
    inner_iter = iter(inner)
    return [answered[i] if i in answered else next(inner_iter) for i in range(count)]


class Pipeline:
    """Middlewares composed around the host's own call handler, built once.

    Args:
        middlewares: outermost first.
        innermost: the host's handler that runs tools.
    """

    def __init__(self, middlewares: Sequence[Middleware], innermost: CallHandler) -> None:
        self.middlewares: tuple[Middleware, ...] = tuple(middlewares)
        handler = innermost
        for middleware in reversed(self.middlewares):
            handler = _bind(middleware, handler)
        self._handle = handler

    async def start_ask(self, ctx: AskContext) -> None:
        """Run every middleware's ``start_ask``, outermost first."""
        for middleware in self.middlewares:
            await middleware.start_ask(ctx)

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Pass the request through every middleware, outermost first."""
        for middleware in self.middlewares:
            request = await middleware.prepare_request(ctx, request)
        return request

    async def handle_calls(self, ctx: AskContext, calls: Sequence[CallRequest]) -> list[CallResult]:
        """Run the batch through the onion; checks the one-result-per-call contract."""
        results = await self._handle(ctx, calls)
        if [r.call_id for r in results] != [c.id for c in calls]:
            raise RuntimeError("a middleware broke the one-result-per-call-in-order contract")
        return results

    async def finish_ask(self, ctx: AskContext) -> None:
        """Run every middleware's ``finish_ask``, innermost first (unwinding the onion)."""
        for middleware in reversed(self.middlewares):
            await middleware.finish_ask(ctx)


def _bind(middleware: Middleware, call_next: CallHandler) -> CallHandler:
    async def handler(ctx: AskContext, calls: Sequence[CallRequest]) -> list[CallResult]:
        return await middleware.handle_calls(ctx, calls, call_next)

    return handler


@dataclass(slots=True)
class LoggingMiddleware:
    """Logs every request (tool names) and every call outcome; answers nothing.

    Args:
        logger: where to log; defaults to the ``bot_toolsearch`` logger.
        level: the log level of each line.
    """

    logger: logging.Logger = field(default=logger)
    level: int = logging.INFO
    name: str = "logging"
    records: deque[str] = field(default_factory=lambda: deque(maxlen=1000))
    """The latest 1,000 lines logged, kept so tests and demos can show what passed by."""

    async def start_ask(self, ctx: AskContext) -> None:
        """Log the start of the ask."""
        self._log("ask generation=%d", ctx.settings.generation)

    async def prepare_request(self, ctx: AskContext, request: RoundRequest) -> RoundRequest:
        """Log the tool names of the request; return it unchanged."""
        names = [str(t.get("function", {}).get("name")) for t in request.tools]
        self._log("round %d tools=%s", ctx.round_index, ",".join(names))
        return request

    async def handle_calls(
        self, ctx: AskContext, calls: Sequence[CallRequest], call_next: CallHandler
    ) -> list[CallResult]:
        """Log each call and its outcome."""
        # Model-chosen names are shown escaped and cut: a hostile name cannot flood the log.
        names = ",".join(shown_name(c.name) for c in calls)
        self._log("round %d calls=%s", ctx.round_index, names)
        results = await call_next(ctx, calls)
        for result in results:
            name = shown_name(result.name)
            self._log("call %s %s %s", name, result.outcome, result.reason or "")
        return results

    async def finish_ask(self, ctx: AskContext) -> None:
        """Log the end of the ask."""
        self._log("ask done rounds=%d", ctx.round_index)

    def _log(self, fmt: str, *args: object) -> None:
        line = fmt % args
        self.records.append(line.rstrip())
        self.logger.log(self.level, "[%s] %s", self.name, line)
