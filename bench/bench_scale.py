"""Tool search at 10,000 real tools (issue 14): quality, latency, first-request tokens, start-up.

The catalogs come from ``bench/_scale_catalog.py`` (real definitions only; sources and licences
there). Measured here:

- recall@5 / MRR@5 of the dev query set (questions and keyword forms, as ``bench_quality``
  scores them) against the 769-tool benchmark catalog and against the 10,000-tool pool that
  contains it, and the drop;
- session creation and a fresh session's first keyword search at 10,000 tools (median, µs);
- first-request tokens at 1,000 / 5,000 / 10,000 tools: every schema in the tools list,
  against tool search's names-only ``<available_deferred_tools>`` directory (budget 0) and the
  directory under the default 4,000-token budget (grouped by namespace, with the Google APIs'
  own descriptions from ``scale_namespaces()``), each plus the rules text and the
  ``tool_search`` schema that go with it;
- ``Bot(...)`` start-up with 10,000 code tools in a fresh process (min of 5 runs), search
  index and directory included (and without tool search, which builds neither), the first
  keyword search after it, and what the bot holds in memory, index and directory built,
  against the schemas' own memory (tracemalloc, one more process; the directory's token
  counter is loaded before, timed apart).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot_toolsearch.core import (
    DEFAULT_DIRECTORY_BUDGET,
    GROUPED_DIRECTORY_RULES,
    TOOL_SEARCH_RULES,
    ToolCatalog,
    ToolSearchSession,
    render_deferred_tools,
)

from ._scale_catalog import load_scale_catalog, scale_composition, scale_namespaces
from ._table import Row, median_seconds, us
from .bench_quality import CAP, DATA, engine_ranker, evaluate

SECTION = "scale"
SIZE = 10_000
TOKEN_SIZES = (1_000, 5_000, 10_000)
START_UP_RUNS = 5
# Tools per tokenizer call: bpe-openai refuses inputs of 1,000,000 characters or more.
_CHUNK = 200
# Names a Bot reserves for its built-in tools (a code tool of that name is refused).
_BUILTINS = frozenset({"send_message", "end"})


def _token_counter() -> tuple[Callable[[str], int], str]:
    """The project's counter (o200k_base when ``bpe-openai`` is installed) and its label.

    Private to the package, so imported here: a move of the module is a one-line fix.
    """
    from bot_toolsearch._core.token_count import count_text, counter_label

    return count_text, counter_label()


def _tools_tokens(schemas: Sequence[dict[str, Any]], count: Callable[[str], int]) -> int:
    """Tokens of the tools list as compact JSON on the wire, counted in chunks of tools.

    Each chunk is the exact wire text of its tools; splitting between two tools separates
    ``}``, ``,`` and ``{`` that the BPE could have merged, so the sum may exceed a one-piece
    count by ~2 tokens per chunk boundary (< 0.01% here).
    """
    total = 2  # "[" and "]"
    for start in range(0, len(schemas), _CHUNK):
        chunk = schemas[start : start + _CHUNK]
        total += count(json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))[1:-1])
        total += start > 0  # the comma between this chunk and the previous one
    return total


def _quality_rows(queries: list[dict[str, Any]]) -> list[Row]:
    rows = []
    small, large = load_scale_catalog(769), load_scale_catalog(SIZE)
    rank_small, rank_large = engine_ranker(small), engine_ranker(large)
    for field, style in (("question", "question"), ("keyword_query", "keywords")):
        _, r5_small, mrr_small = evaluate(rank_small, queries, field)
        _, r5_large, mrr_large = evaluate(rank_large, queries, field)
        for metric, before, after in (
            ("recall@5", r5_small, r5_large),
            ("MRR@5", mrr_small, mrr_large),
        ):
            note = f"dev, {len(queries)} queries; 769 -> {SIZE:,} tools"
            rows.append(Row(SECTION, f"{style} {metric} (769)", f"{before:.3f}", note))
            rows.append(Row(SECTION, f"{style} {metric} ({SIZE:,})", f"{after:.3f}", note))
            rows.append(Row(SECTION, f"{style} {metric} drop", f"{before - after:.3f}",
                            f"{(before - after) / before:.1%} of the 769-tool figure"))  # fmt: skip
    # The same, with the Google APIs' own namespace descriptions searchable (issue 22 item 11).
    described = engine_ranker(large, scale_namespaces())
    for field, style in (("question", "question"), ("keyword_query", "keywords")):
        _, r5, mrr = evaluate(described, queries, field)
        rows.append(Row(SECTION, f"{style} recall@5 / MRR@5 ({SIZE:,}), namespaces described",
                        f"{r5:.3f} / {mrr:.3f}",
                        f"{len(scale_namespaces())} namespace descriptions indexed"))  # fmt: skip
    return rows


def _latency_rows(queries: list[dict[str, Any]]) -> list[Row]:
    catalog = ToolCatalog(load_scale_catalog(SIZE))
    create = median_seconds(lambda: ToolSearchSession(catalog, max_results=CAP))
    cycle = itertools.cycle([q["keyword_query"] for q in queries[:300]])
    search = median_seconds(
        lambda: ToolSearchSession(catalog, max_results=CAP).search(next(cycle)), repeat=300
    )
    return [
        Row(SECTION, f"session creation ({SIZE:,})", us(create), "median, real catalog"),
        Row(SECTION, f"keyword search ({SIZE:,})", us(search),
            "fresh session, 300 dev keyword queries, median"),
    ]  # fmt: skip


def _token_rows() -> list[Row]:
    count, label = _token_counter()
    rows = []
    for size in TOKEN_SIZES:
        schemas = load_scale_catalog(size)
        catalog = ToolCatalog(schemas)
        session = ToolSearchSession(catalog, max_results=CAP, namespaces=scale_namespaces())
        names = count(render_deferred_tools(session.deferred_tool_names, budget=0))
        overhead = count(TOOL_SEARCH_RULES) + _tools_tokens(session.request_tools(), count)
        directory = session.directory
        budgeted = count(directory.text)
        grouped_rules = count(" " + GROUPED_DIRECTORY_RULES) if directory.grouped else 0
        full = _tools_tokens(schemas, count)
        rows.append(Row(SECTION, f"first-request tokens ({size:,}), full schemas", f"{full:,}",
                        label))  # fmt: skip
        rows.append(Row(SECTION, f"first-request tokens ({size:,}), names directory",
                        f"{names + overhead:,}",
                        f"directory {names:,} + rules, tool_search {overhead:,}"))  # fmt: skip
        shape = (
            f"{len(directory.namespaces)} namespace lines, {directory.listed} names, "
            f"{directory.unlisted} tools unlisted"
            if directory.grouped
            else "the full names list fits"
        )
        rules = overhead + grouped_rules
        label_budget = f"first-request tokens ({size:,}), budget {DEFAULT_DIRECTORY_BUDGET:,}"
        note = f"directory {budgeted:,} ({shape}) + rules, tool_search {rules:,}"
        rows.append(Row(SECTION, label_budget, f"{budgeted + rules:,}", note))
    return rows


# Run in a fresh process: argv[1] = schemas JSON file, argv[2] = "time" or "memory".
_START_UP = r"""
import gc, json, sys, time, tracemalloc
from bot_toolsearch import Bot, BotSettings, Tool
from bot_toolsearch.config import SkillsSettings
from bot_toolsearch.core import ToolSearchSession
from bot_toolsearch._core.directory import count_tokens
memory = sys.argv[2] == "memory"
settings = BotSettings(skills=SkillsSettings(tool_search_enabled=True))
def handler(**arguments):
    return "ok"
# The directory's token counter (o200k_base with the tokens extra) loads once per process,
# whoever asks first: timed apart, and kept out of the bot's traced memory.
loading = time.perf_counter()
count_tokens("x")
tokenizer = time.perf_counter() - loading
if memory:
    tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
with open(sys.argv[1], encoding="utf-8") as file:
    text = file.read()
schemas = json.loads(text)
del text
schemas_bytes = tracemalloc.get_traced_memory()[0] - base
start = time.perf_counter()
tools = [
    Tool(s["function"]["name"], s["function"].get("description", ""),
         s["function"].get("parameters"), handler)
    for s in schemas
]
made = time.perf_counter()
off = 0.0
if not memory:  # the same start-up without tool search, which builds no search index
    Bot(BotSettings(), tools)
    gc.collect()
    off = time.perf_counter() - made
    made = time.perf_counter()
bot = Bot(settings, tools)  # builds the search index and the directory too
done = time.perf_counter()
ToolSearchSession(bot.toolset.catalog).search("weather forecast")
searched = time.perf_counter()
del schemas, tools
gc.collect()
held = tracemalloc.get_traced_memory()[0] - base
print(json.dumps({"tools": made - start - off, "bot": done - made, "off": off,
                  "search": searched - done, "schemas": schemas_bytes, "held": held,
                  "tokenizer": tokenizer}))
"""


def _start_up(path: Path, mode: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _START_UP, str(path), mode],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"start-up measurement ({mode}) failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def _start_up_rows() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "schemas.json"
        # The bot's own built-ins keep their names: the pool's next tools take those places.
        schemas = [
            s for s in load_scale_catalog(SIZE + 10) if s["function"]["name"] not in _BUILTINS
        ][:SIZE]
        path.write_text(json.dumps(schemas), encoding="utf-8")
        timed = [_start_up(path, "time") for _ in range(START_UP_RUNS)]
        memory = _start_up(path, "memory")
    bot = min(r["bot"] for r in timed)
    off = min(r["off"] for r in timed)
    tools = min(r["tools"] for r in timed)
    search = min(r["search"] for r in timed)
    tokenizer = min(r["tokenizer"] for r in timed)
    mib = 2**20
    held, schemas = memory["held"] / mib, memory["schemas"] / mib
    return [
        Row(SECTION, f"Bot(...) start-up ({SIZE:,} code tools)", f"{bot:.2f} s",
            f"search index and directory included (tool search off: {off:.2f} s); fresh "
            f"process, min of {START_UP_RUNS}; Tool objects before it {tools:.2f} s, the token "
            f"counter {tokenizer:.2f} s"),
        Row(SECTION, f"first keyword search after start-up ({SIZE:,})", us(search),
            f"the index was built at start-up; min of {START_UP_RUNS}"),
        Row(SECTION, f"Bot memory ({SIZE:,} code tools)", f"{held:.1f} MiB",
            f"Tools + Bot + index + directory, traced; the schemas' own memory {schemas:.1f} MiB "
            f"({held / schemas:.1f}x)"),
    ]  # fmt: skip


def run() -> list[Row]:
    """Rows for quality, latency, tokens and start-up at scale."""
    queries_path = DATA / "queries_dev.jsonl"
    if not queries_path.is_file() or not (DATA / "catalog.json").is_file():
        return [
            Row(SECTION, "dataset", "skipped", f"no queries_dev.jsonl + catalog.json in {DATA}")
        ]
    lines = queries_path.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line) for line in lines if line.strip()]
    try:
        composition = ", ".join(f"{k} {v:,}" for k, v in scale_composition(SIZE).items())
    except RuntimeError as error:  # no network for the BFCL wheel, or no dev extra installed
        return [Row(SECTION, "dataset", "skipped", str(error).splitlines()[0])]
    rows = [Row(SECTION, f"catalog ({SIZE:,} tools)", "real", composition)]
    rows += _quality_rows(queries)
    rows += _latency_rows(queries)
    rows += _token_rows()
    rows += _start_up_rows()
    return rows
