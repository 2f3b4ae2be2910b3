"""The drop-in client wrapper and the proxy (issue 12).

- Wrapper overhead per ``create`` call, the model excluded: the wrapper's own work for one
  call (projection, request, reading the reply) on real tools from ``_scale_catalog``, once
  with the caller's same list object (a plain openai loop), with new entries around the same
  ``parameters`` objects (a framework that rebuilds its tool list each call) and with an equal
  list parsed anew (the proxy). The first call's indexing is shown too.
- The proxy's own cost against a byte pass-through on the same stack (issue 44), an instant
  local upstream (loopback only, bounded), 50 clients, 769 and 10,000 tools per request:
  interleaved rounds after a warm-up, median CPU per request and requests/s with their
  ratios, and the p50/p99 latency the proxy adds (`_proxy_rows`).
- First-request tokens sent upstream vs the caller's full list (o200k_base when the offline
  BPE is installed, else the ~4 characters per token estimate).
- The prompt-cache workload of ``bench_cache`` as one conversation through the wrapper, per
  API and loading mode (the provider's cache across ``create`` calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import socket
import statistics
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
ROUNDS = 5
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
def _process(
    args: list[str], port: int, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
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
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _load(url: str, body: bytes, requests: int = REQUESTS) -> tuple[float, list[float]]:
    import httpx

    latencies: list[float] = []
    queue = iter(range(requests))
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def worker() -> None:
            headers = {"authorization": "Bearer k", "content-type": "application/json"}
            for _ in queue:
                start = time.perf_counter()
                try:
                    response = await client.post(url, content=body, headers=headers)
                except httpx.TransportError:  # a keep-alive connection the server closed
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


def _proxy_rows(
    tools: list[dict[str, Any]], rounds: int = ROUNDS, requests: int = REQUESTS
) -> list[Row]:
    """The proxy against a minimal pass-through (`bench._passthrough`) of the same requests,
    same stack (uvicorn, one worker, the SDK's HTTP client), same instant upstream, same run
    (issue 44): both servers up at once and warmed by a first round each, then `ROUNDS`
    rounds of `REQUESTS` requests from `CLIENTS` clients, the two servers taking turns (the
    order alternating). Both log nothing per request (``serve --log-level warning``: the
    rounds and access logs cost nothing when nobody reads them). Reported: median server
    CPU per request and requests/s of each, the median of the per-round ratios with their
    spread (the machine is shared, so one round says little), and the latency the proxy
    adds to the pass-through's (p50/p99)."""
    n = len(tools)
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    ).encode()
    py = sys.executable
    upstream_port, base_port, proxy_port = _port(), _port(), _port()
    upstream = f"http://127.0.0.1:{upstream_port}/v1"
    base_args = [py, "-m", "bench._passthrough", str(base_port), upstream]
    proxy_args = [py, "-m", "bot_toolsearch", "serve", "--upstream", upstream]
    proxy_args += ["--port", str(proxy_port), "--workers", "1", "--log-level", "warning"]
    env = dict(os.environ)
    with (
        _process([py, "-m", "bench._instant_upstream", str(upstream_port)], upstream_port),
        _process(base_args, base_port, env) as base,
        _process(proxy_args, proxy_port, env) as proxy,
    ):
        servers = {
            "pass-through": (base.pid, f"http://127.0.0.1:{base_port}/v1/chat/completions"),
            "proxy": (proxy.pid, f"http://127.0.0.1:{proxy_port}/v1/chat/completions"),
        }
        for _, url in servers.values():  # warm-up: the proxy indexes the list once
            asyncio.run(_load(url, body, requests))
        figures: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in servers}
        for round_ in range(rounds):
            order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
            for name in order:
                pid, url = servers[name]
                cpu = _cpu_seconds(pid)
                elapsed, lat = asyncio.run(_load(url, body, requests))
                cpu = (_cpu_seconds(pid) - cpu) / requests
                figures[name].append((cpu, requests / elapsed, _pct(lat, 0.5), _pct(lat, 0.99)))
    rows: list[Row] = []
    median = statistics.median
    for name, seen in figures.items():
        rows.append(
            Row(
                "wrap",
                f"{name}, 1 worker, {n:,} tools, {CLIENTS} clients",
                f"{median(r[1] for r in seen):.0f} req/s",
                f"CPU {median(r[0] for r in seen) * 1e3:.2f} ms/request, "
                f"p50 {median(r[2] for r in seen) * 1e3:.1f} ms, "
                f"p99 {median(r[3] for r in seen) * 1e3:.1f} ms "
                f"(median of {rounds} rounds of {requests})",
            )
        )
    pairs = list(zip(figures["proxy"], figures["pass-through"], strict=True))
    cpu_ratios = sorted(p[0] / b[0] for p, b in pairs if b[0] > 0)
    rate_ratios = sorted(p[1] / b[1] for p, b in pairs)
    added50 = median(p[2] - b[2] for p, b in pairs)
    added99 = median(p[3] - b[3] for p, b in pairs)
    rows.append(
        Row(
            "wrap",
            f"proxy / pass-through, {n:,} tools (interleaved)",
            f"CPU/request x{median(cpu_ratios):.2f}" if cpu_ratios else "CPU/request -",
            f"rounds x{cpu_ratios[0]:.2f}-x{cpu_ratios[-1]:.2f}" if cpu_ratios else "",
        )
    )
    rows.append(
        Row(
            "wrap",
            f"proxy / pass-through, {n:,} tools (interleaved)",
            f"req/s x{median(rate_ratios):.2f}",
            f"rounds x{rate_ratios[0]:.2f}-x{rate_ratios[-1]:.2f}; added latency "
            f"p50 {added50 * 1e3:+.1f} ms, p99 {added99 * 1e3:+.1f} ms",
        )
    )
    return rows


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "-"


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
        rows.append(
            Row(
                "wrap",
                f"first call (indexing), {n:,} tools",
                f"{first * 1e3:.0f} ms",
                "the list's catalog and search index",
            )
        )
    rows.extend(_token_rows(tools))
    rows.extend(_proxy_rows(tools[:769]))
    rows.extend(_proxy_rows(tools[:10_000], rounds=3, requests=100))  # 4 MB bodies: fewer
    rows.extend(_cache_rows())
    return rows


