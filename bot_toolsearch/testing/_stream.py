"""A scripted Chat Completions answer as a server-sent event stream, as the real API sends it.

A role chunk, the text in two pieces, each tool call as a header chunk (id, name) followed by
its arguments in two pieces, one chunk with the ``finish_reason``, then (with
``stream_options.include_usage``) a usage chunk without choices, then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["chat_stream"]


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


def chat_stream(completion: dict[str, Any], *, include_usage: bool) -> bytes:
    """The SSE bytes of a ``chat.completion`` object built by ``chat_completion``."""
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "choices": choices,
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks.extend(chunk({"content": part}) for part in _halves(message.get("content") or ""))
    for index, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": index, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(chunk({"tool_calls": [head]}))
        chunks.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _halves(call["function"]["arguments"])
        )
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append(chunk(None) | {"usage": completion["usage"]})
    lines = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()
