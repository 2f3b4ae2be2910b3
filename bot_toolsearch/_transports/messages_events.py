"""Anthropic's Messages event stream: events rendered as server-sent events, and read back.

What a streamed Messages reply is on the wire, for whoever renders or reads one: the proxy's
and `wrap_anthropic`'s streams of a tool-searched answer and the scripted server's Messages
mode. The events are those the ``anthropic`` SDK's stream reads: ``message_start``, ``ping``,
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` per block,
``message_delta`` and ``message_stop``; a failure once the stream has started is an ``error``
event (`error_event`). `message_events` renders a whole message (a block whole as one delta:
`block_events`), `sse` one event; `SseReader` reads an upstream's stream back into event
objects, each event within a bound on its size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_EVENT_BYTES",
    "EventTooLarge",
    "SseReader",
    "block_events",
    "error_data",
    "error_event",
    "event",
    "message_events",
    "sse",
    "stream_events",
]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The largest server-sent event `SseReader` reads (a whole tool input may come as one)."""


def stream_events(message: Mapping[str, Any]) -> list[bytes]:
    """The server-sent events of one whole message, in order (`message_events`)."""
    return [sse(data) for data in message_events(message)]


def message_events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of one whole message, in order: ``message_start`` (no content, output
    tokens so far), ``ping``, each block (`block_events`), then ``message_delta``
    (``stop_reason``, usage) and ``message_stop``."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": min(1, int(usage.get("output_tokens") or 0))}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message.get("content") or ()):
        out.extend(block_events(index, block))
    closing = {
        "type": "message_delta",
        "delta": {
            "stop_reason": message.get("stop_reason"),
            "stop_sequence": message.get("stop_sequence"),
        },
        "usage": usage,
    }
    return [*out, closing, {"type": "message_stop"}]


def block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One whole content block as its events at ``index``: ``content_block_start``, its text,
    thinking or tool input as one delta, ``content_block_stop``."""
    kind = block.get("type")
    delta: dict[str, Any] | None
    if kind == "text":
        opening: dict[str, Any] = {**block, "text": ""}
        delta = {"type": "text_delta", "text": block.get("text", "")}
    elif kind == "thinking":
        opening = {**block, "thinking": "", "signature": ""}
        delta = {"type": "thinking_delta", "thinking": block.get("thinking", "")}
    elif kind in ("tool_use", "server_tool_use"):
        opening = {**block, "input": {}}
        partial = json.dumps(block.get("input") or {}, ensure_ascii=False)
        delta = {"type": "input_json_delta", "partial_json": partial}
    else:
        opening, delta = dict(block), None
    out: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": index, "content_block": opening}
    ]
    if delta is not None:
        out.append({"type": "content_block_delta", "index": index, "delta": delta})
    signature = block.get("signature") if kind == "thinking" else None
    if isinstance(signature, str) and signature:
        signed = {"type": "signature_delta", "signature": signature}
        out.append({"type": "content_block_delta", "index": index, "delta": signed})
    out.append({"type": "content_block_stop", "index": index})
    return out


def sse(data: Mapping[str, Any]) -> bytes:
    """One event as a server-sent event named by its ``type``."""
    return event(str(data.get("type", "")), data)


def event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def error_data(kind: str, message: str) -> dict[str, Any]:
    """An ``error`` event's object."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_event(kind: str, message: str) -> bytes:
    """The ``error`` event of a stream that failed after it started."""
    return sse(error_data(kind, message))


class EventTooLarge(ValueError):
    """A server-sent event past `MAX_EVENT_BYTES`."""


class SseReader:
    """Server-sent events read back into the JSON objects of their ``data`` (sans-IO).

    Fed the stream's bytes as they come; an event is its ``data:`` lines joined, read when a
    blank line ends it; ``event:``, ``id:``, ``retry:`` and comment lines are passed over (a
    Messages event names itself in its ``type``). An event whose data is not a JSON object is
    passed over too.

    Raises:
        EventTooLarge: one event (or line) grows past ``limit`` bytes.
    """

    def __init__(self, limit: int = MAX_EVENT_BYTES) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The events that ``chunk`` completes."""
        self._buffer += chunk
        out: list[dict[str, Any]] = []
        start = 0
        scan = self._scanned  # the buffer before it holds no line end: never searched again
        while (end := self._buffer.find(b"\n", scan)) >= 0:
            line = bytes(self._buffer[start:end]).removesuffix(b"\r")
            start = scan = end + 1
            found = self._line(line)
            if found is not None:
                out.append(found)
        del self._buffer[:start]
        self._scanned = len(self._buffer)
        if len(self._buffer) + self._size > self._limit:
            raise EventTooLarge(f"a server-sent event is larger than {self._limit} bytes")
        return out

    def close(self) -> list[dict[str, Any]]:
        """The last event, when the stream ended without the blank line after it."""
        line = bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        found = self._line(line) if line else None
        last = self._line(b"") if self._data else None
        return [e for e in (found, last) if e is not None]

    def _line(self, line: bytes) -> dict[str, Any] | None:
        if not line:
            data, self._data, self._size = b"\n".join(self._data), [], 0
            if not data:
                return None
            try:
                value = json.loads(data)
            except (ValueError, RecursionError):
                return None
            return value if isinstance(value, dict) else None
        if line.startswith(b"data:"):
            value = line[5:]
            value = value[1:] if value.startswith(b" ") else value
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._limit:
                raise EventTooLarge(f"a server-sent event is larger than {self._limit} bytes")
        return None
