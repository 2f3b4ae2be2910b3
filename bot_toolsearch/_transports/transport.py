"""The two OpenAI API modes behind one interface, for the `Bot`.

The host and the middlewares speak canonical names and Chat Completions shaped messages.
`Transport.complete` encodes every tool name for the wire (tools and history, through
``wire``), hands the request to the API mode (``chat`` or ``responses``), and decodes the
names in the reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings

from .base import ModelReply, ToolDeclaration, TransportState
from .chat import send_chat
from .names import WireNames
from .responses import send_responses
from .wire import canonical_calls, wire_own_message, wire_tool

__all__ = ["Transport"]


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
        wire_tools = [dict(wire_tool(tool, names)) for tool in tools]
        wire_messages = [wire_own_message(message, names) for message in messages]
        if self.model.api == "responses":
            wire_declarations = [
                ToolDeclaration(tuple(wire_tool(t, names) for t in d.tools), d.after)
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
        calls = canonical_calls(raw.calls, names)
        return ModelReply(raw.text, calls, raw.prompt_tokens, raw.cached_tokens, raw.response_id)
