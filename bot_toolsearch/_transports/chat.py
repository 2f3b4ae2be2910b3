"""Chat Completions mode: the full history and the current tools on every request."""

from __future__ import annotations

from typing import Any

import openai

from bot_toolsearch._config.settings import ModelSettings

from .base import RawReply, TransportState, WireMessages

__all__ = ["send_chat"]


async def send_chat(
    client: openai.AsyncOpenAI,
    model: ModelSettings,
    messages: WireMessages,
    tools: list[dict[str, Any]],
    state: TransportState,
) -> RawReply:
    """One ``chat.completions.create`` call; ``state`` is unused (the history is resent).

    Raises:
        openai.APIError: the request failed.
    """
    del state  # Chat Completions is stateless by design.
    extra: dict[str, Any] = {"tools": tools, "tool_choice": "auto"} if tools else {}
    completion = await client.chat.completions.create(
        model=model.name,
        messages=messages,  # type: ignore[arg-type]  # built to the SDK's message shape
        timeout=model.timeout,
        **extra,
    )
    if not completion.choices:
        return RawReply(None, (), *_usage(completion))
    message = completion.choices[0].message
    calls: list[tuple[str, str, str]] = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:  # custom (non-function) tool calls: we never offer those
            continue
        calls.append((call.id, function.name or "", function.arguments or ""))
    return RawReply(message.content, tuple(calls), *_usage(completion))


def _usage(completion: Any) -> tuple[int, int]:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return 0, 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return int(usage.prompt_tokens or 0), int(cached)
