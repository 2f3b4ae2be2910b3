"""Prompt-cache cost of a scripted multi-ask conversation, per API and with tool search off/on.

The real `Bot` talks over HTTP to `ScriptedOpenAIServer(prompt_cache=True)`, the server's model
of OpenAI's prefix cache (tools rendered first, 1,024-token minimum, 128-token blocks, counted
in ``o200k_base`` when ``bpe-openai`` is installed). The workload, three asks with the same
instructions:

1. a 5-request ask with two loads: search A, call A, search B, call B, text reply;
2. one more load: search C, call C, text reply;
3. a text reply.

With tool search off the searches are left out (every tool is sent anyway). The `Bot` keeps
no conversation memory yet, so "the same conversation" is modelled as the same instructions
and a new user message per ask. Tools are the first 100 or all 769 of the BFCL-derived catalog
(``../shared/bench/catalog.json`` or ``$BOT_TOOLSEARCH_BENCH_DATA``), plus the built-in
``send_message`` and ``end``.

Cost is in uncached-token equivalents: cached input tokens at 0.1x and the rest at 1x; the
"writes" figure also bills every newly cached whole block at 1.25x, for a provider that charges
cache writes (a prompt of 1,024 tokens or more writes its whole blocks that were not cached).

With tool search on, each ``[skills] tool_search_loading`` mode is measured: ``append`` (loads
grow the tools list), ``additional_tools`` (Responses only: fixed tools, loads declared in an
input item) and ``bridge`` (fixed tools plus ``call_tool``; schemas in the search result).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import openai

from bot_toolsearch import Bot, BotSettings, RoundTrace, Tool
from bot_toolsearch.core import WireNames
from bot_toolsearch.testing import (
    ModelRequest,
    PromptCacheModel,
    ScriptedOpenAIServer,
    ScriptEntry,
    ToolCall,
    call,
    text,
)

from ._table import Row
from .bench_quality import DATA

SECTION = "prompt cache"
TOOL_COUNTS = (100, 769)
APIS: tuple[Literal["chat_completions", "responses"], ...] = ("chat_completions", "responses")
LOADING_MODES = ("append", "additional_tools", "bridge")
"""Modes measured with tool search on (``additional_tools`` on the Responses API only)."""
PICKS = (10, 50, 90)
"""Catalog positions of the tools A, B and C (inside the first 100)."""
INSTRUCTIONS = (
    "You are the assistant of a small engineering office. Use the tools to answer exactly, "
    "show the numbers you used, and keep answers short. "
) * 6
CACHED_RATE = 0.1
WRITE_RATE = 1.25
MIN_CACHED, BLOCK = 1024, 128


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted model turn: search for a tool, call it, or answer with text."""

    kind: Literal["search", "call", "reply"]
    tool: str = ""
    """The canonical tool name (search, call) or the reply text."""


@dataclass(frozen=True, slots=True)
class Workload:
    """The tools and the asks of one measurement."""

    tools: tuple[Tool, ...]
    asks: tuple[tuple[str, tuple[Step, ...]], ...]
    """``(user message, steps)`` per ask, in order."""
    tool_search: bool
    loading_mode: str


@dataclass(frozen=True, slots=True)
class CacheFigures:
    """What one workload cost on one API."""

    requests: int
    input_tokens: int
    cached_tokens: int
    cost: float
    """Uncached-token equivalents: cached at 0.1x, the rest at 1x."""
    cost_with_writes: float
    """The same with newly cached whole blocks billed at 1.25x."""


def catalog_schemas(count: int) -> list[dict[str, Any]]:
    """The first ``count`` schemas of the bench catalog."""
    schemas: list[dict[str, Any]] = json.loads((DATA / "catalog.json").read_text(encoding="utf-8"))
    if len(schemas) < count:
        raise ValueError(f"{DATA / 'catalog.json'} has {len(schemas)} tools, not {count}")
    return schemas[:count]


def _result(name: str) -> str:
    rows = ", ".join(f'{{"row":{i},"value":"{name} reading {i * 7}"}}' for i in range(8))
    return f'{{"tool":"{name}","status":"ok","rows":[{rows}]}}'


def _tool(schema: dict[str, Any]) -> Tool:
    function = schema["function"]
    name = str(function["name"])

    def handler(**_arguments: Any) -> str:
        return _result(name)

    return Tool(name, str(function.get("description", "")), function.get("parameters"), handler)


def build_workload(
    tool_count: int,
    *,
    tool_search: bool,
    loading_mode: str = "append",
    schemas: Sequence[dict[str, Any]] | None = None,
) -> Workload:
    """The three-ask workload over the first ``tool_count`` catalog tools.

    Args:
        tool_count: how many catalog tools the bot has (100 or 769 here).
        tool_search: whether ``[skills] tool_search_enabled`` is on (the searches are left out
            when it is off).
        loading_mode: ``[skills] tool_search_loading``; ``"append"`` is today's behaviour.
        schemas: Chat Completions tool schemas to take the tools from instead of the bench
            catalog (at least 91: tools 10, 50 and 90 are used).
    """
    schemas = list(schemas[:tool_count]) if schemas is not None else catalog_schemas(tool_count)
    a, b, c = (str(schemas[i]["function"]["name"]) for i in PICKS)

    def load(name: str) -> tuple[Step, ...]:
        search = (Step("search", name),) if tool_search else ()
        return (*search, Step("call", name))

    asks = (
        ("Compare the two readings for me.", (*load(a), *load(b), Step("reply", "Done: A < B."))),
        ("And the third one?", (*load(c), Step("reply", "C is the largest."))),
        ("Thanks, that is all.", (Step("reply", "You are welcome."),)),
    )
    return Workload(tuple(_tool(s) for s in schemas), asks, tool_search, loading_mode)


