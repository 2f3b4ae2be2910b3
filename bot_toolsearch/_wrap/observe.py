"""What a wrapped ``create`` call did, reported round by round: the ``on_round`` hook of
`wrap_openai`, one structured ``logging`` record per round, and OpenTelemetry spans.

Every upstream round of a call becomes one `RoundTrace` (the value the `Bot` hands its own
``on_round``): the tools sent, the calls with their outcomes (the wrapper's ``answered`` and
``refused`` ones, the caller's ``returned``), the queries, the tools loaded, the tokens, and
``hidden`` for a round the wrapper answered entirely and asked again. The record goes to the
logger ``bot_toolsearch.rounds`` at INFO with the same facts as flat ``extra`` fields
(``toolsearch_*``), for a JSON formatter; nothing of a request's keys or headers is in it.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot_toolsearch._protocol.calls import CallRequest
from bot_toolsearch._protocol.engine import Answer
from bot_toolsearch._protocol.trace import CallTrace, RoundTrace
from bot_toolsearch._services.telemetry import round_spans

__all__ = ["RoundHook", "Rounds"]

logger = logging.getLogger("bot_toolsearch")
rounds_log = logging.getLogger("bot_toolsearch.rounds")

ASYNC_HOOK = (
    "wrap_openai(on_round=...) got a coroutine: the hook is called synchronously, so an "
    "async function never runs; pass a plain function (it may schedule work of its own)"
)
"""The warning for an ``async def`` hook."""

RoundHook = Callable[[RoundTrace], object]
"""``wrap_openai(on_round=...)``: called with each round's `RoundTrace` as soon as the wrapper
has read it (synchronously, in the thread that read the reply; its return value is ignored)."""


class Rounds:
    """The reporter of one ``create`` call's rounds.

    Args:
        hook: the client's ``on_round``, if any.
        api: ``"chat"`` or ``"responses"``.
        model: the request's ``model``.
    """

    __slots__ = ("_api", "_hook", "_model", "_started")

    def __init__(self, hook: RoundHook | None, api: str, model: object) -> None:
        self._hook = hook
        self._api = api
        self._model = model if isinstance(model, str) else ""
        self._started = time.time_ns()

    def sending(self) -> None:
        """A round's request is about to go upstream (its span starts now)."""
        self._started = time.time_ns()

    def report(
        self,
        index: int,
        sent: Sequence[str],
        answer: Answer | None,
        usage: tuple[int, int, int],
        *,
        hidden: bool,
        text: str | None = None,
    ) -> RoundTrace:
        """Report one round read from upstream; its `RoundTrace`."""
        calls = () if answer is None else _calls(answer)
        loaded = () if answer is None else tuple(dict.fromkeys(answer.loaded))
        prompt, cached, output = usage
        # Positional (the fields' order): cheaper than keywords, once per round.
        trace = RoundTrace(
            index,
            tuple(sent),
            calls,
            text if not calls else None,
            prompt,
            cached,
            loaded,
            output,
            hidden,
        )
        _log(trace, self._api, self._model)
        round_spans(trace, api=self._api, model=self._model, start_ns=self._started)
        if self._hook is not None:
            try:
                done = self._hook(trace)
            except Exception:
                logger.warning("the on_round hook failed for round %d", index, exc_info=True)
            else:
                # A coroutine is never awaited here: say so, leak no warning.
                if done is not None and inspect.iscoroutine(done):
                    done.close()
                    logger.warning(ASYNC_HOOK)
        return trace


def _calls(answer: Answer) -> tuple[CallTrace, ...]:
    out: list[CallTrace] = []
    for i, call in enumerate(answer.calls):
        result = answer.results.get(i)
        if result is None:
            out.append(_returned(call))
        else:
            out.append(
                CallTrace(
                    call.id,
                    call.name,
                    call.arguments_raw,
                    result.outcome,
                    result.reason,
                    result.content,
                    call.source,
                )
            )
    return tuple(out)


def _returned(call: CallRequest) -> CallTrace:
    return CallTrace(call.id, call.name, call.arguments_raw, "returned", None, "", call.source)


def _log(trace: RoundTrace, api: str, model: str) -> None:
    if not rounds_log.isEnabledFor(logging.INFO):
        return
    refused = [f"{c.name} ({c.reason or c.outcome})" for c in trace.refusals]
    extra: dict[str, Any] = {
        "toolsearch_api": api,
        "toolsearch_model": model,
        "toolsearch_round": trace.index,
        "toolsearch_hidden": trace.hidden,
        "toolsearch_sent": len(trace.tool_names),
        "toolsearch_searches": list(trace.searches),
        "toolsearch_loaded": list(trace.loaded),
        "toolsearch_refusals": refused,
        "toolsearch_returned": [c.name for c in trace.calls if c.outcome == "returned"],
        "toolsearch_input_tokens": trace.prompt_tokens,
        "toolsearch_cached_tokens": trace.cached_tokens,
        "toolsearch_output_tokens": trace.output_tokens,
    }
    rounds_log.info(
        "round %d%s: %d tools sent; searches %s; loaded %s; refused %s; %d input tokens",
        trace.index,
        " (hidden)" if trace.hidden else "",
        len(trace.tool_names),
        list(trace.searches),
        list(trace.loaded),
        refused,
        trace.prompt_tokens,
        extra=extra,
    )
