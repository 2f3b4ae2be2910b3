"""``bot-toolsearch search``: why can the model not find my tool?

It runs a ``tool_search`` query over a JSON list of tool schemas (read by `catalog`) and
shows rank, score and the query terms each tool matched, by field.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.query import KeywordQuery, parse_query
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._errors import ToolSearchError

from .catalog import CatalogFileError, add_catalog_subparser, catalog_stats, load_catalog_file

# The catalog names are re-exported: the CLI and older imports find them here.
__all__ = [
    "CatalogFileError",
    "Match",
    "add_catalog_subparser",
    "add_search_subparser",
    "catalog_stats",
    "explain_search",
    "load_catalog_file",
]

_FIELDS = ("name", "parameter names", "description", "parameter descriptions")


@dataclass(frozen=True, slots=True)
class Match:
    """One search hit and why it matched."""

    rank: int
    """1-based position."""
    name: str
    """Canonical tool name."""
    score: float | None
    """Index score; ``None`` for ``select:`` and exact-name hits, which are not scored."""
    matched: Mapping[str, tuple[str, ...]]
    """Field → query terms that hit it (``term~indexterm`` for a prefix match)."""


def explain_search(
    catalog: ToolCatalog, query: str, max_results: int = 5
) -> tuple[list[Match], bool, tuple[str, ...]]:
    """The tools a fresh session's ``tool_search(query)`` loads, with scores and matched terms.

    Read-only: it uses a throwaway session and the catalog's own index and tokenizer.

    Returns:
        ``(matches, truncated, not_found)``; ``not_found`` lists ``select:`` names that are
        not in the catalog.
    """
    result = ToolSearchSession(catalog, max_results=max_results).search(query)
    parsed = parse_query(query)
    scores: dict[int, float] = {}
    terms: tuple[str, ...] = ()
    if isinstance(parsed, KeywordQuery) and parsed.terms and parsed.text not in catalog:
        terms = parsed.terms
        scores = catalog.index.scores(parsed.terms, parsed.required)
    matches = []
    for rank, name in enumerate(result.loaded, 1):
        hits = catalog.index.explain(terms, catalog.document(name))
        matched = dict(zip(_FIELDS, hits, strict=True))
        score = scores.get(catalog.rank(name)) if scores else None
        matches.append(Match(rank, name, score, {k: v for k, v in matched.items() if v}))
    return matches, result.truncated, result.not_found


def _build_catalog(path: str) -> ToolCatalog:
    return ToolCatalog(load_catalog_file(path))


def _search(args: argparse.Namespace) -> int:
    try:
        catalog = _build_catalog(args.catalog)
        matches, truncated, not_found = explain_search(catalog, args.query, args.max_results)
    except (ToolSearchError, ValueError) as exc:
        print(f"bot-toolsearch search: error: {exc}", file=sys.stderr)
        return 2
    if not_found:
        print(f"not in the catalog: {', '.join(not_found)}")
    if not matches:
        print(f"no tool matches {args.query!r} ({len(catalog)} tools searched)")
        return 1
    tiered = any(m.score is not None and split_tier(m.score)[0] for m in matches)
    if tiered and args.explain:
        print("(one-word query: name hits rank first, then parameter-name hits, then the rest;")
        print(" the score orders tools within each group)")
    for match in matches:
        score = "   -  " if match.score is None else f"{split_tier(match.score)[1]:6.2f}"
        print(f"{match.rank:>2}. {score}  {match.name}")
        if args.explain:
            why = "; ".join(f"{k}: {', '.join(v)}" for k, v in match.matched.items())
            print(f"           matched {why or 'the exact name (select: or full name)'}")
    if truncated:
        print(f"(more tools match; raise --max-results above {args.max_results} to see them)")
    return 0


def add_search_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``search QUERY --catalog tools.json [--max-results N] [--explain]``."""
    parser = subparsers.add_parser(
        "search", help="search a tool catalog file offline, as tool_search would"
    )
    parser.add_argument("query", help='a tool_search query, e.g. "weather forecast" or select:a,b')
    parser.add_argument("--catalog", required=True, help="JSON list of OpenAI tool schemas")
    parser.add_argument("--max-results", type=_positive, default=5, help="results (default 5)")
    parser.add_argument("--explain", action="store_true", help="show the terms each tool matched")
    parser.set_defaults(func=_search)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value
