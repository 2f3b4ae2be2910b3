"""One batch of tool calls: invalid calls and ``end`` co-calls first, the rest via the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._calls import history_calls
from ._context import AskContext
from ._messages import INVALID_CALL, end_with_other_calls
from ._middleware import CallRequest, CallResult, Pipeline, forward_unanswered, merge_results
from ._results import CallTrace
from ._toolset import END

__all__ = ["run_batch", "trace_calls"]

_RAN = frozenset({"ran", "answered", "failed"})


async def run_batch(
    ctx: AskContext,
    pipeline: Pipeline,
    calls: Sequence[CallRequest],
    history: list[dict[str, Any]],
) -> list[CallResult]:
    """Answer every call of one response; append the assistant turn and results to ``history``.

    Every call gets exactly one result, in call order, under its own id. ``end`` together with
    any other call is refused (the ask goes on), with a text that says which of the other calls
    ran and which did not.
    """
    history.append(
        {"role": "assistant", "content": None, "tool_calls": history_calls(calls, ctx.permitted)}
    )
    co_calls = len(calls) > 1 and END in ctx.exposed
    ends = [i for i, c in enumerate(calls) if co_calls and c.name == END]
    # The end refusals name what the other calls did, so they are merged in last.
    others = [c for i, c in enumerate(calls) if i not in ends]
    invalid = {
        i: CallResult(c.id, c.name, INVALID_CALL, "invalid")
        for i, c in enumerate(others)
        if not c.name.strip()
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
    for result in results:
        history.append({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
    ctx.stats.record_results(results)
    return results


def trace_calls(
    calls: Sequence[CallRequest], results: Sequence[CallResult]
) -> tuple[CallTrace, ...]:
    """The trace entries of one batch."""
    return tuple(
        CallTrace(c.id, c.name, c.arguments_raw, r.outcome, r.reason, r.content, c.source)
        for c, r in zip(calls, results, strict=True)
    )
