"""Keyless clients against the proxy (issue 27): what strangers without a key cost a client
with one.

A legitimate client (key accepted, one 1,000-tool list, cached after its first request) sends
requests one after another through ``bot-toolsearch serve`` to a local instant upstream that
answers 401 to any other key. Its p95 latency is measured alone, then while four keyless
clients each send a distinct ``ATTACK_TOOLS``-tool list per request (the upstream answers them
401), and the ratio of the two is the figure. The proxy's resident memory (RSS, Linux
``/proc``) is read before, at its peak during, and a few seconds after the attack.

``python -m bench.bench_edge`` runs it on its own; ``BOT_TOOLSEARCH_EDGE_ROOT=/path/to/tree``
serves the proxy from another checkout (the same figure before a change).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ._table import Row
from .bench_wrap import _pct, _port, _process

ATTACK_TOOLS = 20_000
ATTACKERS = 4
LEGIT_TOOLS = 1_000
REQUESTS = 60
ROOT = Path(os.environ.get("BOT_TOOLSEARCH_EDGE_ROOT") or Path(__file__).resolve().parents[1])
_WORDS = (
    "search",
    "send",
    "read",
    "write",
    "file",
    "user",
    "mail",
    "event",
    "order",
    "stock",
    "price",
    "report",
    "list",
    "create",
    "update",
    "delete",
    "query",
    "fetch",
    "sync",
    "share",
    "invite",
    "archive",
    "restore",
    "export",
    "import",
    "calendar",
    "ticket",
    "invoice",
    "payment",
    "customer",
    "account",
    "record",
    "alpha",
    "beta",
    "gamma",
    "delta",
)


def _tools(n: int, tag: str) -> list[dict[str, Any]]:
    """``n`` tools of a typical size (about 600 bytes of JSON each); ``tag`` in every name."""
    out = []
    for i in range(n):
        words = [_WORDS[(i * 7 + k * 13) % len(_WORDS)] for k in range(30)]
        props = {
            f"{_WORDS[(i + j) % len(_WORDS)]}_{j}": {
                "type": "string",
                "description": " ".join(words[j : j + 6]),
            }
            for j in range(3)
        }
        out.append(
            {
                "type": "function",
                "function": {
                    "name": f"ns{i % 50}.{_WORDS[i % len(_WORDS)]}_{i}_{tag}",
                    "description": " ".join(words),
                    "parameters": {"type": "object", "properties": props},
                },
            }
        )
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _legit(url: str, body: bytes, count: int) -> list[float]:
    import httpx

    headers = {"authorization": "Bearer sk-good", "content-type": "application/json"}
    latencies = []
    with httpx.Client(timeout=300) as client:
        for _ in range(count):
            start = time.perf_counter()
            response = client.post(url, content=body, headers=headers)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
            latencies.append(time.perf_counter() - start)
    return latencies


def _attack(url: str, template: bytes, stop: threading.Event, who: int, sent: list[int]) -> None:
    import httpx

    headers = {"content-type": "application/json"}  # no key
    n = 0
    with httpx.Client(timeout=300) as client:
        while not stop.is_set():
            body = template.replace(b"@TAG@", f"a{who}x{n}".encode())
            n += 1
            response = client.post(url, content=body, headers=headers)
            sent.append(response.status_code)


def run() -> list[Row]:
    py = sys.executable
    upstream_port, proxy_port = _port(), _port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    url = f"http://127.0.0.1:{proxy_port}/v1/chat/completions"
    user = {"role": "user", "content": "hi"}
    legit = json.dumps(
        {"model": "m", "messages": [user], "tools": _tools(LEGIT_TOOLS, "legit")}
    ).encode()
    template = json.dumps(
        {"model": "m", "messages": [user], "tools": _tools(ATTACK_TOOLS, "@TAG@")}
    ).encode()
    upstream = [py, "-m", "bench._instant_upstream", str(upstream_port), "--key", "sk-good"]
    serve = [
        *(py, "-m", "bot_toolsearch", "serve", "--port", str(proxy_port)),
        *("--upstream", f"http://127.0.0.1:{upstream_port}/v1"),
    ]
    statuses: list[int] = []
    with (
        _process(upstream, upstream_port, env),
        _process(serve, proxy_port, env) as proxy,
    ):
        _legit(url, legit, 3)  # the list is indexed and accepted
        time.sleep(2)
        before = _rss_mb(proxy.pid)
        alone = _legit(url, legit, REQUESTS)
        stop = threading.Event()
        attackers = [
            threading.Thread(target=_attack, args=(url, template, stop, k, statuses))
            for k in range(ATTACKERS)
        ]
        for thread in attackers:
            thread.start()
        peak = before
        sampling = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not sampling.wait(0.2):
                peak = max(peak, _rss_mb(proxy.pid))

        sampler = threading.Thread(target=sample)
        sampler.start()
        time.sleep(3)  # the attack is under way
        attacked = _legit(url, legit, REQUESTS)
        stop.set()
        for thread in attackers:
            thread.join(600)
        sampling.set()
        sampler.join()
        time.sleep(5)
        after = _rss_mb(proxy.pid)
    p95_alone, p95_attacked = _pct(alone, 0.95), _pct(attacked, 0.95)
    mb = f"{len(template) / 1e6:.1f} MB"
    counts = {code: statuses.count(code) for code in sorted(set(statuses))}
    section = "edge (#27)"
    return [
        Row(section, "legit p95 alone", f"{p95_alone * 1000:.0f} ms", f"{LEGIT_TOOLS} tools"),
        Row(
            section,
            f"legit p95, {ATTACKERS} keyless clients",
            f"{p95_attacked * 1000:.0f} ms",
            f"{ATTACK_TOOLS} distinct tools each ({mb}); keyless answers {counts}",
        ),
        Row(section, "legit p95 ratio", f"x{p95_attacked / p95_alone:.2f}", "attacked / alone"),
        Row(
            section,
            "proxy RSS before / peak / after",
            f"{before:.0f} / {peak:.0f} / {after:.0f} MB",
        ),
    ]


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
