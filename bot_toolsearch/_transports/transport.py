"""The two OpenAI API modes behind one interface; the one place wire names are applied.

The host and the middlewares speak canonical names and Chat Completions shaped messages.
`Transport.complete` encodes every tool name for the wire (tools and history), hands the
request to the API mode (``chat`` or ``responses``), and decodes the names in the reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings
from bot_toolsearch._core.unicode import well_formed

from .base import ModelReply, ModelToolCall, ToolDeclaration, TransportState
from .chat import send_chat
from .names import WireNames, encode_foreign_name
from .responses import send_responses

__all__ = ["Transport", "encode_message"]


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
        declarations: Sequence[ToolDeclaration] = (),
    ) -> ModelReply:
        """Send ``messages``, ``tools`` and ``declarations`` (canonical) and return the decoded
        reply. Declarations travel on Responses only (Chat Completions has none).

        Raises:
            openai.APIError: the request failed (after the SDK's own retries); a reply that
                came back unusable raises the subclass `ModelReplyError`.
        """
        wire_tools = [_encode_tool(tool, names) for tool in tools]
        wire_messages = [encode_message(message, names) for message in messages]
        if self.model.api == "responses":
            wire_declarations = [
                ToolDeclaration(tuple(_encode_tool(t, names) for t in d.tools), d.after)
                for d in declarations
            ]
            raw = await send_responses(
                self.client,
                self.model,
                wire_messages,
                wire_tools,
                state,
                declarations=wire_declarations,
            )
        else:
            raw = await send_chat(self.client, self.model, wire_messages, wire_tools, state)
        calls = tuple(
            ModelToolCall(call_id, names.to_canonical(wire) or wire, wire, arguments)
            for call_id, wire, arguments in raw.calls
        )
        return ModelReply(raw.text, calls, raw.prompt_tokens, raw.cached_tokens, raw.response_id)


def _encode_tool(tool: Mapping[str, Any], names: WireNames) -> dict[str, Any]:
    function = dict(tool["function"])
    function["name"] = names.to_wire(str(function["name"]))
    return {"type": "function", "function": function}


def encode_message(message: Mapping[str, Any], names: WireNames) -> dict[str, Any]:
    """A chat message with the names of its ``tool_calls`` in wire spelling (a new dict).

    A call marked ``foreign`` (no permitted tool) keeps the model's spelling, made wire-legal.
    """
    out = dict(message)
    content = out.get("content")
    if isinstance(content, str):
        # The last guard before the SDK encodes the body: no lone surrogate leaves.
        out["content"] = well_formed(content)
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": _history_name(call, names),
                    "arguments": well_formed(str(call["function"]["arguments"])),
                },
            }
            for call in calls
        ]
    return out


def _history_name(call: Mapping[str, Any], names: WireNames) -> str:
    name = str(call["function"]["name"])
    # A call to no permitted tool keeps the model's spelling (see ``history_calls``).
    return encode_foreign_name(name) if call.get("foreign") else names.to_wire(name)
