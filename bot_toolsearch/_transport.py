"""The two OpenAI API modes behind one interface; the one place wire names are applied.

The host and the middlewares speak canonical names and Chat Completions shaped messages.
`Transport.complete` encodes every tool name for the wire (tools and history), hands the
request to the API mode (``_chat`` or ``_responses``), and decodes the names in the reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from ._names import WireNames, encode_foreign_name
from ._settings import ModelSettings

__all__ = [
    "ModelReply",
    "ModelToolCall",
    "RawReply",
    "Transport",
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


class _ApiMode(Protocol):
    async def __call__(
        self,
        client: openai.AsyncOpenAI,
        model: ModelSettings,
        messages: WireMessages,
        tools: list[dict[str, Any]],
        state: TransportState,
    ) -> RawReply: ...


@dataclass(frozen=True, slots=True)
class Transport:
    """Sends one round to the model in the configured API mode.

    Args:
        client: the ``openai.AsyncOpenAI`` client.
        model: the ``[model]`` settings of the ask's snapshot.
    """

    client: openai.AsyncOpenAI
    model: ModelSettings

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        names: WireNames,
        state: TransportState,
    ) -> ModelReply:
        """Send ``messages`` and ``tools`` (canonical) and return the decoded reply.

        Raises:
            openai.APIError: the request failed (after the SDK's own retries).
        """
        wire_tools = [_encode_tool(tool, names) for tool in tools]
        wire_messages = [_encode_message(message, names) for message in messages]
        send = _mode(self.model.api)
        raw = await send(self.client, self.model, wire_messages, wire_tools, state)
        calls = tuple(
            ModelToolCall(call_id, names.to_canonical(wire) or wire, wire, arguments)
            for call_id, wire, arguments in raw.calls
        )
        return ModelReply(raw.text, calls, raw.prompt_tokens, raw.cached_tokens, raw.response_id)


def _mode(api: str) -> _ApiMode:
    if api == "responses":
        from ._responses import send_responses

        return send_responses
    from ._chat import send_chat

    return send_chat


def _encode_tool(tool: Mapping[str, Any], names: WireNames) -> dict[str, Any]:
    function = dict(tool["function"])
    function["name"] = names.to_wire(str(function["name"]))
    return {"type": "function", "function": function}


def _encode_message(message: Mapping[str, Any], names: WireNames) -> dict[str, Any]:
    out = dict(message)
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": _history_name(call, names),
                    "arguments": call["function"]["arguments"],
                },
            }
            for call in calls
        ]
    return out


def _history_name(call: Mapping[str, Any], names: WireNames) -> str:
    name = str(call["function"]["name"])
    # A call to no permitted tool keeps the model's spelling (see ``history_calls``).
    return encode_foreign_name(name) if call.get("foreign") else names.to_wire(name)
