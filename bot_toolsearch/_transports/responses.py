"""Responses mode: ``previous_response_id`` plus only the new items, with a stateless fallback.

A history message of ``type`` ``additional_tools`` (``[skills] tool_search_loading``) becomes
one ``{"type": "additional_tools", "role": "developer", "tools": [...]}`` input item in place.

System messages travel as ``instructions`` on every request (a stored response does not carry
them over). After a response, the server holds the conversation up to and including the
assistant turn it produced, so the next request sends only the newer items (the
``function_call_output`` of each call) and the tools list of the new round. If the server has
lost those calls (HTTP 400 "No tool call found for function call output with call_id ..."),
the request is resent once with the full history and no previous id, and the rest of the ask
stays stateless.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings

from .base import RawReply, TransportState, WireMessages

__all__ = ["is_missing_call_output_error", "send_responses", "to_input_items"]

logger = logging.getLogger("bot_toolsearch")

_MISSING_CALL = "no tool call found for function call output with call_id"


async def send_responses(
    client: openai.AsyncOpenAI,
    model: ModelSettings,
    messages: WireMessages,
    tools: list[dict[str, Any]],
    state: TransportState,
) -> RawReply:
    """One ``responses.create`` call (two after a lost-call 400); updates ``state``.

    Raises:
        openai.APIError: the request failed (and was not the recoverable 400).
    """
    instructions = "\n\n".join(
        str(m.get("content") or "") for m in messages if m.get("role") == "system"
    )
    conversation = [m for m in messages if m.get("role") != "system"]
    flat_tools = [_flat_tool(tool) for tool in tools]
    previous = state.previous_response_id
    stateful = (
        previous is not None and not state.stateless and not model.responses_force_stateless_replay
    )
    items = to_input_items(conversation[state.covered :] if stateful else conversation)
    try:
        response = await _create(
            client,
            model,
            instructions=instructions,
            items=items,
            tools=flat_tools,
            previous_response_id=previous if stateful else None,
        )
    except openai.BadRequestError as exc:
        has_output = any(item.get("type") == "function_call_output" for item in items)
        if not (stateful and has_output and is_missing_call_output_error(exc)):
            raise
        logger.warning(
            "responses: the server lost the calls of response %s; "
            "resending statelessly for the rest of this ask",
            previous,
        )
        state.stateless = True
        state.stateless_replays += 1
        response = await _create(
            client,
            model,
            instructions=instructions,
            items=to_input_items(conversation),
            tools=flat_tools,
            previous_response_id=None,
        )
    state.previous_response_id = response.id
    # +1: the host appends this response's assistant turn locally, and the server has it.
    state.covered = len(conversation) + 1
    return _read(response)


def is_missing_call_output_error(exc: openai.BadRequestError) -> bool:
    """Whether a 400 says the server does not know a ``function_call_output``'s call id."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    message = str(body.get("message") or exc.message)
    param = body.get("param")
    return _MISSING_CALL in message.casefold() and param in (None, "input")


async def _create(
    client: openai.AsyncOpenAI,
    model: ModelSettings,
    *,
    instructions: str,
    items: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    previous_response_id: str | None,
) -> Any:
    extra: dict[str, Any] = {}
    if tools:
        extra["tools"] = tools
        extra["tool_choice"] = "auto"
    if previous_response_id is not None:
        extra["previous_response_id"] = previous_response_id
    if instructions:
        extra["instructions"] = instructions
    return await client.responses.create(
        model=model.name,
        input=items,  # type: ignore[arg-type]  # built to the SDK's input item shape
        timeout=model.timeout,
        **extra,
    )


def to_input_items(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-shaped messages (wire names) as Responses input items."""
    items: list[dict[str, Any]] = []
    for message in conversation:
        role = message.get("role")
        if message.get("type") == "additional_tools":
            # Declares tools loaded mid-ask without touching ``tools`` (the cached prefix).
            tools = [_flat_tool(tool) for tool in message.get("tools") or ()]
            items.append({"type": "additional_tools", "role": "developer", "tools": tools})
            continue
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": str(message.get("content") or ""),
                }
            )
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


def _flat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool["function"]
    return {
        "type": "function",
        "name": function["name"],
        "description": function.get("description") or "",
        "parameters": function.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def _read(response: Any) -> RawReply:
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    for item in response.output or ():
        kind = getattr(item, "type", None)
        if kind == "function_call":
            calls.append((item.call_id, item.name or "", item.arguments or ""))
        elif kind == "message":
            for part in item.content or ():
                text = getattr(part, "text", None)
                if isinstance(text, str):
                    texts.append(text)
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "input_tokens", 0) or 0)
    details = getattr(usage, "input_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    text = "".join(texts) if texts else None
    return RawReply(text, tuple(calls), prompt, cached, response.id)
