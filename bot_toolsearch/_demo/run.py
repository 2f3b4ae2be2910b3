"""``bot-toolsearch demo``: the real `Bot` over the real openai SDK, on the embedded offline model.

By default the model is the deterministic `OfflinePlanner` behind a `ScriptedOpenAIServer` on
127.0.0.1 (no API key, no network). ``--model-url URL --model NAME`` runs the same questions
against a real OpenAI-compatible endpoint instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai

from bot_toolsearch._config.settings import BotSettings, ModelSettings, SkillsSettings
from bot_toolsearch._core import token_count as tokens
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._runtime.ask_result import AskResult, RoundTrace
from bot_toolsearch._runtime.bot import Bot
from bot_toolsearch._runtime.endpoint_errors import describe_endpoint_error
from bot_toolsearch._runtime.tool_search import directory_message
from bot_toolsearch._scripted import ScriptedOpenAIServer

from ._width import fit
from .catalog import demo_tools
from .planner import OFFLINE_MODEL_NAME, OfflinePlanner

__all__ = ["FOLLOW_UP", "QUESTIONS", "run_demo"]

QUESTIONS: tuple[str, ...] = (
    "What is the current local time in Tokyo?",
    "Convert 10 km to miles",
    "帮我看看群成员“小明”的头像",
    "What is (12.5 * 4) / 3 + sqrt(81)?",
    "Use weather.forecast for Paris",
)
"""The demo's questions; one is in Chinese."""

FOLLOW_UP = "And in Paris?"
"""Asked right after the first question, in the same conversation: it only makes sense with
the turn before it, and the tool that turn called is still loaded."""
CONVERSATION = "demo"

INSTRUCTIONS = (
    "You are a helpful chat bot. Answer with send_message, then call end. "
    "Use the tools; do not guess results."
)
_RESULT_WIDTH = 90


@dataclass(frozen=True, slots=True)
class _Figures:
    tools_with: int
    tokens_with: int
    tools_without: int
    tokens_without: int


CHAT_HINT = (
    "chat with these tools yourself: bot-toolsearch chat --offline\n"
    '  (or one question: bot-toolsearch ask --offline "Convert 10 km to miles" --trace)'
)
"""The demo's closing lines: the next step, the same offline model and tools in ``chat``."""

