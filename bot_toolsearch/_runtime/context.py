"""The state of one ``ask()`` that the host and every middleware share."""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._protocol.calls import CallRequest, CallResult, RefusalReason
from bot_toolsearch._protocol.loading import BridgedCalls
from bot_toolsearch._tools.tool import HandlerThreads
from bot_toolsearch._transports.transport import Transport

from .ask_result import AskStats, OutboundMessage
from .toolset import ToolSet

__all__ = ["AskContext", "StatsRecorder"]

logger = logging.getLogger("bot_toolsearch")


@dataclass(slots=True)
class StatsRecorder:
    """Mutable counters of one ask; frozen into `AskStats` at the end."""

    searches: int = 0
    zero_result_searches: int = 0
    loaded: list[str] = field(default_factory=list)
    executed: set[str] = field(default_factory=set)
    refused: Counter[RefusalReason] = field(default_factory=Counter)
    blind_call_loads: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    agent_rounds: int = 0
    agent_prompt_tokens: int = 0
    agent_cached_tokens: int = 0

    def record_results(self, results: list[CallResult]) -> None:
        """Count refusals and remember which tools really ran."""
        for result in results:
            if result.outcome == "refused" and result.reason is not None:
                self.refused[result.reason] += 1
            elif result.outcome in ("ran", "failed"):
                self.executed.add(result.name)

    def freeze(self) -> AskStats:
        """The counters as an immutable `AskStats`."""
        loaded = tuple(dict.fromkeys(self.loaded))
        return AskStats(
            searches=self.searches,
            zero_result_searches=self.zero_result_searches,
            tools_loaded=loaded,
            loaded_never_called=tuple(n for n in loaded if n not in self.executed),
            refused_calls=dict(self.refused),
            blind_call_loads=self.blind_call_loads,
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            agent_rounds=self.agent_rounds,
            agent_prompt_tokens=self.agent_prompt_tokens,
            agent_cached_tokens=self.agent_cached_tokens,
        )


@dataclass(slots=True, eq=False)
class AskContext:
    """Everything one ask knows; middlewares read it and keep their own state in ``state``."""

    settings: BotSettings
    """The one settings snapshot of this ask."""
    context: Mapping[str, Any]
    """The caller's context (``Bot.ask(..., context=...)``), e.g. ``easter_egg_silent``."""
    toolset: ToolSet
    """Every tool of the bot and the prebuilt catalog."""
    permitted: frozenset[str]
    """Canonical names this ask may use (after the hook, allow/deny and prefetch hiding)."""
    always_loaded_extra: tuple[str, ...] = ()
    """Names to expose from round 1 on top of ``tool_search_always_loaded`` (from prefetch)."""
    conversation_tools: tuple[str, ...] = ()
    """Permitted tools this ask's conversation called before, in first-call order, to load
    from round 1 (``[skills] tool_search_keep_loaded = "conversation"``)."""
    system_prompt_count: int = 0
    """How many leading messages are the bot's own system prompt (the directory goes after)."""
    round_index: int = 0
    """The current 1-based round (0 before the first)."""
    exposed: frozenset[str] = frozenset()
    """Canonical names callable in the current round (the prepared request's ``exposed``)."""
    unwrap: Callable[[Sequence[CallRequest]], BridgedCalls] | None = field(default=None, init=False)
    """Set by the tool-search middleware under ``bridge`` loading: turns each ``call_tool``
    call of a response into its target's call before the batch runs (the history keeps the
    calls as the model sent them)."""
    transport: Transport | None = None
    """Sends model requests in the snapshot's API mode (sub-agents use it too)."""
    threads: HandlerThreads | None = None
    """The bot's executor for sync handlers (one per bot; see `HandlerThreads`)."""
    state: dict[object, Any] = field(default_factory=dict)
    """Per-ask state of middlewares, keyed by whatever each middleware chooses."""
    stats: StatsRecorder = field(default_factory=StatsRecorder)
    """Counters of this ask."""
    outbox: list[OutboundMessage] = field(default_factory=list)
    """Everything sent out through the chat channel, in order."""
    ended: bool = False
    """``end`` ran: the ask stops after this round."""

    @property
    def sent_messages(self) -> list[str]:
        """The ``send_message`` texts so far."""
        return [m.text for m in self.outbox if m.kind == "message"]

    @property
    def announcements(self) -> list[str]:
        """The easter-egg announcements so far."""
        return [m.text for m in self.outbox if m.kind == "announcement"]

    async def send(self, kind: Literal["message", "announcement"], text: str) -> None:
        """Send ``text`` out: record it, and pass it to ``context["sender"]`` if one is set.

        A sender that raises is logged, never fatal: the text is still in the outbox.
        """
        text = well_formed(text)  # encodable for any channel, whatever the model wrote
        self.outbox.append(OutboundMessage(kind, text))
        sender = self.context.get("sender")
        if sender is None:
            return
        try:
            sent = sender(text)
            if inspect.isawaitable(sent):
                await sent
        except Exception:
            logger.warning("sender failed for a %s", kind, exc_info=True)