def _arguments(tool: Tool) -> dict[str, Any]:
    """A value of the right JSON type for each required parameter."""
    samples = {"integer": 3, "number": 2.5, "boolean": True, "array": [], "object": {}}
    properties = tool.parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for key in tool.parameters.get("required") or []:
        kind = (properties.get(key) or {}).get("type")
        out[key] = samples.get(kind, "Berlin") if isinstance(kind, str) else "Berlin"
    return out


class _Model:
    """The scripted model: answers each request with the next step, shaped by what it was sent.

    A call goes to the tool's wire name when that name is among the request's tools or was
    declared by an ``additional_tools`` item earlier in the ask, and through ``call_tool``
    otherwise (bridge mode).
    """

    def __init__(self, workload: Workload) -> None:
        names = [t.name for t in workload.tools]
        self._wire = WireNames.build([*names, "send_message", "end"])
        self._tools = {t.name: t for t in workload.tools}
        self._steps: Iterator[Step] = iter(())
        self._declared: set[str] = set()

    def expect(self, steps: Sequence[Step]) -> None:
        self._steps = iter(steps)
        self._declared = set()

    def __call__(self, request: ModelRequest) -> ScriptEntry:
        self._declared.update(request.additional_tool_names)
        step = next(self._steps)
        if step.kind == "reply":
            return text(step.tool)
        if step.kind == "search":
            return call("tool_search", query=f"select:{step.tool}")
        wire = self._wire.to_wire(step.tool)
        arguments = _arguments(self._tools[step.tool])
        if wire in request.tool_names or wire in self._declared:
            return ToolCall(wire, arguments)
        return call("call_tool", name=step.tool, arguments=arguments)


def _settings(api: str, workload: Workload, base_url: str) -> BotSettings:
    skills: dict[str, Any] = {"tool_search_enabled": workload.tool_search}
    if workload.tool_search and workload.loading_mode != "append":
        skills["tool_search_loading"] = workload.loading_mode
    return BotSettings.model_validate(
        {"model": {"api": api, "base_url": base_url, "api_key": "bench"}, "skills": skills}
    )


def _written(prompt: int, cached: int) -> int:
    """Tokens a write-billing provider adds to its cache for one request."""
    return max(0, prompt - prompt % BLOCK - cached) if prompt >= MIN_CACHED else 0


async def measure(workload: Workload, api: str) -> CacheFigures:
    """Run the workload's asks through a `Bot` on a fresh cache-modelling server."""
    model = _Model(workload)
    with ScriptedOpenAIServer(model, prompt_cache=True) as server:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="bench", max_retries=0
        ) as client:
            bot = Bot(
                _settings(api, workload, server.base_url),
                workload.tools,
                client=client,
                instructions=INSTRUCTIONS,
            )
            rounds: list[RoundTrace] = []
            for message, steps in workload.asks:
                model.expect(steps)
                result = await bot.ask(message)
                if result.finish_reason != "reply" or result.rounds != len(steps):
                    raise RuntimeError(f"the scripted ask went off script: {result}")
                rounds.extend(result.trace)
        server.assert_consumed()
    prompt = sum(r.prompt_tokens for r in rounds)
    cached = sum(r.cached_tokens for r in rounds)
    written = sum(_written(r.prompt_tokens, r.cached_tokens) for r in rounds)
    plain = prompt - cached
    return CacheFigures(
        requests=len(rounds),
        input_tokens=prompt,
        cached_tokens=cached,
        cost=plain + CACHED_RATE * cached,
        cost_with_writes=(plain - written) + WRITE_RATE * written + CACHED_RATE * cached,
    )


def configurations() -> Iterator[tuple[int, str, bool, str]]:
    """``(tools, api, tool search, loading mode)`` of every measured configuration."""
    for count in TOOL_COUNTS:
        for api in APIS:
            yield count, api, False, "-"
            for mode in LOADING_MODES:
                if mode != "additional_tools" or api == "responses":
                    yield count, api, True, mode


def run() -> list[Row]:
    """One row per configuration: input tokens, cached share and the two costs."""
    if not (DATA / "catalog.json").is_file():
        return [Row(SECTION, "skipped", "-", f"no catalog.json in {DATA}")]
    model = PromptCacheModel()
    rule = f"cached from {model.min_tokens:,} tokens in {model.block_tokens}-token blocks"
    rows = [Row(SECTION, "token counter (test server's cache model)", model.tokenizer_name, rule)]
    for count, api, search, mode in configurations():
        workload = build_workload(
            count, tool_search=search, loading_mode=mode if search else "append"
        )
        figures = asyncio.run(measure(workload, api))
        share = figures.cached_tokens / figures.input_tokens if figures.input_tokens else 0.0
        label = f"search on, {mode}" if search else "search off"
        rows.append(
            Row(
                SECTION,
                f"{count} tools, {api}, {label}: input tokens",
                f"{figures.input_tokens:,}",
                f"{figures.requests} requests; cached {figures.cached_tokens:,} ({share:.0%}); "
                f"cost {figures.cost:,.0f} (cached 0.1x), {figures.cost_with_writes:,.0f} "
                f"with 1.25x writes",
            )
        )
    return rows
