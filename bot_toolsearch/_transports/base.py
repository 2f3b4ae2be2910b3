"""The seam between the transport and its API modes: the values both sides share.

A leaf, as ``httpx/_transports/base.py`` is: the modes (``chat``, ``responses``) import it, the
dispatcher (``transport``) imports the modes, and nothing here imports either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from bot_toolsearch._config.settings import ModelSettings

__all__ = [
    "ApiMode",
    "ModelReply",
    "ModelToolCall",
    "RawReply",
    "TransportState",
    "WireMessages",
]


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One native tool call of a reply."""

    id: str
    """The call id."""
    name: str
    """Canonical name, or the wire name as sent when it decodes to none."""
    wire_name: str
    """The name exactly as the model sent it."""
    arguments: str
    """The raw JSON arguments string."""


@dataclass(frozen=True, slots=True)
class RawReply:
    """A reply as an API mode reads it, before names are decoded."""

    text: str | None
    calls: tuple[tuple[str, str, str], ...]
    """``(id, wire_name, arguments)`` per call."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    response_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A model reply with canonical names."""

    text: str | None
    """The text content, if any."""
    tool_calls: tuple[ModelToolCall, ...]
    """Native tool calls, in order."""
    prompt_tokens: int = 0
    """``usage`` prompt (input) tokens."""
    cached_tokens: int = 0
    """``usage`` cached prompt tokens."""
    response_id: str | None = None
    """Responses: the response id."""


@dataclass(slots=True)
class TransportState:
    """Per-ask transport state (the Responses chain); a fresh one per ask."""

    previous_response_id: str | None = None
    """The id the next Responses request continues from."""
    covered: int = 0
    """How many conversation (non-system) messages the server already holds."""
    stateless: bool = False
    """Resend the full history every round (fallback, forced, or after text-recovered calls)."""
    stateless_replays: int = field(default=0)
    """How many times a stateful request was resent statelessly after the HTTP 400."""

    def force_stateless(self) -> None:
        """Stay stateless for the rest of the ask (the server cannot know our call ids)."""
        self.stateless = True
        self.previous_response_id = None


WireMessages = list[dict[str, Any]]


class ApiMode(Protocol):
    """One OpenAI API mode: send one round's wire messages and tools, read the raw reply."""

    async def __call__(
        self,
        client: openai.AsyncOpenAI,
        model: ModelSettings,
        messages: WireMessages,
        tools: list[dict[str, Any]],
        state: TransportState,
    ) -> RawReply: ...
