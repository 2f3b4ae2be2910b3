"""Scripted answers as server-sent event streams, as the real APIs send them.

Chat Completions: a role chunk, the text in two pieces, each tool call as a header chunk (id,
name) followed by its arguments in two pieces, one chunk with the ``finish_reason``, then (with
``stream_options.include_usage``) a usage chunk without choices, then ``data: [DONE]``.

Responses: ``response.created`` and ``response.in_progress`` (the response without output or
usage), then per output item ``response.output_item.added``, its content (a message:
``content_part.added``, the text in up to three ``output_text.delta`` pieces,
``output_text.done``, ``content_part.done``; a function call: its arguments in up to three
``function_call_arguments.delta`` pieces and ``function_call_arguments.done``) and
``response.output_item.done``, then ``response.completed`` with the whole response and its
usage. Every event is ``event: <type>`` plus its JSON with a ``sequence_number`` counting from
0; there is no ``[DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["chat_stream", "responses_stream"]


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


def _pieces(text: str, count: int = 3) -> list[str]:
    size = -(-len(text) // count) or 1  # ceiling division
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chunk(completion: dict[str, Any], delta: dict[str, Any] | None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    return {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
        "choices": choices,
    }


def chat_stream(completion: dict[str, Any], *, include_usage: bool) -> bytes:
    """The SSE bytes of a ``chat.completion`` object built by ``chat_completion``."""
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        out = _chunk(completion, delta)
        if delta is not None:
            out["choices"][0]["finish_reason"] = finish
        return out

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


class _Events:
    """Responses events with their ``sequence_number``, as SSE text."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, **fields, "sequence_number": len(self.lines)}
        self.lines.append(f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n")

    def opening(self, response: dict[str, Any]) -> None:
        started = {
            **response,
            "status": "in_progress",
            "output": [],
            "usage": None,
            "completed_at": None,
        }
        self.add("response.created", response=started)
        self.add("response.in_progress", response=started)

    def encode(self) -> bytes:
        return "".join(self.lines).encode()


def responses_stream(response: dict[str, Any]) -> bytes:
    """The SSE bytes of a Responses ``response`` object built by ``response_object``."""
    events = _Events()
    events.opening(response)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            _message(events, index, item)
        elif item["type"] == "function_call":
            _function_call(events, index, item)
        else:  # pragma: no cover - the scripted turns make messages and function calls only
            events.add("response.output_item.added", output_index=index, item=item)
            events.add("response.output_item.done", output_index=index, item=item)
    events.add("response.completed", response=response)
    return events.encode()


def _message(events: _Events, index: int, item: dict[str, Any]) -> None:
    item_id = item["id"]
    events.add(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    for part_index, part in enumerate(item["content"]):
        where = {"item_id": item_id, "output_index": index, "content_index": part_index}
        text = part.get("text", "")
        events.add(
            "response.content_part.added", **where, part={**part, "text": "", "logprobs": []}
        )
        for piece in _pieces(text):
            events.add("response.output_text.delta", **where, delta=piece, logprobs=[])
        events.add("response.output_text.done", **where, text=text, logprobs=[])
        events.add("response.content_part.done", **where, part={**part, "logprobs": []})
    events.add("response.output_item.done", output_index=index, item=item)


def _function_call(events: _Events, index: int, item: dict[str, Any]) -> None:
    where = {"item_id": item["id"], "output_index": index}
    events.add(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "arguments": ""},
    )
    for piece in _pieces(item["arguments"]):
        events.add("response.function_call_arguments.delta", **where, delta=piece)
    events.add("response.function_call_arguments.done", **where, arguments=item["arguments"])
    events.add("response.output_item.done", output_index=index, item=item)
