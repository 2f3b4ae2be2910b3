"""The tool-search middleware's own work per round with a 5,000-tool catalog (no HTTP).

Per round: ``prepare_request`` (tools list, directory message) and ``handle_calls`` with one
``tool_search`` call and one call to a deferred tool, passed to an in-process next handler
that answers at once. Also the per-ask setup (``start_ask``: session, directory) and the
host's per-ask filter with a permission hook. Target: < 1 ms median per round.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence

from bot_toolsearch import BotSettings, Tool
from bot_toolsearch._protocol.calls import CallRequest, CallResult
from bot_toolsearch._runtime.context import AskContext
from bot_toolsearch._runtime.middleware import Pipeline, RoundRequest
from bot_toolsearch._runtime.tool_search import ToolSearchMiddleware
from bot_toolsearch._runtime.toolset import ToolSet, permitted_names

from ._table import Row, us

TOOLS = 5_000
ASKS = 200
ROUNDS = 3


def _catalog() -> ToolSet:
    tools = [
        Tool(
            f"ns{i % 50}.tool_{i}",
            f"Does task number {i} for namespace {i % 50}.",
            {"type": "object", "properties": {"arg": {"type": "string", "description": "x"}}},
            lambda **_: "ok",
        )
        for i in range(TOOLS)
    ]
    return ToolSet.build(tools, ())


async def _next(_ctx: AskContext, calls: Sequence[CallRequest]) -> list[CallResult]:
    return [CallResult(c.id, c.name, "ok", "ran") for c in calls]


async def _measure_patterns() -> float:
    """Per ask, no hook: ``[tools] allow``/``deny`` plus the host's filtered view (cached)."""
    toolset = _catalog()
    settings = BotSettings.model_validate(
        {"tools": {"allow": ["ns*", "other*"], "deny": ["ns1.*"]}}
    )
    samples: list[float] = []
    for _ in range(ASKS):
        begin = time.perf_counter()
        permitted = await permitted_names(toolset, settings, {}, None)
        toolset.view(permitted)
        samples.append(time.perf_counter() - begin)
    return statistics.median(samples)


async def _measure() -> tuple[list[float], list[float], list[float]]:
    toolset = _catalog()
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    pipeline = Pipeline([ToolSearchMiddleware()], _next)
    history = ({"role": "system", "content": "bot"}, {"role": "user", "content": "hi"})
    permitted = frozenset(toolset.entries)
    rounds: list[float] = []
    starts: list[float] = []
    filters: list[float] = []
    for ask in range(ASKS):
        begin = time.perf_counter()
        allowed = await permitted_names(
            toolset, settings, {}, lambda _ctx, names: [n for n in names if n != "ns0.tool_0"]
        )
        filters.append(time.perf_counter() - begin)
        del allowed
        ctx = AskContext(settings, {}, toolset, permitted, system_prompt_count=1)
        begin = time.perf_counter()
        await pipeline.start_ask(ctx)
        starts.append(time.perf_counter() - begin)
        for index in range(1, ROUNDS + 1):
            number = (ask * 7 + index) % TOOLS
            target = f"ns{number % 50}.tool_{number}"
            calls = [
                CallRequest(0, "s", "tool_search", "", {"query": f"select:{target}"}),
                CallRequest(1, "t", target, "{}", {}),
            ]
            begin = time.perf_counter()
            ctx.round_index = index
            request = await pipeline.prepare_request(
                ctx, RoundRequest(history, toolset.schemas, permitted)
            )
            ctx.exposed = request.exposed
            results = await pipeline.handle_calls(ctx, calls)
            rounds.append(time.perf_counter() - begin)
            assert results[0].outcome == "answered", results
            assert results[1].reason == "loaded_this_round", results
        await pipeline.finish_ask(ctx)
    return rounds, starts, filters


def run() -> list[Row]:
    """The median per-round and per-ask figures."""
    rounds, starts, filters = asyncio.run(_measure())
    per_round = statistics.median(rounds)
    note = "target < 1 ms" + (" (met)" if per_round < 1e-3 else " (MISSED)")
    return [
        Row("middleware", f"per round, {TOOLS} tools (prepare + calls)", us(per_round), note),
        Row("middleware", f"start_ask, {TOOLS} tools", us(statistics.median(starts)), "per ask"),
        Row(
            "middleware",
            f"permission hook + allow/deny, {TOOLS} tools",
            us(statistics.median(filters)),
            "per ask, host",
        ),
        Row(
            "middleware",
            f"allow/deny patterns + filtered view, {TOOLS} tools",
            us(asyncio.run(_measure_patterns())),
            "per ask, host, no hook (cached per tool set)",
        ),
    ]
