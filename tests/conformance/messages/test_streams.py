"""Messages streams through ``serve`` as they come: the real ``anthropic`` SDK against the
proxy over a raw upstream that holds back the end of its last round's stream until the client
has the first text delta of it; a cut round; a client that leaves mid-stream."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import anthropic
import httpx

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import SkillsSettings
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._transports.messages_events import message_events, sse
from tests._helpers import served
from tests.proxy._raw import Upstream
from tests.proxy._raw import served as raw_served
from tests.proxy._raw import sse as raw_sse
from tests.wrap._raw_upstream import RawUpstream

from .test_sdk import ASK, BM25, MODEL, catalog

SETTINGS = BotSettings(skills=SkillsSettings(tool_search_enabled=True, tool_search_max_results=3))


def message(message_id: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    usage = {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 0}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def events(*items: dict[str, Any]) -> bytes:
    return b"".join(sse(item) for item in items)


SEARCH = message(
    "msg_a",
    [{"type": "tool_use", "id": "toolu_s", "name": "tool_search", "input": {"query": "weather"}}],
    "tool_use",
)
ANSWER = message_events(message("msg_b", [{"type": "text", "text": "Sunny"}], "end_turn"))
HEAD = ANSWER[: [e["type"] for e in ANSWER].index("content_block_delta") + 1]
"""The last round up to its first text delta; the rest is held back."""


def held_upstream(upstream: RawUpstream, gate: threading.Event) -> None:
    """A search round, then the answer's round held after its first delta until ``gate``."""
    upstream.stream(events(*message_events(SEARCH)))
    upstream.stream(events(*HEAD), gate=gate, then=events(*ANSWER[len(HEAD) :]))


def first_delta_before_the_end(stream: Any, gate: threading.Event) -> bool:
    """Whether the first text delta came while the upstream still held its stream's end;
    the gate opens then, and the rest of the stream is read."""
    early = None
    for event in stream:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            early = not gate.is_set() if early is None else early
            gate.set()
    return bool(early)


def test_the_last_rounds_deltas_reach_the_client_as_the_upstream_sends_them() -> None:
    gate = threading.Event()
    with RawUpstream() as upstream:
        held_upstream(upstream, gate)
        app = ProxyApp(upstream.base_url, settings=SETTINGS, upstream_api="messages", timeout=30)
        with (
            served(app) as root,
            anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as claude,
            claude.messages.stream(
                model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
            ) as stream,
        ):
            assert first_delta_before_the_end(stream, gate)
            final = stream.get_final_message()
    assert final.id == "msg_a"  # one id: the first round's
    kinds = [b.type for b in final.content]
    assert kinds == ["server_tool_use", "tool_search_tool_result", "text"]
    assert final.content[-1].text == "Sunny"  # type: ignore[union-attr]
    assert final.usage.input_tokens == 200  # summed over both rounds
    assert final.usage.output_tokens == 10
    assert final.stop_reason == "end_turn"
    assert len(upstream.requests) == 2
    assert all(b'"stream": true' in body for body in upstream.requests)


def test_a_round_cut_before_its_message_stop_is_an_error_event() -> None:
    with RawUpstream() as upstream:
        upstream.stream(events(*HEAD))  # closed after the first delta
        app = ProxyApp(upstream.base_url, settings=SETTINGS, upstream_api="messages", timeout=30)
        with (
            served(app) as root,
            anthropic.Anthropic(base_url=root, api_key="k", max_retries=0) as claude,
        ):
            try:
                with claude.messages.stream(
                    model=MODEL, max_tokens=100, messages=ASK, tools=[*catalog(), BM25]
                ) as stream:
                    seen = [event.type for event in stream]
            except anthropic.APIStatusError as exc:
                failure = str(exc)
            else:  # pragma: no cover - the assertion below says what came instead
                failure = f"no error; events {seen}"
    assert "ended before its message_stop" in failure


def test_a_client_that_leaves_the_stream_cancels_the_upstream_round() -> None:
    opening = [e for e in ANSWER if e["type"] in ("message_start", "content_block_start")]

    def endless(conn: socket.socket) -> None:
        delta = {"type": "content_block_delta", "index": 0}
        event = sse({**delta, "delta": {"type": "text_delta", "text": "x"}})
        for _ in range(100_000):  # until the proxy closes the connection
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            time.sleep(0.01)

    upstream = Upstream(raw_sse([sse(e) for e in opening], then=endless))
    app = ProxyApp(upstream.url, settings=SETTINGS, upstream_api="messages", timeout=30)
    with raw_served(app) as port:
        body = json.dumps(
            {"model": MODEL, "max_tokens": 10, "messages": ASK, "tools": [*catalog(), BM25]}
            | {"stream": True}
        ).encode()
        head = (
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + body)
            seen = b""
            while b"text_delta" not in seen:
                seen += sock.recv(65536)
        # The client left mid-stream: the upstream connection is closed.
        assert upstream.closed.wait(30)
    upstream.close()


def test_the_stream_ends_with_the_tool_search_summary() -> None:
    with RawUpstream() as upstream:
        upstream.stream(events(*message_events(SEARCH)))
        upstream.stream(events(*ANSWER))
        app = ProxyApp(upstream.base_url, settings=SETTINGS, upstream_api="messages", timeout=30)
        with served(app) as root:
            body = {"model": MODEL, "max_tokens": 10, "messages": ASK, "stream": True}
            response = httpx.post(
                f"{root}/v1/messages",
                json=body | {"tools": [*catalog(), BM25]},
                headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
                timeout=30,
            )
    assert response.headers["x-toolsearch-summary"] == "sse-comment"
    text = response.text
    assert text.count("event: message_start") == 1
    assert text.index("event: message_stop") < text.index(": x-toolsearch rounds=2 hidden-rounds=1")
