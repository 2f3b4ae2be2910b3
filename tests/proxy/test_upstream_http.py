"""The proxy's HTTP client to its upstream (`bot_toolsearch._proxy.upstream_http`), against
hostile upstreams on raw sockets: the answer to a model call is bounded by its size, on every
route, streamed or not, and a pass-through path by a larger bound of its own. (Redirects and
cookies: `tests/proxy/test_edges.py`.)"""

from __future__ import annotations

import contextlib
import json
import socket

import openai
import pytest

from bot_toolsearch._proxy import upstream_http
from bot_toolsearch._proxy.app import ProxyApp
from tests.proxy._raw import Handler, Upstream, answer, post, request, served, sse
from tests.proxy.test_limits import COMPLETION

CAP = 256 * 1024
USER = {"role": "user", "content": "hi"}
_TOOL = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(autouse=True)
def _small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_http, "MAX_ANSWER_BYTES", CAP)


def _endless(content_type: str, *, events: bool = True) -> Handler:
    """An upstream whose chunked answer never ends (until the proxy hangs up): events of
    16 kB, or (``events=False``) one event that never ends."""

    def handle(conn: socket.socket, _: bytes) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
        head += "Transfer-Encoding: chunked\r\n\r\n"
        chunk = b"data: " + b"x" * 16384 + b"\n\n" if events else b"x" * 16384
        with contextlib.suppress(OSError):
            conn.sendall(head.encode())
            if not events:
                conn.sendall(b"6\r\ndata: \r\n")
            for _ in range(10_000):  # 160 MB at most: far past the cap
                conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    return handle


def _announced(conn: socket.socket, _: bytes) -> None:
    """An upstream announcing an answer of a terabyte."""
    with contextlib.suppress(OSError):
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000000000\r\n\r\n{"
        )


def _chat(stream: bool) -> dict[str, object]:
    return {"model": "m", "messages": [USER], "stream": stream}


@pytest.mark.parametrize("handler", [_endless("application/json"), _announced])
@pytest.mark.parametrize(
    ("route", "payload"),
    [
        ("/v1/chat/completions", _chat(False)),
        ("/v1/responses", {"model": "m", "input": "hi"}),
    ],
)
def test_a_model_answer_past_the_bound_is_a_502_and_not_retried(
    handler: Handler, route: str, payload: dict[str, object]
) -> None:
    upstream = Upstream(handler)
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        reply = post(port, route, payload)
    assert reply.status == 502
    error = reply.json()["error"]
    assert error["code"] == "upstream_answer_too_large"
    assert f"larger than {CAP} bytes" in error["message"]
    # A second try would read it all again: none where the proxy posts directly (openai 3);
    # the SDK's own post (openai 2, where every round takes it) retries once, as it does any
    # transport failure.
    direct_path = int(openai.__version__.partition(".")[0]) >= 3
    assert len(upstream.received) == (1 if direct_path else 2)
    upstream.close()


def test_a_stream_past_the_bound_ends_with_an_error_event() -> None:
    upstream = Upstream(_endless("text/event-stream", events=False))
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        reply = post(port, "/v1/chat/completions", _chat(True))
    assert reply.status == 200  # the status line was sent before the bound was passed
    events = [line for line in reply.body.split(b"\n") if line.startswith(b"data: {")]
    error = json.loads(events[-1][len(b"data: ") :])["error"]
    assert f"larger than {CAP} bytes" in error["message"]
    assert len(reply.body) < 2 * CAP
    upstream.close()


@pytest.mark.parametrize("handler", [_endless("application/json"), _announced])
def test_a_messages_answer_past_the_bound_is_a_502(handler: Handler) -> None:
    upstream = Upstream(handler)
    app = ProxyApp(f"{upstream.url}/v1", upstream_api="messages")
    body = {"model": "m", "max_tokens": 5, "messages": [USER], "tools": [_TOOL]}
    with served(app) as port:
        reply = post(port, "/v1/messages", body)
    assert reply.status == 502
    assert f"larger than {CAP} bytes" in reply.json()["error"]["message"]
    upstream.close()


def test_an_ordinary_messages_stream_past_the_bound_ends_with_an_error_event() -> None:
    """A request with no tool is relayed as it comes: past the bound, its stream ends with
    Anthropic's error event (and an endless answer is not read to its end)."""
    upstream = Upstream(_endless("text/event-stream"))
    app = ProxyApp(f"{upstream.url}/v1", upstream_api="messages")
    body = {"model": "m", "max_tokens": 5, "messages": [USER], "stream": True}
    with served(app) as port:
        reply = post(port, "/v1/messages", body)
    assert reply.status == 200
    assert b"event: error" in reply.body
    assert f"larger than {CAP} bytes".encode() in reply.body
    assert len(reply.body) < 2 * CAP
    upstream.close()


def test_a_pass_through_path_has_its_own_larger_bound() -> None:
    content = b"z" * (3 * CAP)

    def handle(conn: socket.socket, _: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(content) + content
        )

    upstream = Upstream(handle)
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        reply = request(port, b"GET /v1/files/file-1/content HTTP/1.1\r\nHost: x")
    assert reply.status == 200
    assert reply.body == content
    upstream.close()


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdks_platform_headers_never_go_upstream(stream: bool) -> None:
    """What the SDK would say of the proxy's host (OS, CPU, Python and SDK versions) is not
    sent: the direct path and the SDK's own ``post`` (a stream) alike."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    events = [
        b"data: "
        + json.dumps(
            {**chunk, "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]}
        ).encode(),
        b"data: [DONE]",
    ]
    upstream = Upstream(sse(events) if stream else answer(COMPLETION))
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        reply = post(port, "/v1/chat/completions", _chat(stream))
    assert reply.status == 200
    head = upstream.received[0].partition(b"\r\n\r\n")[0].decode().lower()
    names = {line.partition(":")[0] for line in head.split("\r\n")[1:]}
    sent = {name for name in names if name.startswith("x-stainless-")}
    kept = {"x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-raw-response"}
    assert sent <= kept, sent
    assert "x-stainless-retry-count" in sent
    assert "authorization" in names
    upstream.close()


@pytest.mark.parametrize("announced", [True, False])
def test_a_pass_through_answer_past_its_bound_is_a_502(
    monkeypatch: pytest.MonkeyPatch, announced: bool
) -> None:
    monkeypatch.setattr(upstream_http, "MAX_PASS_THROUGH_BYTES", 2 * CAP)
    handler = _announced if announced else _endless("application/octet-stream")
    upstream = Upstream(handler)
    with served(ProxyApp(f"{upstream.url}/v1")) as port:
        reply = request(port, b"GET /v1/files/file-1/content HTTP/1.1\r\nHost: x")
    assert reply.status == 502
    error = reply.json()["error"]
    assert error["code"] == "upstream_answer_too_large"
    assert f"larger than {2 * CAP} bytes" in error["message"]
    upstream.close()
