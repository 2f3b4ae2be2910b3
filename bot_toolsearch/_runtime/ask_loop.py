"""The rounds of one ask: prepare the request, call the model, answer the calls, repeat."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot_toolsearch._protocol.calls import (
    CallRequest,
    CallResult,
    from_native,
    from_text,
    history_calls,
    unique_ids,
)
from bot_toolsearch._protocol.loading import BridgedCalls, schema_note
from bot_toolsearch._protocol.messages import CORRECTION_HINT, INVALID_CALL, end_with_other_calls
from bot_toolsearch._services.telemetry import round_spans
from bot_toolsearch._transports.base import TransportState
from bot_toolsearch._transports.text_calls import recover_text_calls
from bot_toolsearch._transports.transport import Transport

from .ask_result import CallTrace, FinishReason, RoundTrace
from .context import AskContext
from .middleware import Pipeline, RoundRequest, forward_unanswered, merge_results
from .toolset import END

__all__ = [
    "LoopOutcome",
    "report_round",
    "run_batch",
    "run_rounds",
    "trace_calls",
]

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
        started = time.time_ns()
        reply = await transport.complete(
            request.messages,
            request.tools,
            names=names,
            state=state,
            declarations=request.declarations,
        )
        ctx.stats.prompt_tokens += reply.prompt_tokens
        ctx.stats.cached_tokens += reply.cached_tokens
        sent = tuple(str(t["function"]["name"]) for t in request.tools)
        usage = (reply.prompt_tokens, reply.cached_tokens)
        calls = from_native(reply.tool_calls, ctx.permitted)
        if not calls and reply.text and reply.text.strip():
            recovered = recover_text_calls(reply.text)
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
            _span(ctx, out.trace[-1], started)
            await report_round(ctx, out.trace[-1])
            if reply.text and reply.text.strip():
                out.final_text, out.finish = reply.text, "reply"
                return out
            # An empty answer is a failed turn, not a reply: ask once more, within the bound.
            history.append({"role": "user", "content": CORRECTION_HINT})
            continue
        bridged = ctx.unwrap(calls) if ctx.unwrap is not None else None
        before = len(ctx.stats.loaded)
        results = await run_batch(ctx, pipeline, calls, history, bridged=bridged)
        traced = bridged.calls if bridged is not None else calls
        loaded = tuple(dict.fromkeys(ctx.stats.loaded[before:]))
        out.trace.append(
            RoundTrace(index, sent, trace_calls(traced, results), None, *usage, loaded=loaded)
        )
        _span(ctx, out.trace[-1], started)
        await report_round(ctx, out.trace[-1])
        if ctx.ended:
            out.finish = "end"
            return out
    return out


def _span(ctx: AskContext, round_: RoundTrace, started: int) -> None:
    """The round as OpenTelemetry spans, when the ``otel`` extra is installed."""
    model = ctx.settings.model
    round_spans(round_, api=model.api, model=model.name, start_ns=started)


async def report_round(ctx: AskContext, round_: RoundTrace) -> None:
    """Hand a finished round to ``context["on_round"]`` (sync or async), if the caller set one.

    A hook that raises is logged, never fatal: the ask goes on.
    """
    hook = ctx.context.get("on_round")
    if hook is None:
        return
    try:
        done = hook(round_)
        if inspect.isawaitable(done):
            await done
    except Exception:
        logger.warning("the on_round hook failed for round %d", round_.index, exc_info=True)


_RAN = frozenset({"ran", "answered", "failed"})


async def run_batch(
    ctx: AskContext,
    pipeline: Pipeline,
    calls: Sequence[CallRequest],
    history: list[dict[str, Any]],
    *,
    bridged: BridgedCalls | None = None,
) -> list[CallResult]:
    """Answer every call of one response; append the assistant turn and results to ``history``.

    Every call gets exactly one result, in call order, under its own id. ``end`` together with
    any other call is refused (the ask goes on), with a text that says which of the other calls
    ran and which did not. With ``bridged`` (bridge mode), the history keeps ``calls`` as the
    model sent them while the calls run unwrapped; a malformed ``call_tool`` gets its prepared
    result, and an unwrapped call whose arguments are invalid gets its tool's schema appended.
    """
    history.append(
        {"role": "assistant", "content": None, "tool_calls": history_calls(calls, ctx.permitted)}
    )
    early: Mapping[int, CallResult] = {}
    if bridged is not None:
        calls, early = bridged.calls, bridged.answered
    co_calls = len(calls) > 1 and END in ctx.exposed
    ends = [i for i, c in enumerate(calls) if co_calls and c.name == END and i not in early]
    # The end refusals name what the other calls did, so they are merged in last.
    ending = set(ends)  # a set: a reply of many ``end`` calls must stay linear
    positions = [i for i in range(len(calls)) if i not in ending]
    others = [calls[i] for i in positions]
    invalid = {
        j: early.get(i) or CallResult(calls[i].id, calls[i].name, INVALID_CALL, "invalid")
        for j, i in enumerate(positions)
        if i in early or not calls[i].name.strip()
    }
    other_results = await forward_unanswered(ctx, others, invalid, pipeline.handle_calls)
    refusals: dict[int, CallResult] = {}
    if ends:
        ran = [r.name for r in other_results if r.outcome in _RAN]
        refused = [r.name or "(unnamed)" for r in other_results if r.outcome not in _RAN]
        refused.extend([END] * (len(ends) - 1))
        text = end_with_other_calls(ran, refused)
        for i in ends:
            refusals[i] = CallResult(calls[i].id, END, text, "refused", "end_with_other_calls")
    results = merge_results(len(calls), refusals, other_results)
    if bridged is not None:
        results = [
            _with_schema(ctx, r) if i in bridged.bridged else r for i, r in enumerate(results)
        ]
    for result in results:
        history.append({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
    ctx.stats.record_results(results)
    return results


def _with_schema(ctx: AskContext, result: CallResult) -> CallResult:
    """An invalid bridged call's result with its tool's schema (a permitted tool only)."""
    if result.outcome != "invalid" or result.name not in ctx.permitted:
        return result
    schema = ctx.toolset.catalog.schema(result.name)
    if schema is None:
        return result
    return replace(result, content=result.content + schema_note(result.name, schema))


def trace_calls(
    calls: Sequence[CallRequest], results: Sequence[CallResult]
) -> tuple[CallTrace, ...]:
    """The trace entries of one batch."""
    return tuple(
        CallTrace(c.id, c.name, c.arguments_raw, r.outcome, r.reason, r.content, c.source)
        for c, r in zip(calls, results, strict=True)
    )