# -- prompt cache through the wrapper ---------------------------------------------------------


def _cache_rows() -> list[Row]:
    """The cache table's workload through the wrapper, one conversation the caller resends.

    The same three asks as ``bench_cache`` (search A, call A, search B, call B, reply; search C,
    call C, reply; reply), at 769 tools, but as one conversation: a plain caller loop keeps the
    whole history (Chat Completions messages; Responses input with ``store=False``) and resends
    it on every ``create`` call, as a framework does. Each mode's figures are summed over every
    upstream request, hidden rounds included.
    """
    from .bench_cache import DATA, build_workload, catalog_schemas

    if not (DATA / "catalog.json").is_file():
        return [Row("wrap", "prompt cache through the wrapper", "skipped", f"no catalog in {DATA}")]
    rows: list[Row] = []
    for api in ("chat_completions", "responses"):
        modes = ["-", "append", "bridge"] + (["additional_tools"] if api == "responses" else [])
        for mode in modes:
            workload = build_workload(769, tool_search=mode != "-", loading_mode=mode)
            schemas = catalog_schemas(769)
            figures = asyncio.run(wrapped_conversation(workload, api, mode, schemas))
            prompt, cached, cost, requests = figures
            label = "search off" if mode == "-" else f"search on, {mode}"
            rows.append(
                Row(
                    "wrap",
                    f"wrapper conversation, 769 tools, {api}, {label}",
                    f"{prompt:,}",
                    f"{requests} requests; cached {cached:,} ({cached / prompt:.0%}); "
                    f"cost {cost:,.0f} (cached 0.1x)",
                )
            )
    return rows


async def wrapped_conversation(
    workload: Any, api: str, mode: str, schemas: list[dict[str, Any]]
) -> tuple[int, int, float, int]:
    """``(input tokens, cached tokens, cost, upstream requests)`` of the workload's asks as one
    conversation through the wrapper in loading mode ``mode`` (``"-"``: tool search off)."""
    import httpx
    import openai

    from bot_toolsearch import BotSettings, wrap_openai
    from bot_toolsearch.testing import ScriptedOpenAIServer

    from .bench_cache import CACHED_RATE, INSTRUCTIONS, _Model

    usages: list[tuple[int, int]] = []

    async def record(response: httpx.Response) -> None:
        body = json.loads(await response.aread())
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        prompt = usage.get("prompt_tokens", usage.get("input_tokens", 0))
        usages.append((int(prompt), int(details.get("cached_tokens", 0))))

    skills: dict[str, Any] = {"tool_search_enabled": mode != "-"}
    if mode not in ("-", "append"):
        skills["tool_search_loading"] = mode
    settings = BotSettings.model_validate({"skills": skills})
    tools: list[Any] = (
        schemas
        if api == "chat_completions"
        else [{"type": "function", "strict": False, **s["function"]} for s in schemas]
    )
    model = _Model(workload)
    with ScriptedOpenAIServer(model, prompt_cache=True) as server:
        http = httpx.AsyncClient(event_hooks={"response": [record]})
        inner = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="bench", max_retries=0, http_client=http
        )
        client = wrap_openai(inner, settings=settings)
        history: list[Any] = [{"role": "system", "content": INSTRUCTIONS}] if api[0] == "c" else []
        for message, steps in workload.asks:
            model.expect(steps)
            history.append({"role": "user", "content": message})
            while True:
                names = await _turn(client, api, history, tools)
                if not names:
                    break
        await client.close()
        server.assert_consumed()
    prompt = sum(p for p, _ in usages)
    cached = sum(c for _, c in usages)
    return prompt, cached, (prompt - cached) + CACHED_RATE * cached, len(usages)


async def _turn(client: Any, api: str, history: list[Any], tools: list[Any]) -> list[str]:
    """One caller ``create`` call: the reply joins the history, the caller runs its calls."""
    from .bench_cache import INSTRUCTIONS, _result

    if api == "chat_completions":
        completion = await client.chat.completions.create(model="m", messages=history, tools=tools)
        message = completion.choices[0].message
        history.append(message.model_dump(exclude_none=True))
        calls = message.tool_calls or []
        for c in calls:
            history.append(
                {"role": "tool", "tool_call_id": c.id, "content": _result(c.function.name)}
            )
        return [c.function.name for c in calls]
    response = await client.responses.create(
        model="m", instructions=INSTRUCTIONS, input=history, tools=tools, store=False
    )
    history.extend(item.model_dump(exclude_none=True) for item in response.output)
    calls = [item for item in response.output if item.type == "function_call"]
    for c in calls:
        history.append(
            {"type": "function_call_output", "call_id": c.call_id, "output": _result(c.name)}
        )
    return [c.name for c in calls]


if __name__ == "__main__":  # python -m bench.bench_wrap proxy [N]: the proxy rows alone
    from ._table import render

    if sys.argv[1:2] == ["proxy"]:
        size = int(sys.argv[2]) if len(sys.argv) > 2 else 769
        counts = [int(a) for a in sys.argv[3:5]]  # rounds, requests
        print(render(_proxy_rows((_catalog(size) or [])[:size], *counts)))
