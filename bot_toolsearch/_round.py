"""One batch of tool calls: invalid calls and ``end`` co-calls first, the rest via the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._calls import history_calls
from ._context import AskContext
from ._messages import INVALID_CALL, end_with_other_calls
from ._middleware import CallRequest, CallResult, Pipeline
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
    answered: dict[int, CallResult] = {}
    ends: list[int] = []
    for i, call in enumerate(calls):
        if not call.name.strip():
            answered[i] = CallResult(call.id, call.name, INVALID_CALL, "invalid")
        elif call.name == END and len(calls) > 1 and END in ctx.exposed:
            ends.append(i)
    rest = [c for i, c in enumerate(calls) if i not in answered and i not in ends]
    inner = await pipeline.handle_calls(ctx, rest) if rest else []
    inner_iter = iter(inner)
    for i in range(len(calls)):
        if i not in answered and i not in ends:
            answered[i] = next(inner_iter)
    if ends:
        others = [answered[i] for i in range(len(calls)) if i not in ends]
        ran = [r.name for r in others if r.outcome in _RAN]
        refused = [r.name or "(unnamed)" for r in others if r.outcome not in _RAN]
        refused.extend([END] * (len(ends) - 1))
        text = end_with_other_calls(ran, refused)
        for i in ends:
            answered[i] = CallResult(calls[i].id, END, text, "refused", "end_with_other_calls")
    results = [answered[i] for i in range(len(calls))]
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
