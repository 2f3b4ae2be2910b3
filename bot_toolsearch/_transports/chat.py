"""Chat Completions mode: the full history and the current tools on every request."""

from __future__ import annotations

from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings

from .base import (
    RawBody,
    RawReply,
    TransportState,
    WireMessages,
    read_body,
    read_call,
    reply_text,
    token_count,
)

__all__ = ["read_chat", "send_chat"]


async def send_chat(
    client: openai.AsyncOpenAI,
    model: ModelSettings,
    messages: WireMessages,
    tools: list[dict[str, Any]],
    state: TransportState,
) -> RawReply:
    """One ``chat.completions.create`` call; ``state`` is unused (the history is resent).

    Raises:
        openai.APIError: the request failed; `ModelReplyError` when the reply is unusable.
    """
    del state  # Chat Completions is stateless by design.
    extra: dict[str, Any] = {"tools": tools, "tool_choice": "auto"} if tools else {}
    response = await client.chat.completions.with_raw_response.create(
        model=model.name,
        messages=messages,  # type: ignore[arg-type]  # built to the SDK's message shape
        timeout=model.timeout,
        **extra,
    )
    # The body is read here, not by the SDK's models: a malformed field must become one
    # documented error, never an AttributeError from deep inside the ask.
    return read_chat(read_body(response))


def read_chat(body: RawBody) -> RawReply:
    """The first choice of a Chat Completions body.

    Raises:
        ModelReplyError: a field the bot reads has the wrong type.
    """
    data = body.value
    usage = _usage(data.get("usage"))
    choices = data.get("choices")
    if choices is None or choices == []:
        return RawReply(None, (), *usage)
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise body.error("'choices' is not a list of objects")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise body.error("choices[0].message is not an object")
    text = reply_text(message.get("content"), body, "choices[0].message.content")
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise body.error("choices[0].message.tool_calls is not a list")
    calls: list[tuple[str, str, str]] = []
    for i, call in enumerate(tool_calls or ()):
        where = f"choices[0].message.tool_calls[{i}]"
        if not isinstance(call, dict):
            raise body.error(f"{where} is not an object")
        if call.get("type", "function") != "function":
            continue  # custom (non-function) tool calls: we never offer those
        function = call.get("function")
        if not isinstance(function, dict):
            raise body.error(f"{where}.function is not an object")
        calls.append(
            read_call(body, where, call.get("id"), function.get("name"), function.get("arguments"))
        )
    return RawReply(text, tuple(calls), *usage)


def _usage(usage: object) -> tuple[int, int]:
    if not isinstance(usage, dict):
        return 0, 0
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return token_count(usage.get("prompt_tokens")), token_count(cached)
