"""Turns to Chat Completions / Responses JSON, usage estimates and the API's own 400 checks.

Token figures are *estimates*, not a tokenizer: a prompt is the compact JSON of the tools followed
by the conversation, and counts ``len(text) // 4`` tokens. Cached tokens simulate provider prefix
caching: the estimate of the longest common prefix with the previous request's prompt, so a bot
that keeps its tools prefix stable shows a high cached share. Real providers cache in 128-token
blocks above 1,024 tokens; the simulation does not (the opt-in model in ``_cache.py`` does).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from typing import Any

from .request import ModelRequest, input_items
from .turns import ErrorTurn, TextTurn, ToolCallsTurn, Usage

__all__ = [
    "chat_completion",
    "check_chat_tool_messages",
    "check_responses_call_ids",
    "common_prefix_len",
    "compact",
    "estimate_tokens",
    "output_item_count",
    "prompt_text",
    "response_object",
]


def compact(value: object) -> str:
    """Compact, deterministic JSON (the unit of the token estimate)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def estimate_tokens(chars: int) -> int:
    """The token estimate for ``chars`` characters: about four characters per token."""
    return chars // 4


def common_prefix_len(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    limit = min(len(a), len(b))
    lo, hi = 0, limit
    # Binary search on slice equality is C-speed, unlike a Python loop over characters.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prompt_text(request: ModelRequest, history: list[dict[str, Any]]) -> str:
    """The text the prompt estimate and the prefix cache work on.

    Args:
        request: the request.
        history: for Responses, the stored items of the ``previous_response_id`` chain.
    """
    parts = [compact(request.body.get("tools", []))]
    if request.api == "chat_completions":
        parts.extend(compact(m) for m in request.messages)
    else:
        parts.append(compact(request.body.get("instructions")))
        parts.extend(compact(item) for item in [*history, *input_items(request.body)])
    return "".join(parts)


def _usage_numbers(
    turn: ToolCallsTurn | TextTurn, prompt: int, cached: int, output: object
) -> Usage:
    if turn.usage is not None:
        return turn.usage
    return Usage(prompt, max(1, estimate_tokens(len(compact(output)))), min(cached, prompt))


def chat_completion(
    turn: ToolCallsTurn | TextTurn,
    request: ModelRequest,
    *,
    completion_id: str,
    call_ids: list[str],
    prompt_tokens: int,
    cached_tokens: int,
) -> dict[str, Any]:
    """A ``chat.completion`` object for the turn (``call_ids`` parallel to ``turn.calls``)."""
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if isinstance(turn, ToolCallsTurn):
        message["content"] = turn.text or None
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json()},
            }
            for c, cid in zip(turn.calls, call_ids, strict=True)
        ]
        finish = "tool_calls"
    else:
        message["content"] = turn.text
        finish = "stop"
    usage = _usage_numbers(turn, prompt_tokens, cached_tokens, message)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model or "scripted-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_object(
    turn: ToolCallsTurn | TextTurn,
    request: ModelRequest,
    *,
    response_id: str,
    item_ids: list[str],
    call_ids: list[str],
    prompt_tokens: int,
    cached_tokens: int,
) -> dict[str, Any]:
    """A Responses ``response`` object for the turn.

    ``item_ids`` holds one output item id per output item (the text message first, if any);
    ``call_ids`` is parallel to the turn's calls.
    """
    output: list[dict[str, Any]] = []
    ids = iter(item_ids)
    message_text = turn.text
    if message_text or isinstance(turn, TextTurn):
        output.append(
            {
                "type": "message",
                "id": next(ids),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": message_text, "annotations": []}],
            }
        )
    if isinstance(turn, ToolCallsTurn):
        output.extend(
            {
                "type": "function_call",
                "id": next(ids),
                "call_id": cid,
                "name": c.name,
                "arguments": c.arguments_json(),
                "status": "completed",
            }
            for c, cid in zip(turn.calls, call_ids, strict=True)
        )
    usage = _usage_numbers(turn, prompt_tokens, cached_tokens, output)
    body = request.body
    now = int(time.time())
    return {
        "id": response_id,
        "object": "response",
        "created_at": now,
        "completed_at": now,
        "status": "completed",
        "model": request.model or "scripted-model",
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "store": body.get("store", True),
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        },
    }


