"""Responses mode: ``previous_response_id`` plus only the new items, with a stateless fallback.

A `ToolDeclaration` (``[skills] tool_search_loading = "additional_tools"``) becomes one
``{"type": "additional_tools", "role": "developer", "tools": [...]}`` input item, right after
the result of the call that loaded its tools.

System messages travel as ``instructions`` on every request (a stored response does not carry
them over). After a response, the server holds the conversation up to and including the
assistant turn it produced, so the next request sends only the newer items (the
``function_call_output`` of each call) and the tools list of the new round. If the server has
lost those calls (HTTP 400 "No tool call found for function call output with call_id ..."),
the request is resent once with the full history and no previous id, and the rest of the ask
stays stateless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings

from .base import (
    RawBody,
    RawReply,
    ToolDeclaration,
    TransportState,
    WireMessages,
    read_body,
    read_call,
    reply_text,
    token_count,
)
from .chain import Round, chain_round, continue_from, drive_async

__all__ = [
    "declaration_item",
    "flat_tool",
    "read_responses",
    "send_responses",
    "to_input_items",
]


async def send_responses(
    client: openai.AsyncOpenAI,
    model: ModelSettings,
    messages: WireMessages,
    tools: list[dict[str, Any]],
    state: TransportState,
    *,
    declarations: Sequence[ToolDeclaration] = (),
) -> RawReply:
    """One ``responses.create`` call (two after a lost-call 400, see `chain_round`); updates
    ``state``.

    Raises:
        openai.APIError: the request failed (and was not the recoverable 400);
            `ModelReplyError` when the reply is unusable.
    """
    instructions = "\n\n".join(
        str(m.get("content") or "") for m in messages if m.get("role") == "system"
    )
    conversation = [m for m in messages if m.get("role") != "system"]
    flat_tools = [flat_tool(tool) for tool in tools]
    if model.responses_force_stateless_replay:
        state.stateless = True
    request: dict[str, Any] = {"model": model.name, "timeout": model.timeout}
    if flat_tools:
        request["tools"] = flat_tools
        request["tool_choice"] = "auto"
    if instructions:
        request["instructions"] = instructions
    flow: Round[RawBody] = chain_round(
        state,
        request,
        new=lambda: to_input_items(conversation[state.covered :], declarations),
        full=lambda: to_input_items(conversation, declarations),
    )
    reply = read_responses(await drive_async(flow, partial(_create, client)))
    continue_from(state, reply.response_id)
    # +1: the host appends this response's assistant turn locally, and the server has it.
    state.covered = len(conversation) + 1
    return reply


async def _create(client: openai.AsyncOpenAI, **request: Any) -> RawBody:
    response = await client.responses.with_raw_response.create(**request)
    # Read here, not by the SDK's models: a malformed field becomes one documented error.
    return read_body(response)


def to_input_items(
    conversation: list[dict[str, Any]], declarations: Sequence[ToolDeclaration] = ()
) -> list[dict[str, Any]]:
    """Chat-shaped messages (wire names) as Responses input items, each declaration placed
    after its call's output (one with no call: before the last user message, if any)."""
    items: list[dict[str, Any]] = []
    after: dict[str | None, list[dict[str, Any]]] = {}
    for declaration in declarations:
        tools = [flat_tool(tool) for tool in declaration.tools]
        after.setdefault(declaration.after, []).append(declaration_item(tools))
    ask = max((i for i, m in enumerate(conversation) if m.get("role") == "user"), default=None)
    for index, message in enumerate(conversation):
        role = message.get("role")
        if index == ask:
            # Tools kept loaded from earlier asks: after the earlier turns (a stable prefix).
            items.extend(after.get(None, ()))
        if role == "tool":
            call_id = message["tool_call_id"]
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": str(message.get("content") or ""),
                }
            )
            items.extend(after.get(str(call_id), ()))
            continue
        content = message.get("content")
        if content:
            items.append({"role": role, "content": str(content)})
        for call in message.get("tool_calls") or ():
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                }
            )
    return items


def declaration_item(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``additional_tools`` input item declaring ``tools`` (Responses shape, wire names):
    it loads them without touching ``tools`` (the cached prefix)."""
    return {"type": "additional_tools", "role": "developer", "tools": list(tools)}


def flat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions function tool in the Responses (flat) shape."""
    function = tool["function"]
    return {
        "type": "function",
        "name": function["name"],
        "description": function.get("description") or "",
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def read_responses(body: RawBody) -> RawReply:
    """The text, function calls, usage and id of a Responses body.

    Raises:
        ModelReplyError: a field the bot reads has the wrong type.
    """
    data = body.value
    output = data.get("output")
    if output is not None and not isinstance(output, list):
        raise body.error("'output' is not a list")
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    for i, item in enumerate(output or ()):
        where = f"output[{i}]"
        if not isinstance(item, dict):
            raise body.error(f"{where} is not an object")
        kind = item.get("type")
        if kind == "function_call":
            call = read_call(
                body, where, item.get("call_id"), item.get("name"), item.get("arguments")
            )
            calls.append(call)
        elif kind == "message":
            text = reply_text(item.get("content"), body, f"{where}.content")
            if text is not None:
                texts.append(text)
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    response_id = data.get("id")
    text = "".join(texts) if texts else None
    return RawReply(
        text,
        tuple(calls),
        token_count(usage.get("input_tokens")),
        token_count(cached),
        response_id if isinstance(response_id, str) and response_id else None,
    )
