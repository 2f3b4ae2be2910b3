"""Slow bodies against the in-flight bound (issue 41, item 4): sockets that send a head and
drip the body, one byte a second, past ``serve``'s default ``--max-in-flight`` (256).

``DRIPPERS`` such sockets are opened; then a legitimate client sends ``REQUESTS`` requests one
after another, and the figure is how many were answered 200 (before: none, each 429, for as
long as the drip lasted). Then the drippers are watched up to ``WATCH`` seconds: how many
were answered 408 and closed at the read deadline (``--read-timeout``, 30 s by default).

``python -m bench.bench_drip`` runs it on its own; ``BOT_TOOLSEARCH_EDGE_ROOT=/path/to/tree``
serves the proxy from another checkout (the same figures before a change).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from ._table import Row
from .bench_edge import ROOT
from .bench_wrap import _pct, _port, _process

DRIPPERS = 260
REQUESTS = 30
WATCH = 45.0
_HEAD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100000\r\n\r\n{"
)


def _drip(sockets: list[socket.socket], answers: dict[int, bytes]) -> None:
    """One byte to each open dripper; what each was answered so far (an empty read: closed)."""
    for sock in sockets:
        key = sock.fileno()
        if key < 0 or answers.get(key, b"").endswith(b"<closed>"):
            continue
        try:
            data = sock.recv(65536)
            answers[key] = answers.get(key, b"") + (data or b"<closed>")
            continue
        except BlockingIOError:
            pass
        except OSError:
            answers[key] = answers.get(key, b"") + b"<closed>"
            continue
        try:
            sock.send(b" ")
        except OSError:
            answers[key] = answers.get(key, b"") + b"<closed>"


def run() -> list[Row]:
    import httpx

    py = sys.executable
    upstream_port, proxy_port = _port(), _port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    serve = [
        *(py, "-m", "bot_toolsearch", "serve", "--port", str(proxy_port)),
        *("--upstream", f"http://127.0.0.1:{upstream_port}/v1", "--access-log", "off"),
    ]
    url = f"http://127.0.0.1:{proxy_port}/v1/chat/completions"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    answers: dict[int, bytes] = {}
    statuses: list[int] = []
    latencies: list[float] = []
    upstream = [py, "-m", "bench._instant_upstream", str(upstream_port)]
    with _process(upstream, upstream_port, env), _process(serve, proxy_port, env):
        sockets = []
        for _ in range(DRIPPERS):
            sock = socket.create_connection(("127.0.0.1", proxy_port))
            sock.sendall(_HEAD)
            sock.setblocking(False)
            sockets.append(sock)
        started = time.monotonic()
        time.sleep(2)  # every head is in
        headers = {"content-type": "application/json", "authorization": "Bearer sk-x"}
        with httpx.Client(timeout=60) as client:
            for _ in range(REQUESTS):
                begin = time.perf_counter()
                statuses.append(client.post(url, content=body, headers=headers).status_code)
                latencies.append(time.perf_counter() - begin)
                _drip(sockets, answers)
        while time.monotonic() - started < WATCH:
            _drip(sockets, answers)
            if sum(a.endswith(b"<closed>") for a in answers.values()) == DRIPPERS:
                break
            time.sleep(1)
        ended = time.monotonic() - started
        for sock in sockets:
            sock.close()
    ok = statuses.count(200)
    refused = sum(a.startswith(b"HTTP/1.1 408") for a in answers.values())
    closed = sum(a.endswith(b"<closed>") for a in answers.values())
    counts = {code: statuses.count(code) for code in sorted(set(statuses))}
    section = "drip (#41)"
    return [
        Row(
            section,
            f"legit requests answered 200, {DRIPPERS} drippers",
            f"{ok} / {REQUESTS}",
            f"{counts}; p95 {_pct(latencies, 0.95) * 1000:.0f} ms",
        ),
        Row(
            section,
            "drippers answered 408 / closed",
            f"{refused} / {closed} of {DRIPPERS}",
            f"watched {ended:.0f} s (--read-timeout 30 s)",
        ),
    ]


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
