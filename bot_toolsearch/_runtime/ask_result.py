"""What ``Bot.ask()`` returns: the reply, the outbound messages, a per-round trace and stats."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from bot_toolsearch._protocol.calls import RefusalReason
from bot_toolsearch._protocol.trace import CallTrace, RoundTrace

__all__ = ["AskResult", "AskStats", "CallTrace", "FinishReason", "OutboundMessage", "RoundTrace"]

FinishReason = Literal["end", "reply", "max_rounds"]
"""``end``: the model called ``end``; ``reply``: it answered with text and no tool calls;
``max_rounds``: the ``[model] max_rounds`` bound stopped the ask."""


@dataclass(frozen=True, slots=True)
class AskStats:
    """Counters of one ask."""

    searches: int = 0
    """``tool_search`` calls answered."""
    zero_result_searches: int = 0
    """Searches that matched nothing at all."""
    tools_loaded: tuple[str, ...] = ()
    """Tools loaded during the ask (by search or blind-call load), in load order."""
    loaded_never_called: tuple[str, ...] = ()
    """Of those, the ones never executed afterwards."""
    refused_calls: Mapping[RefusalReason, int] = field(default_factory=dict)
    """Refused calls by reason."""
    blind_call_loads: int = 0
    """Calls refused under ``tool_search_blind_call = "load"`` whose tool was loaded."""
    prompt_tokens: int = 0
    """Sum of the prompt tokens the API reported."""
    cached_tokens: int = 0
    """Sum of the cached prompt tokens the API reported."""
    agent_rounds: int = 0
    """Model requests made by sub-agents (not in ``AskResult.rounds``)."""
    agent_prompt_tokens: int = 0
    """Sum of the prompt tokens the API reported for sub-agent requests (not in
    ``prompt_tokens``, which counts the main AI's requests only)."""
    agent_cached_tokens: int = 0
    """Sum of the cached prompt tokens the API reported for sub-agent requests."""


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """One message sent out through the chat channel during the ask."""

    kind: Literal["message", "announcement"]
    """``message``: a ``send_message`` text; ``announcement``: an easter-egg announcement."""
    text: str
    """The text sent."""


@dataclass(frozen=True, slots=True)
class AskResult:
    """The outcome of one ``Bot.ask()``."""

    reply: str
    """The ``send_message`` texts, then the final text answer if any, joined by newlines."""
    rounds: int
    """Model requests made."""
    finish_reason: FinishReason
    """Why the ask stopped."""
    announcements: tuple[str, ...]
    """Easter-egg announcements, in the order sent."""
    outbox: tuple[OutboundMessage, ...]
    """Everything sent through the chat channel (messages and announcements), in order."""
    trace: tuple[RoundTrace, ...]
    """One entry per round."""
    stats: AskStats
    """Counters of the ask."""
    settings_generation: int = 0
    """``BotSettings.generation`` of the snapshot this ask used."""