def output_item_count(turn: ToolCallsTurn | TextTurn) -> int:
    """How many output items `response_object` emits for the turn."""
    calls = len(turn.calls) if isinstance(turn, ToolCallsTurn) else 0
    has_message = isinstance(turn, TextTurn) or bool(turn.text)
    return calls + int(has_message)


def check_responses_call_ids(
    request: ModelRequest, history: list[dict[str, Any]]
) -> ErrorTurn | None:
    """The API's 400s for function call outputs and function calls that do not pair up."""
    items = [*history, *input_items(request.body)]
    calls = [item.get("call_id") for item in items if item.get("type") == "function_call"]
    answered = {item.get("call_id") for item in items if item.get("type") == "function_call_output"}
    for item in input_items(request.body):
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            return ErrorTurn(
                400,
                f"No tool call found for function call output with call_id {item.get('call_id')}.",
                param="input",
            )
    for call_id in calls:
        if call_id not in answered:
            return ErrorTurn(
                400, f"No tool output found for function call {call_id}.", param="input"
            )
    return None


NATIVE_TOOL_TYPES = frozenset({"tool_search", "namespace"})
"""Tool types a backend without native tool search refuses (``refuse_native=True``)."""
NATIVE_ITEM_TYPES = frozenset({"tool_search_call", "tool_search_output"})
"""Input item types a backend without native tool search refuses."""


def check_native(
    request: ModelRequest, produced: Collection[str] | None = None
) -> ErrorTurn | None:
    """The 400s of a backend with no native tool search (vLLM, SGLang, most hosted APIs):
    a ``tool_search`` or ``namespace`` tool type, a ``defer_loading`` key on a tool (or inside
    its ``function``), a ``tool_search_call``/``tool_search_output`` input item, or a
    ``namespace`` key on a ``function_call`` input item; with ``produced`` (the output item ids
    the server issued), also an ``item_reference`` to any other id, as the API answers for an
    item it never stored."""
    tools = request.body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else ()):
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind in NATIVE_TOOL_TYPES:
            return ErrorTurn(
                400,
                f"Invalid value: '{kind}'. Unsupported tool type.",
                param=f"tools[{index}].type",
            )
        function = tool.get("function")
        if "defer_loading" in tool or (isinstance(function, dict) and "defer_loading" in function):
            return ErrorTurn(
                400,
                "Unrecognized request argument supplied: defer_loading",
                param=f"tools[{index}].defer_loading",
            )
    if request.api != "responses":
        return None
    for index, item in enumerate(input_items(request.body)):
        kind = item.get("type")
        if kind in NATIVE_ITEM_TYPES:
            return ErrorTurn(
                400, f"Invalid value: '{kind}'. Unsupported input item type.", param="input"
            )
        if kind == "function_call" and "namespace" in item:
            return ErrorTurn(
                400,
                "Unrecognized request argument supplied: namespace",
                param=f"input[{index}].namespace",
            )
        if kind == "item_reference" and produced is not None and item.get("id") not in produced:
            return ErrorTurn(
                400, f"Item with id '{item.get('id')}' not found.", param=f"input[{index}].id"
            )
    return None


def check_chat_tool_messages(request: ModelRequest) -> ErrorTurn | None:
    """The API's 400s for tool messages that do not pair up with an assistant's tool calls."""
    pending: dict[str, int] = {}  # tool_call_id -> index of the assistant message
    answerable: set[str] = set()
    for index, message in enumerate(request.messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                return ErrorTurn(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            pending.pop(str(call_id), None)
            continue
        if pending:
            return _unanswered(pending)
        answerable = set()
        if role == "assistant":
            tool_calls = message.get("tool_calls")
            if tool_calls is not None and not isinstance(tool_calls, list):
                return ErrorTurn(
                    400,
                    f"Invalid type for 'messages[{index}].tool_calls': expected an array.",
                    param=f"messages[{index}].tool_calls",
                )
            for tool_call in tool_calls or []:
                if isinstance(tool_call, dict):
                    pending[str(tool_call.get("id"))] = index
                    answerable.add(str(tool_call.get("id")))
    return _unanswered(pending) if pending else None


def _unanswered(pending: dict[str, int]) -> ErrorTurn:
    index = min(pending.values())
    return ErrorTurn(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        param=f"messages.[{index}].role",
    )
