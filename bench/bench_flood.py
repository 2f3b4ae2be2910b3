"""A flood of keyless requests with lists just under the key probe's megabyte (issue 41, item 2):
what it costs a client with a key, and whether the proxy's memory stays bounded.

A legitimate client (key accepted, one 1,000-tool list, cached after its first request) sends
requests one after another through ``bot-toolsearch serve`` to a local instant upstream that
answers 401 to any other key. Its p95 latency is measured alone, then while ``FLOODERS``
keyless clients each send a distinct ``FLOOD_TOOLS``-tool list (about 0.96 MB, under the 1 MiB
above which the key is probed first) per request for ``FLOOD_SECONDS``. The proxy's resident
memory (RSS, Linux ``/proc``) is sampled every ``SAMPLE_EVERY`` seconds of the flood: it must
level off once the list cache is full (it grew 74 MB to 3.3 GB in 40 s before).

``python -m bench.bench_flood`` runs it on its own; ``BOT_TOOLSEARCH_EDGE_ROOT=/path/to/tree``
serves the proxy from another checkout (the same figures before a change).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from ._table import Row
from .bench_edge import ROOT, _attack, _legit, _rss_mb, _tools
from .bench_wrap import _pct, _port, _process

FLOOD_TOOLS = 1_600
FLOODERS = 4
FLOOD_SECONDS = 40
SAMPLE_EVERY = 10
LEGIT_TOOLS = 1_000
REQUESTS = 30


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
        {"model": "m", "messages": [user], "tools": _tools(FLOOD_TOOLS, "@TAG@")}
    ).encode()
    upstream = [py, "-m", "bench._instant_upstream", str(upstream_port), "--key", "sk-good"]
    serve = [
        *(py, "-m", "bot_toolsearch", "serve", "--port", str(proxy_port)),
        *("--upstream", f"http://127.0.0.1:{upstream_port}/v1", "--access-log", "off"),
    ]
    statuses: list[int] = []
    samples: list[float] = []
    attacked: list[float] = []
    with (
        _process(upstream, upstream_port, env),
        _process(serve, proxy_port, env) as proxy,
    ):
        _legit(url, legit, 3)  # the list is indexed and accepted
        time.sleep(2)
        before = _rss_mb(proxy.pid)
        alone = _legit(url, legit, REQUESTS)
        stop = threading.Event()
        flooders = [
            threading.Thread(target=_attack, args=(url, template, stop, k, statuses))
            for k in range(FLOODERS)
        ]
        for thread in flooders:
            thread.start()

        def legit_meanwhile() -> None:
            while not stop.is_set():
                attacked.extend(_legit(url, legit, 1))

        client = threading.Thread(target=legit_meanwhile)
        client.start()
        for _ in range(FLOOD_SECONDS // SAMPLE_EVERY):
            time.sleep(SAMPLE_EVERY)
            samples.append(_rss_mb(proxy.pid))
        stop.set()
        for thread in [*flooders, client]:
            thread.join(600)
    p95_alone, p95_attacked = _pct(alone, 0.95), _pct(attacked, 0.95)
    counts = {code: statuses.count(code) for code in sorted(set(statuses))}
    section = "flood (#41)"
    shown = " / ".join(f"{mb:.0f}" for mb in samples)
    return [
        Row(section, "legit p95 alone", f"{p95_alone * 1000:.0f} ms", f"{LEGIT_TOOLS} tools"),
        Row(
            section,
            f"legit p95, {FLOODERS} keyless flooders",
            f"{p95_attacked * 1000:.0f} ms",
            f"{FLOOD_TOOLS} distinct tools each ({len(template) / 1e6:.2f} MB); "
            f"keyless answers {counts}",
        ),
        Row(section, "legit p95 ratio", f"x{p95_attacked / p95_alone:.1f}", "flooded / alone"),
        Row(
            section,
            f"proxy RSS before, then every {SAMPLE_EVERY} s",
            f"{before:.0f} | {shown} MB",
            f"{FLOOD_SECONDS} s of flood",
        ),
    ]


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
