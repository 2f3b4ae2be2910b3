"""``bot-toolsearch eval``: how well tool search finds your tools, on your own catalog.

A JSONL file of ``{"query": ..., "expected": [tool names]}`` is searched against the user's
catalog (``--catalog`` file, or the config's merged catalog with ``--tools``), each query as the
first search of a fresh session, as a bot runs it. It prints recall@k (the share of the expected
tools among the first k loaded, averaged over the queries) and MRR@k (one over the place of the
first expected tool found, 0 when none is) for BM25 alone and, when an embedding model is
configured (``[skills.tool_search_embeddings]`` or ``--local-model``), for hybrid search side by
side. As in a bot, the always-loaded tools (``skills.tool_search_always_loaded``) are never
search results, and hybrid search applies the table's ``no_match_floor``. ``--explain`` lists
the misses, and ``--min-recall`` makes a recall below it exit 1, so a team can hold recall in
its CI as tools are added.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._errors import ToolSearchError

from .catalog import add_catalog_options, load_catalog_file, load_merged
from .hybrid import Ranking, add_model_options, model_label, prepare, wanted
from .options import CliError, load_cli_config, plural, positive_int

__all__ = ["EvalCase", "Scores", "add_eval_subparser", "read_cases", "score"]

logger = logging.getLogger("bot_toolsearch")


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One line of the JSONL file."""

    line: int
    query: str
    expected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Scores:
    """The figures of one search mode over every case."""

    recall: float
    mrr: float
    misses: tuple[tuple[EvalCase, tuple[str, ...]], ...]
    """Cases with an expected tool outside the first k, and what was loaded instead."""


def read_cases(path: str) -> list[EvalCase]:
    """The cases of a JSONL file; every problem is one `CliError` naming its line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read: {exc}") from None
    cases = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{where}: not JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise CliError(f'{where}: expected an object {{"query": ..., "expected": [...]}}')
        query, expected = item.get("query"), item.get("expected")
        if not isinstance(query, str) or not query.strip():
            raise CliError(f"{where}: 'query' must be a non-empty string")
        if (
            not isinstance(expected, list)
            or not expected
            or not all(isinstance(n, str) and n for n in expected)
        ):
            raise CliError(f"{where}: 'expected' must be a non-empty list of tool names")
        cases.append(EvalCase(number, query, tuple(dict.fromkeys(expected))))
    if not cases:
        raise CliError(f"{path}: no cases (one JSON object per line)")
    return cases


Rank = Callable[[str], Sequence[str]]


def score(rank: Rank, cases: Sequence[EvalCase], k: int) -> Scores:
    """recall@k and MRR@k of ``rank`` over ``cases`` (see the module docstring)."""
    recall = mrr = 0.0
    misses = []
    for case in cases:
        found = tuple(rank(case.query))[:k]
        hits = [found.index(name) for name in case.expected if name in found]
        recall += len(hits) / len(case.expected)
        mrr += 1.0 / (min(hits) + 1) if hits else 0.0
        if len(hits) < len(case.expected):
            misses.append((case, found))
    n = len(cases)
    return Scores(recall / n, mrr / n, tuple(misses))


def _catalog(args: argparse.Namespace) -> tuple[ToolCatalog, dict[str, str], BotSettings]:
    """The catalog, its namespace descriptions and the settings (for the embeddings table)."""
    if args.catalog is not None:
        if args.tools is not None:
            raise CliError("give --catalog FILE or --tools, not both")
        config = load_cli_config(args)
        return ToolCatalog(load_catalog_file(args.catalog)), {}, config.loaded.settings
    config, merged = load_merged(args)
    if merged.unavailable:
        servers = "; ".join(f"{name!r}: {why}" for name, why in merged.unavailable.items())
        raise CliError(f"MCP server unavailable, its tools cannot be evaluated: {servers}")
    settings = config.loaded.settings
    toolset = merged.toolset
    namespaces = dict(toolset.namespace_descriptions(settings.tools.namespaces))
    return toolset.catalog, namespaces, settings


def _eval(args: argparse.Namespace) -> int:
    cases = read_cases(args.queries)
    try:
        catalog, namespaces, settings = _catalog(args)
    except (ToolSearchError, ValueError) as exc:
        raise CliError(str(exc)) from None
    unknown = sorted({n for c in cases for n in c.expected if n not in catalog})
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if unknown[10:] else "")
        raise CliError(f"{args.queries}: expected tools not in the catalog: {shown}")
    k = args.k
    skills = settings.skills
    always = tuple(n for n in skills.tool_search_always_loaded if n in catalog)
    expected_always = sorted({n for c in cases for n in c.expected if n in always})
    if expected_always:
        raise CliError(
            f"{args.queries}: expected tools that are always loaded, never search results "
            f"(skills.tool_search_always_loaded): {', '.join(expected_always)}"
        )

    def searcher(ranking: Ranking | None, floor: float | None) -> Rank:
        def rank(query: str) -> Sequence[str]:
            session = ToolSearchSession(
                catalog,
                always_loaded=always,
                max_results=k,
                namespaces=namespaces,
                semantic=ranking,
                no_match_floor=floor if ranking is not None else None,
            )
            return session.search(query).loaded

        return rank

    columns = [("BM25", score(searcher(None, None), cases, k), "")]
    embeddings = wanted(args, settings)
    if embeddings is not None:
        _, ranking, why = prepare(settings, catalog, embeddings)
        if ranking is not None:
            hybrid = searcher(ranking, embeddings.no_match_floor)
            columns.append(("hybrid", score(hybrid, cases, k), f"model {model_label(embeddings)}"))
        else:
            print(f"hybrid: unavailable, BM25 alone ({why})")
    print(
        f"eval: {plural(len(cases), 'query', 'queries')} over {plural(len(catalog), 'tool')}, "
        f"first {k} results"
    )
    print(f"{'':8} {'recall@' + str(k):>9} {'MRR@' + str(k):>7}")
    for label, found, note in columns:
        print(f"{label:8} {found.recall:9.3f} {found.mrr:7.3f}  {note}".rstrip())
    if args.explain:
        for label, found, _ in columns:
            print(f"\n{label} misses: {len(found.misses)}")
            for case, loaded in found.misses:
                missing = [n for n in case.expected if n not in loaded]
                print(f"  line {case.line}: {case.query!r}")
                print(f"    expected {', '.join(missing)}; got {', '.join(loaded) or 'nothing'}")
    held = columns[-1]
    if args.min_recall is not None and held[1].recall < args.min_recall:
        print(
            f"recall@{k} {held[1].recall:.3f} ({held[0]}) is below --min-recall "
            f"{args.min_recall:.3f}"
        )
        return 1
    return 0


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}")
    return value


def add_eval_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``eval QUERIES.jsonl [--catalog FILE | --config PATH --tools M:A] [-k N] ...``."""
    parser = subparsers.add_parser(
        "eval", help="recall@k and MRR@k of tool search on your catalog, BM25 and hybrid"
    )
    parser.add_argument(
        "queries", help='JSONL file, one {"query": "...", "expected": ["tool", ...]} per line'
    )
    add_catalog_options(parser)
    parser.add_argument("-k", type=positive_int, default=5, help="results per search (default 5)")
    parser.add_argument("--explain", action="store_true", help="list the misses of each mode")
    parser.add_argument(
        "--min-recall",
        type=_fraction,
        metavar="R",
        help="exit 1 when recall@k is below R (hybrid's when a model is configured, else BM25's)",
    )
    add_model_options(parser, "evaluate hybrid search")
    parser.set_defaults(func=_eval)
