"""The native dialect at the proxy's edge (issue 41): what a repeated ``defer_loading`` list
costs against the same list as plain tools, and how a resent ``tool_search_output`` scales.

1. CPU per request: ``bot-toolsearch serve`` in front of a local instant upstream, one client
   sending the same 1,000-tool Chat Completions list ``REQUESTS`` times, first as plain tools,
   then with ``defer_loading`` on every tool but two; the proxy's CPU seconds per request
   (Linux ``/proc``) and their ratio. A repeated list is parsed once in both cases.
2. Scaling of a client-made ``tool_search_output`` that "loads" N tools: the seconds to make
   such a request ordinary (`parse_native`) at ``N`` and ``2N`` tools, and their ratio
   (about 2 when linear, about 4 when quadratic).
3. ``/healthz`` while one such request of ``ATTACK`` tools (under 1 MiB, ``--max-tools``
   raised so that it is served) is processed: its slowest answer against its median alone.

``python -m bench.bench_native`` runs it on its own; ``BOT_TOOLSEARCH_NATIVE_ROOT=/path/to/tree``
measures another checkout (the same figures before a change).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._table import Row
from .bench_edge import _tools
from .bench_wrap import _cpu_seconds, _port, _process

REQUESTS = 40
ATTACK = 20_000
TOOLS = 1_000
SCALE = 10_000
ROOT = Path(os.environ.get("BOT_TOOLSEARCH_NATIVE_ROOT") or Path(__file__).resolve().parents[1])

_SCALING = """
import json, sys, time
from bot_toolsearch._wrap.native import parse_native

def request(n):
    tools = [{"type": "function", "name": f"t{i}", "description": "d",
              "parameters": {"type": "object", "properties": {}}} for i in range(n)]
    output = {"type": "tool_search_output", "call_id": "c1", "execution": "client",
              "tools": tools}
    return {"model": "m", "input": [{"role": "user", "content": "x"}, output],
            "tools": [{"type": "tool_search", "execution": "client"}]}

times = []
for n in (int(sys.argv[1]), 2 * int(sys.argv[1])):
    kwargs = request(n)
    start = time.perf_counter()
    parse_native(kwargs, "responses")
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def _deferred(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        tool if i < 2 else {**tool, "function": {**tool["function"], "defer_loading": True}}
        for i, tool in enumerate(tools)
    ]


def _cpu_per_request(url: str, body: bytes, pid: int) -> float:
    import httpx

    headers = {"authorization": "Bearer k", "content-type": "application/json"}
    with httpx.Client(timeout=120) as client:
        for _ in range(3):  # indexed, accepted, bytes remembered
            client.post(url, content=body, headers=headers).raise_for_status()
        before = _cpu_seconds(pid)
        for _ in range(REQUESTS):
            client.post(url, content=body, headers=headers).raise_for_status()
        return (_cpu_seconds(pid) - before) / REQUESTS


def _healthz(port: int, body: bytes) -> tuple[float, float, float]:
    """``/healthz`` latency alone (median) and while one heavy request is served (slowest),
    and that request's seconds."""
    import threading

    import httpx

    url = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=300) as client:
        alone = []
        for _ in range(20):
            start = time.perf_counter()
            client.get(f"{url}/healthz").raise_for_status()
            alone.append(time.perf_counter() - start)
        done = threading.Event()
        took: list[float] = []

        def heavy() -> None:
            start = time.perf_counter()
            with httpx.Client(timeout=300) as own:
                headers = {"authorization": "Bearer k", "content-type": "application/json"}
                own.post(f"{url}/v1/responses", content=body, headers=headers)
            took.append(time.perf_counter() - start)
            done.set()

        thread = threading.Thread(target=heavy)
        thread.start()
        during = []
        while not done.is_set():
            start = time.perf_counter()
            client.get(f"{url}/healthz").raise_for_status()
            during.append(time.perf_counter() - start)
            time.sleep(0.02)
        thread.join()
    alone.sort()
    return alone[len(alone) // 2], max(during, default=0.0), took[0]


def run() -> list[Row]:
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    upstream_port, proxy_port = _port(), _port()
    user = {"role": "user", "content": "hi"}
    plain = _tools(TOOLS, "p")
    bodies = {
        kind: json.dumps({"model": "m", "messages": [user], "tools": tools}).encode()
        for kind, tools in (("plain", plain), ("defer_loading", _deferred(plain)))
    }
    serve = [
        *(py, "-m", "bot_toolsearch", "serve", "--port", str(proxy_port)),
        *("--upstream", f"http://127.0.0.1:{upstream_port}/v1"),
    ]
    url = f"http://127.0.0.1:{proxy_port}/v1/chat/completions"
    cpu: dict[str, float] = {}
    with (
        _process([py, "-m", "bench._instant_upstream", str(upstream_port)], upstream_port, env),
        _process(serve, proxy_port, env) as proxy,
    ):
        for kind, body in bodies.items():
            cpu[kind] = _cpu_per_request(url, body, proxy.pid)
    tools = [{"type": "function", "name": f"t{i}"} for i in range(ATTACK)]
    output = {"type": "tool_search_output", "call_id": "c", "execution": "client", "tools": tools}
    attack = json.dumps(
        {"model": "m", "input": [user, output], "tools": [{"type": "tool_search"}]}
    ).encode()
    proxy_port = _port()
    serve = [*serve[:5], str(proxy_port), *serve[6:], "--max-tools", str(2 * ATTACK)]
    with (
        _process([py, "-m", "bench._instant_upstream", str(upstream_port)], upstream_port, env),
        _process(serve, proxy_port, env),
    ):
        calm, stalled, heavy = _healthz(proxy_port, attack)
    scaling = subprocess.run(
        [py, "-c", _SCALING, str(SCALE)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        check=True,
        text=True,
    )
    single, double = json.loads(scaling.stdout)
    section = "native (#41)"
    return [
        Row(section, "proxy CPU/request, plain list", f"{cpu['plain'] * 1e3:.2f} ms", f"{TOOLS}"),
        Row(
            section,
            "proxy CPU/request, defer_loading list",
            f"{cpu['defer_loading'] * 1e3:.2f} ms",
            f"the same {TOOLS} tools, deferred",
        ),
        Row(
            section,
            "defer_loading / plain CPU",
            f"x{cpu['defer_loading'] / max(cpu['plain'], 1e-9):.2f}",
            "the same list repeated",
        ),
        Row(
            section,
            f"tool_search_output of {SCALE:,} tools made ordinary",
            f"{single * 1e3:.0f} ms",
            f"{2 * SCALE:,}: {double * 1e3:.0f} ms, x{double / max(single, 1e-9):.2f}",
        ),
        Row(
            section,
            f"/healthz during one {len(attack) // 1024:,} KiB request of {ATTACK:,} resent tools",
            f"{stalled * 1e3:.0f} ms",
            f"alone {calm * 1e3:.1f} ms (x{stalled / max(calm, 1e-9):.0f});"
            f" the request {heavy:.1f} s",
        ),
    ]


if __name__ == "__main__":
    started = time.perf_counter()
    for row in run():
        print(f"{row.metric:<45} {row.value:>12}  {row.note}")
    print(f"[{time.perf_counter() - started:.1f} s]", file=sys.stderr)
