"""The drop-in client wrapper and the proxy (issue 12).

- Wrapper overhead per ``create`` call, the model excluded: the wrapper's own work for one
  call (projection, request, reading the reply) on real tools from ``_scale_catalog``, once
  with the caller's same list object (a plain openai loop), with new entries around the same
  ``parameters`` objects (a framework that rebuilds its tool list each call) and with an equal
  list parsed anew (the proxy). The first call's indexing is shown too.
- Proxy throughput against a local instant upstream (loopback only, bounded): requests/s and
  p50/p99 latency at 50 concurrent clients, 1 and 2 workers, 1,000 tools per request; the
  added latency is against the same requests sent straight to the upstream.
- First-request tokens sent upstream vs the caller's full list (o200k_base when the offline
  BPE is installed, else the ~4 characters per token estimate).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion

from bot_toolsearch._core.token_count import count_text, counter_label
from bot_toolsearch._wrap.engine import Engine

from ._table import Row, median_seconds, us

CLIENTS = 50
REQUESTS = 400
ROOT = Path(__file__).resolve().parents[1]


def _catalog(n: int) -> list[dict[str, Any]] | None:
    try:
        from ._scale_catalog import load_scale_catalog

        return [dict(s) for s in load_scale_catalog(n)]
    except Exception as exc:  # the BFCL wheel or the dev extra is missing
        print(f"bench_wrap: scale catalog unavailable: {exc}", file=sys.stderr)
        return None


def _reply(name: str) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": name, "arguments": "{}"},
                            }
                        ],
                    },
                }
            ],
        }
    )


def _overhead(tools: list[dict[str, Any]]) -> tuple[float, float, float, float]:
    engine = Engine()
    called = tools[3]["function"]["name"]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Do it."},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": called, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    reply = _reply(called)

    def one(tool_list: list[dict[str, Any]]) -> None:
        plan = engine.chat_plan({"model": "m", "messages": messages, "tools": tool_list})
        assert plan is not None
        plan.request()
        assert plan.feed(reply.model_copy(deep=True)) is not None

    start = time.perf_counter()
    one(tools)
    first = time.perf_counter() - start
    same = median_seconds(lambda: one(tools), repeat=200)
    # A framework (openai-agents, pydantic-ai) builds new entries around its tools' own
    # ``parameters`` objects on every call.
    rebuilt = [[{**tool, "function": {**tool["function"]}} for tool in tools] for _ in range(5)]
    it = iter(range(10**9))
    framework = median_seconds(lambda: one(rebuilt[next(it) % 5]), repeat=50)
    # The proxy parses every request anew: nothing is shared with the cached list.
    parsed = [copy.deepcopy(tools) for _ in range(5)]
    fresh = median_seconds(lambda: one(parsed[next(it) % 5]), repeat=50)
    # copying the reply is part of the loop above; measure and subtract it
    copy_cost = median_seconds(lambda: reply.model_copy(deep=True), repeat=200)
    return (
        first,
        max(0.0, same - copy_cost),
        max(0.0, framework - copy_cost),
        max(0.0, fresh - copy_cost),
    )


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _process(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{args} did not start")
        yield
    finally:
        proc.terminate()
        proc.wait(10)


async def _load(url: str, body: bytes) -> tuple[float, list[float]]:
    import httpx

    latencies: list[float] = []
    queue = iter(range(REQUESTS))
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def worker() -> None:
            headers = {"authorization": "Bearer k", "content-type": "application/json"}
            for _ in queue:
                start = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CLIENTS)))
        return time.perf_counter() - start, latencies


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _proxy_rows(tools: list[dict[str, Any]]) -> list[Row]:
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    ).encode()
    rows: list[Row] = []
    upstream_port = _port()
    py = sys.executable
    with _process([py, "-m", "bench._instant_upstream", str(upstream_port)], upstream_port):
        upstream = f"http://127.0.0.1:{upstream_port}/v1"
        _, direct = asyncio.run(_load(f"{upstream}/chat/completions", body))
        d50, d99 = _pct(direct, 0.5), _pct(direct, 0.99)
        rows.append(
            Row(
                "wrap",
                "direct to upstream, 1,000 tools, 50 clients",
                f"p50 {d50 * 1e3:.1f} ms",
                f"p99 {d99 * 1e3:.1f} ms",
            )
        )
        for workers in (1, 2):
            port = _port()
            cli = [py, "-m", "bot_toolsearch", "serve", "--upstream", upstream]
            cli += ["--port", str(port), "--workers", str(workers)]
            env = dict(os.environ)
            with _process(cli, port, env):
                url = f"http://127.0.0.1:{port}/v1/chat/completions"
                asyncio.run(_load(url, body))  # warm-up: each worker indexes the list once
                elapsed, lat = asyncio.run(_load(url, body))
            p50, p99 = _pct(lat, 0.5), _pct(lat, 0.99)
            rows.append(
                Row(
                    "wrap",
                    f"proxy, {workers} worker(s), 1,000 tools, 50 clients",
                    f"{REQUESTS / elapsed:.0f} req/s",
                    f"p50 {p50 * 1e3:.1f} ms (+{(p50 - d50) * 1e3:.1f}), "
                    f"p99 {p99 * 1e3:.1f} ms (+{(p99 - d99) * 1e3:.1f})",
                )
            )
    return rows


def _token_rows(tools: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    for n in (100, 1_000):
        subset = tools[:n]
        engine = Engine()
        messages = [{"role": "user", "content": "hi"}]
        plan = engine.chat_plan({"model": "m", "messages": messages, "tools": subset})
        assert plan is not None
        request = plan.request()
        compact = {"ensure_ascii": False, "separators": (",", ":")}
        full = count_text(json.dumps(subset, **compact) + json.dumps(messages, **compact))
        sent = count_text(
            json.dumps(request["tools"], **compact) + json.dumps(request["messages"], **compact)
        )
        rows.append(
            Row(
                "wrap",
                f"first-request tokens, {n:,} tools",
                f"{sent:,} vs {full:,}",
                f"{100 * (sent - full) / full:+.0f}% ({counter_label()})",
            )
        )
    return rows


def run() -> list[Row]:
    tools = _catalog(10_000)
    if tools is None:
        return [Row("wrap", "skipped", "-", "scale catalog unavailable (see stderr)")]
    rows: list[Row] = []
    for n in (1_000, 10_000):
        first, same, framework, fresh = _overhead(tools[:n])
        rows.append(Row("wrap", f"create overhead, {n:,} tools, same list", us(same), "median"))
        rows.append(
            Row(
                "wrap",
                f"create overhead, {n:,} tools, list rebuilt by a framework",
                us(framework),
                "median (new entries, same parameters objects)",
            )
        )
        rows.append(
            Row(
                "wrap",
                f"create overhead, {n:,} tools, list parsed anew (proxy)",
                us(fresh),
                "median (nothing shared)",
            )
        )
        rows.append(Row("wrap", f"first call (indexing), {n:,} tools", f"{first * 1e3:.0f} ms", ""))
    rows.extend(_token_rows(tools))
    rows.extend(_proxy_rows(tools[:1_000]))
    return rows
