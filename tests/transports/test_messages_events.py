"""Anthropic's Messages event stream: a whole message rendered as events, and an upstream's
server-sent events read back, each within its bound."""

from __future__ import annotations

import pytest

from bot_toolsearch._transports.messages_events import (
    EventTooLarge,
    SseReader,
    message_events,
    sse,
    stream_events,
)

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "thinking", "thinking": "Hm.", "signature": "sig"},
        {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 4},
}


def test_a_message_is_its_events_and_they_read_back_whole_from_any_split() -> None:
    rendered = message_events(MESSAGE)
    kinds = [e["type"] for e in rendered]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [e["delta"]["type"] for e in rendered if e["type"] == "content_block_delta"]
    assert deltas == ["thinking_delta", "signature_delta", "text_delta", "input_json_delta"]
    raw = b"".join(stream_events(MESSAGE)).replace(b"\n", b"\r\n")  # CRLF lines too
    for size in (1, 7, len(raw)):
        reader = SseReader()
        read = [e for at in range(0, len(raw), size) for e in reader.feed(raw[at : at + size])]
        assert [*read, *reader.close()] == rendered


def test_the_last_event_without_its_blank_line_is_read_at_the_close() -> None:
    reader = SseReader()
    assert reader.feed(b': comment\nevent: ping\ndata: {"type": "ping"}') == []
    assert reader.close() == [{"type": "ping"}]


def test_data_that_is_no_json_object_is_passed_over() -> None:
    reader = SseReader()
    assert reader.feed(b'data: [DONE]\n\ndata: {"type"\n\n' + sse({"type": "ping"})) == [
        {"type": "ping"}
    ]


@pytest.mark.parametrize("newline", [True, False])
def test_an_event_past_the_bound_is_refused_not_buffered(newline: bool) -> None:
    reader = SseReader(limit=64)
    chunk = b"data: " + b"x" * 40 + (b"\n" if newline else b"")
    reader.feed(chunk)
    with pytest.raises(EventTooLarge):
        reader.feed(chunk)
