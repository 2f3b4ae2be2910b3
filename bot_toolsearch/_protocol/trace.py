"""What one model round did, as every door reports it: `RoundTrace` and `CallTrace`.

The `Bot` hands each round to ``context["on_round"]`` and keeps them in ``AskResult.trace``;
the wrapper hands each upstream round of a ``create`` call to ``wrap_openai(on_round=...)``
(its hidden rounds marked ``hidden``); the proxy sums them into its response headers and
``/metrics``. One value, so a watcher reads every door the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from bot_toolsearch._core.catalog import TOOL_SEARCH_NAME

from .calls import CallOutcome, RefusalReason

__all__ = ["CallTrace", "RoundTrace"]


@dataclass(frozen=True, slots=True)
class CallTrace:
    """One tool call of one round and what became of it."""

    id: str
    """The call id."""
    name: str
    """Canonical name (or the raw name when it decodes to none)."""
    arguments: str
    """The arguments exactly as the model sent them."""
    outcome: CallOutcome
    """What happened to the call."""
    reason: RefusalReason | None
    """Why it was refused, if it was."""
    result: str
    """The tool result the model read (``""`` for a call the wrapper returned to its caller)."""
    source: Literal["native", "text"] = "native"
    """``text`` when recovered from a plain-text envelope."""


@dataclass(frozen=True, slots=True)
class RoundTrace:
    """One model round."""

    index: int
    """1-based round number."""
    tool_names: tuple[str, ...]
    """Canonical names of the tools sent, in order."""
    calls: tuple[CallTrace, ...]
    """The calls the model made, in response order."""
    text: str | None
    """The model's text, when it answered without tool calls."""
    prompt_tokens: int = 0
    """Prompt (input) tokens the API reported for this round."""
    cached_tokens: int = 0
    """Of those, the tokens served from the provider's prompt cache."""
    loaded: tuple[str, ...] = ()
    """Tools this round's calls loaded (searches and blind calls), in load order."""
    output_tokens: int = 0
    """Completion (output) tokens the API reported for this round."""
    hidden: bool = False
    """The wrapper answered every call of this round itself and asked the model again (a
    hidden round: its caller never sees it). Always ``False`` in the `Bot`."""

    @property
    def searches(self) -> tuple[str, ...]:
        """The queries of this round's ``tool_search`` calls, in call order (the raw arguments
        when a call has no string ``query``)."""
        return tuple(_query(call.arguments) for call in self.calls if call.name == TOOL_SEARCH_NAME)

    @property
    def refusals(self) -> tuple[CallTrace, ...]:
        """This round's calls that were refused or unusable (``refused``, ``invalid``)."""
        return tuple(call for call in self.calls if call.outcome in ("refused", "invalid"))


def _query(arguments: str) -> str:
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    query = parsed.get("query") if isinstance(parsed, dict) else None
    return query if isinstance(query, str) else arguments
