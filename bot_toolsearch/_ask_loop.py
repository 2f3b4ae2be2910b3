"""The rounds of one ask: prepare the request, call the model, answer the calls, repeat."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._calls import from_native, from_text, unique_ids
from ._context import AskContext
from ._messages import CORRECTION_HINT
from ._middleware import Pipeline, RoundRequest
from ._results import FinishReason, RoundTrace
from ._round import run_batch, trace_calls
from ._text_calls import TextToolCall, TextToolCallError, parse_text_tool_calls
from ._transport import Transport, TransportState

__all__ = ["LoopOutcome", "run_rounds"]

logger = logging.getLogger("bot_toolsearch")


@dataclass(slots=True)
class LoopOutcome:
    """What the rounds produced."""

    trace: list[RoundTrace] = field(default_factory=list)
    final_text: str | None = None
    finish: FinishReason = "max_rounds"


async def run_rounds(
    ctx: AskContext,
    pipeline: Pipeline,
    transport: Transport,
    history: list[dict[str, Any]],
    base_tools: Sequence[Mapping[str, Any]],
) -> LoopOutcome:
    """Run up to ``[model] max_rounds`` rounds; ``history`` grows with every turn."""
    settings = ctx.settings
    # Over the permitted tools only: a hidden tool must not change a visible one's spelling.
    names = ctx.toolset.wire_names(settings.tools.dot_delimiter, ctx.permitted)
    state = TransportState(stateless=settings.model.responses_force_stateless_replay)
    out = LoopOutcome()
    for index in range(1, settings.model.max_rounds + 1):
        ctx.round_index = index
        request = RoundRequest(tuple(history), base_tools, ctx.permitted)
        request = await pipeline.prepare_request(ctx, request)
        ctx.exposed = request.exposed
        reply = await transport.complete(request.messages, request.tools, names=names, state=state)
        ctx.stats.prompt_tokens += reply.prompt_tokens
        ctx.stats.cached_tokens += reply.cached_tokens
        sent = tuple(str(t["function"]["name"]) for t in request.tools)
        usage = (reply.prompt_tokens, reply.cached_tokens)
        calls = from_native(reply.tool_calls, ctx.permitted)
        if not calls and reply.text and reply.text.strip():
            recovered = _recover(reply.text)
            if recovered:
                calls = from_text(recovered, names, ctx.permitted)
                state.force_stateless()  # the server never saw these call ids
        calls, renamed = unique_ids(calls)
        if renamed:
            logger.warning("the model repeated a tool-call id in one response; renamed the repeats")
            state.force_stateless()  # the server holds the repeated ids, not ours
        if not calls:
            history.append({"role": "assistant", "content": reply.text or ""})
            out.trace.append(RoundTrace(index, sent, (), reply.text, *usage))
            if reply.text and reply.text.strip():
                out.final_text, out.finish = reply.text, "reply"
                return out
            # An empty answer is a failed turn, not a reply: ask once more, within the bound.
            history.append({"role": "user", "content": CORRECTION_HINT})
            continue
        results = await run_batch(ctx, pipeline, calls, history)
        out.trace.append(RoundTrace(index, sent, trace_calls(calls, results), None, *usage))
        if ctx.ended:
            out.finish = "end"
            return out
    return out


def _recover(text: str) -> list[TextToolCall]:
    try:
        return parse_text_tool_calls(text)
    except TextToolCallError as exc:
        logger.info("text looks like a malformed tool call; treating it as a reply: %s", exc)
        return []
