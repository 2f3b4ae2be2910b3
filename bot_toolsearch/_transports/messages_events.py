"""Anthropic's Messages event stream: one whole message rendered as its server-sent events.

What a streamed Messages reply is on the wire, for whoever renders one: the proxy's stream of
a tool-searched answer and the scripted server's Messages mode. The events are those the
``anthropic`` SDK's stream reads: ``message_start``, ``ping``, ``content_block_start`` /
``content_block_delta`` / ``content_block_stop`` per block, ``message_delta`` and
``message_stop``; a failure once the stream has started is an ``error`` event (`error_event`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["error_event", "event", "stream_events"]


def stream_events(message: Mapping[str, Any]) -> list[bytes]:
    """The server-sent events of one whole message, in order: ``message_start`` (no content,
    output tokens so far), ``ping``, each block (text and tool input as one delta), then
    ``message_delta`` (``stop_reason``, usage) and ``message_stop``."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": min(1, int(usage.get("output_tokens") or 0))}
    out = [event("message_start", {"type": "message_start", "message": start})]
    out.append(event("ping", {"type": "ping"}))
    for index, block in enumerate(message.get("content") or ()):
        kind = block.get("type")
        if kind == "text":
            opening: dict[str, Any] = {**block, "text": ""}
            delta: dict[str, Any] | None = {"type": "text_delta", "text": block.get("text", "")}
        elif kind in ("tool_use", "server_tool_use"):
            opening = {**block, "input": {}}
            partial = json.dumps(block.get("input") or {}, ensure_ascii=False)
            delta = {"type": "input_json_delta", "partial_json": partial}
        else:
            opening, delta = dict(block), None
        out.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        if delta is not None:
            out.append(
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    closing = {
        "type": "message_delta",
        "delta": {
            "stop_reason": message.get("stop_reason"),
            "stop_sequence": message.get("stop_sequence"),
        },
        "usage": usage,
    }
    out.append(event("message_delta", closing))
    out.append(event("message_stop", {"type": "message_stop"}))
    return out


def event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def error_event(kind: str, message: str) -> bytes:
    """The ``error`` event of a stream that failed after it started."""
    return event("error", {"type": "error", "error": {"type": kind, "message": message}})
