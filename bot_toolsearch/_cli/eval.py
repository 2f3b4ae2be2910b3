"""``bot-toolsearch eval``: how well tool search finds your tools, on your own catalog.

A JSONL file of ``{"query": ..., "expected": [tool names]}`` is searched against the user's
catalog (``--catalog`` file, or the config's merged catalog with ``--tools``), each query as
the first search of a fresh session, as a bot runs it. It prints recall@k (the share of the
expected tools among the first k loaded, averaged over the queries) and MRR@k (one over the
place of the first expected tool found, 0 when none is) for BM25 alone and, when an embedding
model is configured (``[skills.tool_search_embeddings]`` or ``--local-model``), for hybrid
search side by side; ``--explain`` lists the misses, and ``--min-recall`` makes a recall
below it exit 1, so a team can hold recall in its CI as tools are added.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot_toolsearch._config.settings import BotSettings, EmbeddingsSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._errors import ToolSearchError
from bot_toolsearch._services.semantic import semantic_ranker, warm_semantic

from .catalog import add_catalog_options, load_catalog_file, load_merged
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


def _embeddings(args: argparse.Namespace, settings: BotSettings) -> EmbeddingsSettings | None:
    """The embeddings table to evaluate hybrid search with: ``--local-model``, else config's."""
    if args.local_model is None:
        if args.local_tokenizer is not None:
            raise CliError("--local-tokenizer needs --local-model")
        return settings.skills.tool_search_embeddings

    def where(value: str, folder: str, package: str) -> dict[str, str]:
        return {folder: value} if Path(value).is_dir() else {package: value}

    table: dict[str, Any] = where(args.local_model, "model_dir", "package")
    if args.local_tokenizer is not None:
        table |= where(args.local_tokenizer, "tokenizer_dir", "tokenizer_package")
    configured = settings.skills.tool_search_embeddings
    if configured is not None and configured.cache_dir is not None:
        table["cache_dir"] = configured.cache_dir
    try:
        return EmbeddingsSettings.model_validate(table)
    except ValueError as exc:
        raise CliError(f"--local-model: {exc}") from None


class _Captured(logging.Handler):
    """The warnings the semantic stage logs while the hybrid column is computed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


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

    def bm25(query: str) -> Sequence[str]:
        session = ToolSearchSession(catalog, max_results=k, namespaces=namespaces)
        return session.search(query).loaded

    columns = [("BM25", score(bm25, cases, k), "")]
    wanted = _embeddings(args, settings)
    if wanted is not None:
        hybrid_settings = settings.model_copy(
            update={"skills": settings.skills.model_copy(update={"tool_search_embeddings": wanted})}
        )
        ranker = semantic_ranker(hybrid_settings, catalog)
        captured = _Captured()
        logger.addHandler(captured)
        try:
            # The catalog's vectors first, however long that takes (a search alone would give
            # up after the stage's timeout and answer with BM25).
            started = warm_semantic(hybrid_settings, catalog)
            if started is not None:
                with contextlib.suppress(Exception):  # the stage logged why
                    started.result()
            available = ranker is not None and ranker("warm up", 1) is not None
        finally:
            logger.removeHandler(captured)
        if available:

            def hybrid(query: str) -> Sequence[str]:
                session = ToolSearchSession(
                    catalog, max_results=k, namespaces=namespaces, semantic=ranker
                )
                return session.search(query).loaded

            model = wanted.package or wanted.model_dir or wanted.model
            columns.append(("hybrid", score(hybrid, cases, k), f"model {model}"))
        else:
            why = captured.messages[0] if captured.messages else "the model did not answer"
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
    parser.add_argument(
        "--local-model",
        metavar="DIR|PACKAGE",
        help="evaluate hybrid search with this local model (a folder, or an installed package "
        "that ships one) instead of the config's [skills.tool_search_embeddings]",
    )
    parser.add_argument(
        "--local-tokenizer",
        metavar="DIR|PACKAGE",
        help="where the local model's tokenizer.json is, when not beside the model",
    )
    parser.set_defaults(func=_eval)
