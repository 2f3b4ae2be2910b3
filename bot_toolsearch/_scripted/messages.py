"""The scripted server's Messages mode: ``POST /v1/messages`` as an Anthropic-compatible backend.

The same scripted turns answer as Anthropic's Messages API does: a message of ``text`` and
``tool_use`` blocks with ``usage`` and ``stop_reason``, or its event stream (``message_start``,
``content_block_start``/``delta``/``stop``, ``message_delta``, ``message_stop``). The API's
own 400s are checked first (a ``tool_result`` that answers no ``tool_use`` of the message
before it, a ``tool_use`` left unanswered, a custom tool without ``input_schema``); under
``refuse_native`` it is a backend without Anthropic's tool search, refusing its tool types,
``defer_loading`` keys and the ``tool_reference``, ``server_tool_use`` and
``tool_search_tool_result`` blocks, as such backends do. Errors are Anthropic's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot_toolsearch._transports.messages_events import stream_events

from .request import ModelRequest
from .turns import ErrorTurn, TextTurn, ToolCallsTurn
from .wire import estimate_tokens

__all__ = ["check_messages", "error_body", "message_object", "messages_stream"]

_SEARCH_TYPES = frozenset(
    {
        "tool_search_tool_regex_20251119",
        "tool_search_tool_regex",
        "tool_search_tool_bm25_20251119",
        "tool_search_tool_bm25",
    }
)
_REFUSED_BLOCKS = frozenset({"tool_reference", "server_tool_use", "tool_search_tool_result"})


def error_body(turn: ErrorTurn) -> dict[str, Any]:
    """An error turn as Anthropic's error body."""
    return {"type": "error", "error": {"type": turn.type, "message": turn.message}}


def check_messages(request: ModelRequest, *, strict: bool, validate: bool) -> ErrorTurn | None:
    """The 400 the API answers before any model runs, or ``None``: under ``strict`` a
    backend without tool search's refusals; under ``validate`` the API's own checks."""
    tools = request.body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else ()):
        if not isinstance(tool, Mapping):
            return ErrorTurn(400, f"tools.{index}: Input should be an object")
        kind = tool.get("type")
        if strict and kind in _SEARCH_TYPES:
            return ErrorTurn(400, f"tools.{index}.type: Unsupported tool type '{kind}'")
        if strict and "defer_loading" in tool:
            return ErrorTurn(400, "Deferred custom tools are only supported on Anthropic models")
        custom = kind in (None, "custom")
        if validate and custom and not isinstance(tool.get("input_schema"), Mapping):
            return ErrorTurn(400, f"tools.{index}.custom.input_schema: Field required")
    messages = request.body.get("messages")
    if not isinstance(messages, list):
        return ErrorTurn(400, "messages: Field required")
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return ErrorTurn(400, f"messages.{index}: Input should be an object")
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        for block in blocks:
            kind = block.get("type")
            inner = block.get("content")
            nested = [b for b in inner if isinstance(b, Mapping)] if isinstance(inner, list) else []
            if strict and (
                kind in _REFUSED_BLOCKS or any(b.get("type") in _REFUSED_BLOCKS for b in nested)
            ):
                found = kind if kind in _REFUSED_BLOCKS else "tool_reference"
                return ErrorTurn(400, f"messages.{index}: Unsupported content type '{found}'")
        results = {str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"}
        if not validate:
            continue
        if message.get("role") == "user":
            if results - pending:
                unknown = sorted(results - pending)[0]
                return ErrorTurn(
                    400,
                    f"messages.{index}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {unknown}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
            if pending - results:
                return ErrorTurn(
                    400,
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {sorted(pending - results)[0]}",
                )
            pending = set()
        else:
            pending = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
    return None


def message_object(
    turn: ToolCallsTurn | TextTurn,
    request: ModelRequest,
    *,
    message_id: str,
    call_ids: list[str],
) -> dict[str, Any]:
    """A scripted turn as a Messages API message."""
    content: list[dict[str, Any]] = []
    if isinstance(turn, TextTurn):
        content.append({"type": "text", "text": turn.text})
    else:
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for call, call_id in zip(turn.calls, call_ids, strict=True):
            arguments: object = call.arguments
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {}
            content.append(
                {"type": "tool_use", "id": call_id, "name": call.name, "input": arguments}
            )
    if turn.usage is not None:
        usage = {
            "input_tokens": turn.usage.prompt_tokens,
            "output_tokens": turn.usage.completion_tokens,
            "cache_read_input_tokens": turn.usage.cached_tokens,
        }
    else:
        size = len(json.dumps(request.body, ensure_ascii=False))
        usage = {
            "input_tokens": estimate_tokens(size),
            "output_tokens": max(1, estimate_tokens(len(json.dumps(content)))),
            "cache_read_input_tokens": 0,
        }
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.model or "scripted",
        "content": content,
        "stop_reason": "tool_use" if isinstance(turn, ToolCallsTurn) else "end_turn",
        "stop_sequence": None,
        "usage": {**usage, "cache_creation_input_tokens": 0},
    }


def messages_stream(message: Mapping[str, Any]) -> bytes:
    """A message as Anthropic's event stream (the proxy's own renderer, `stream_events`)."""
    return b"".join(stream_events(message))
