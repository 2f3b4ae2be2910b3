"""One model response of thousands of calls through the proxy (issue 27): wall time of the
request and the worst ``/healthz`` latency while it runs.

A raw upstream on 127.0.0.1 answers the first request with one response of N ``tool_search``
calls (10,000 distinct ids, or 16,000 sharing one id), then a plain text answer; the proxy
(``bot-toolsearch serve``, one worker, 1,000 tools) answers the searches it may and sends the
next request. A thread polls ``/healthz`` every 10 ms meanwhile. Before the fix: the loop
stalled 21 s with 10,000 searches (the next request 67 MB), and 16,000 same-id calls took
8-11 s with ``/healthz`` stalled 10 s.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

from ._table import Row
from .bench_wrap import _catalog, _port, _process

_TEXT = {
    "id": "c2",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}


def _calls(count: int, *, same_id: bool) -> bytes:
    calls = [
        {
            "id": "call_same" if same_id else f"call_{i}",
            "type": "function",
            "function": {"name": "tool_search", "arguments": json.dumps({"query": f"weather {i}"})},
        }
        for i in range(count)
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    reply = {**_TEXT, "id": "c1", "choices": [{"index": 0, "message": message}]}
    reply["choices"][0]["finish_reason"] = "tool_calls"
    return json.dumps(reply).encode()


class _Upstream:
    """Answers request 1 with ``first``, every later one with a text answer; keeps sizes."""

    def __init__(self, first: bytes) -> None:
        self.replies = [first]
        self.sizes: list[int] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(body) < length:
                    body += conn.recv(1 << 20)
                self.sizes.append(length)
                reply = self.replies.pop(0) if self.replies else json.dumps(_TEXT).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(reply), reply)
                )


def _healthz_worst(port: int, stop: threading.Event, worst: list[float]) -> None:
    import httpx

    with httpx.Client(timeout=120) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get(f"http://127.0.0.1:{port}/healthz")
            worst[0] = max(worst[0], time.perf_counter() - start)
            time.sleep(0.01)


def _one(label: str, first: bytes, tools: list[dict[str, Any]]) -> Row:
    import sys

    import httpx

    upstream = _Upstream(first)
    port = _port()
    serve = [sys.executable, "-m", "bot_toolsearch", "serve"]
    serve += ["--upstream", f"http://127.0.0.1:{upstream.port}/v1", "--port", str(port)]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    with _process(serve, port), httpx.Client(timeout=600) as client:
        worst = [0.0]
        stop = threading.Event()
        poller = threading.Thread(target=_healthz_worst, args=(port, stop, worst), daemon=True)
        poller.start()
        start = time.perf_counter()
        reply = client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
        wall = time.perf_counter() - start
        stop.set()
        poller.join()
    upstream.sock.close()
    assert reply.status_code == 200, reply.text[:300]
    second = upstream.sizes[1] if len(upstream.sizes) > 1 else 0
    return Row(
        "rounds",
        label,
        f"{wall:.2f} s",
        f"worst /healthz {worst[0] * 1e3:.0f} ms; next request {second / 1e3:.0f} kB",
    )


def run() -> list[Row]:
    tools = _catalog(1_000)
    if tools is None:
        return [Row("rounds", "skipped", "-", "scale catalog unavailable (see stderr)")]
    return [
        _one("10,000 tool_search calls in one response", _calls(10_000, same_id=False), tools),
        _one("16,000 calls sharing one id", _calls(16_000, same_id=True), tools),
    ]