_DEMO_OPTIONS = ("--model-url", "--model", "--api-key")
"""How the demo's command line names the endpoint, the model and the key."""


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo; returns the exit status (errors are one line on stderr)."""
    if args.model_url and not args.model:
        print("error: --model-url needs --model NAME", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace) -> int:
    if not args.model_url:
        planner = OfflinePlanner()
        with ScriptedOpenAIServer(responder=planner, models=(OFFLINE_MODEL_NAME,)) as server:
            print(f"model: EMBEDDED OFFLINE MODEL at {server.base_url}")
            print("  (a deterministic planner standing in for an LLM; no network, no API key)")
            return await _run(args, server.base_url, OFFLINE_MODEL_NAME, "offline-demo")
    key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    print(f"model: {args.model} at {args.model_url}")
    return await _run(args, args.model_url, args.model, key)


async def _run(args: argparse.Namespace, base_url: str, model: str, api_key: str) -> int:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=120)
    settings = BotSettings(
        model=ModelSettings(name=model, api=args.api, max_rounds=8),
        skills=SkillsSettings(tool_search_enabled=True, tool_search_keep_loaded="conversation"),
    )
    bot = Bot(settings, demo_tools(), client=client, instructions=INSTRUCTIONS)
    print(f"catalog: {len(bot.toolset.catalog)} tools; tokens: {tokens.counter_label()}")
    print("(per round: the tools sent and the tokens of their schemas alone)")
    results: list[tuple[str, AskResult]] = []
    totals: list[tuple[int, int | None]] = []
    directory = _directory_tokens(bot, settings)
    try:
        for question in QUESTIONS:
            print(f"\nask: {question}")
            conversation = CONVERSATION if question == QUESTIONS[0] else None
            result = await bot.ask(question, conversation=conversation)
            _print_rounds(bot, result.trace)
            print(f"  reply: {result.reply}")
            results.append((question, result))
            if conversation is not None:
                results.append((FOLLOW_UP, await _follow_up(bot)))
        if not args.model_url:  # against a real endpoint it would double the requests
            off = Bot(
                settings.model_copy(update={"skills": SkillsSettings(tool_search_enabled=False)}),
                demo_tools(),
                client=client,
                instructions=INSTRUCTIONS,
            )
            for question, result in results:
                without = await off.ask(question)
                totals.append((_ask_tokens(bot, result, directory), _ask_tokens(off, without, 0)))
        else:
            totals = [(_ask_tokens(bot, r, directory), None) for _, r in results]
    except openai.OpenAIError as exc:  # one format with chat and ask, the server's text kept
        message = describe_endpoint_error(exc, base_url, options=_DEMO_OPTIONS)
        print(f"error: {message}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    _print_table(results, _first_request_figures(bot, settings), totals)
    return 0


def _directory_tokens(bot: Bot, settings: BotSettings) -> int:
    always = settings.skills.tool_search_always_loaded
    session = ToolSearchSession(bot.toolset.catalog, always_loaded=always)
    return tokens.messages_tokens([dict(directory_message(session.deferred_tool_names))])


def _ask_tokens(bot: Bot, result: AskResult, directory: int) -> int:
    """Tokens of everything tool-related an ask sent: each round's tool schemas, plus the
    directory message in every round (0 without tool search)."""
    return sum(
        tokens.tools_tokens(_sent_schemas(bot, round_.tool_names)) + directory
        for round_ in result.trace
    )


async def _follow_up(bot: Bot) -> AskResult:
    print(
        f"\nask: {FOLLOW_UP}  (same conversation: it sees the turn before, and the tool that "
        "turn called stays loaded)"
    )
    result = await bot.ask(FOLLOW_UP, conversation=CONVERSATION)
    _print_rounds(bot, result.trace)
    print(f"  reply: {result.reply}")
    return result


def _sent_schemas(bot: Bot, names: Sequence[str]) -> list[dict[str, Any]]:
    catalog = bot.toolset.catalog
    wire = bot.toolset.wire_names("-_-")
    schemas = []
    for name in names:
        schema = catalog.schema(name)
        if schema is None:  # the virtual tool_search
            schema = ToolSearchSession(catalog).tool_search_schema
        else:
            schema["function"]["name"] = wire.to_wire(name)
        schemas.append(schema)
    return schemas


def _print_rounds(bot: Bot, trace: Sequence[RoundTrace]) -> None:
    for round_ in trace:
        count, cost = tokens.count_tools(_sent_schemas(bot, round_.tool_names))
        print(f"  round {round_.index}: sent {count} tools (schemas: {cost} tokens)")
        for call in round_.calls:
            print(f"    call {call.name}({call.arguments}) -> {call.outcome}")
            result = " ".join(call.result.split())
            cut = result if len(result) <= _RESULT_WIDTH else result[: _RESULT_WIDTH - 1] + "…"
            print(f"      result: {cut}")
        if round_.text:
            print(f"    text: {round_.text}")


def _first_request_figures(bot: Bot, settings: BotSettings) -> _Figures:
    catalog = bot.toolset.catalog
    always = settings.skills.tool_search_always_loaded
    session = ToolSearchSession(catalog, always_loaded=always)
    sent = session.request_tools()
    directory = directory_message(session.deferred_tool_names)
    with_search = tokens.tools_tokens(sent) + tokens.messages_tokens([dict(directory)])
    everything = _sent_schemas(bot, catalog.names)
    return _Figures(len(sent), with_search, len(everything), tokens.tools_tokens(everything))


def _print_table(
    results: Sequence[tuple[str, AskResult]],
    figures: _Figures,
    totals: Sequence[tuple[int, int | None]],
) -> None:
    saved = figures.tokens_without - figures.tokens_with
    label = tokens.counter_label()
    print("\n== summary " + "=" * 60)
    print(f"tokens: {label}")
    print("first request (tool schemas, plus the directory message with tool search):")
    print(f"  tool search OFF: {figures.tools_without:>4} tools {figures.tokens_without:>7} tokens")
    print(f"  tool search ON:  {figures.tools_with:>4} tools {figures.tokens_with:>7} tokens")
    print(
        f"  saved:                {saved:>12} tokens "
        f"({saved / max(figures.tokens_without, 1) * 100:.1f}%)"
    )
    on = sum(t[0] for t in totals)
    if totals and all(t[1] is not None for t in totals):
        off = sum(t[1] or 0 for t in totals)
        print(f"whole asks, every round (the same {len(totals)} questions asked twice):")
        print(f"  tool search OFF:            {off:>7} tokens")
        print(f"  tool search ON:             {on:>7} tokens")
        print(
            f"  saved:                {off - on:>12} tokens ({(off - on) / max(off, 1) * 100:.1f}%)"
        )
    else:
        print(f"whole asks, every round, tool search ON: {on} tokens (OFF not run here)")
    print()
    header = f"{fit('question', 44)} {'rounds':>6} {'search':>6} {'no-hit':>6} {'loaded':>6} "
    print(header + f"{'unused':>6} {'refused':>7} {'on':>6} {'off':>6}")
    for (question, result), (with_, without) in zip(results, totals, strict=True):
        stats = result.stats
        print(
            f"{fit(question, 44)} {result.rounds:>6} {stats.searches:>6} "
            f"{stats.zero_result_searches:>6} {len(stats.tools_loaded):>6} "
            f"{len(stats.loaded_never_called):>6} {sum(stats.refused_calls.values()):>7} "
            f"{with_:>6} {'-' if without is None else without:>6}"
        )
    print(
        "(search: tool_search calls; no-hit: searches that found nothing; loaded: tools they\n"
        " loaded; unused: loaded but never called; refused: calls to tools not loaded;\n"
        " on/off: tokens of the tool schemas and directory the whole ask sent, every round,\n"
        " with tool search on, and for the same question with it off)"
    )
    print(f"\n{CHAT_HINT}")
