"""``bot-toolsearch search`` and ``catalog stats``: debug a tool catalog file offline.

``search`` answers "why can the model not find my tool?": it runs a ``tool_search`` query over
a JSON list of tool schemas and shows rank, score and the query terms each tool matched, by
field. ``catalog stats`` shows what the wire encoding changes, which names are unusable, and
what the first request costs with and without tool search.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._catalog import TOOL_SEARCH_NAME, ToolCatalog, _parameter_text, invalid_name_reason
from ._errors import ToolSearchError
from ._index import _TIER_STEP
from ._names import DEFAULT_DOT_DELIMITER, WireNames, encode_name
from ._prompt import TOOL_SEARCH_RULES, render_deferred_tools
from ._query import KeywordQuery, parse_query
from ._session import ToolSearchSession
from ._tokens import index_terms

__all__ = ["Match", "add_catalog_subparser", "add_search_subparser", "explain_search"]

_FIELDS = ("name", "parameter names", "description", "parameter descriptions")
_PREFIX_MIN = 4  # the index's own minimum length for prefix matches


class CatalogFileError(ValueError):
    """A catalog file cannot be read as a JSON list of tool schemas.

    A CLI-input error, not part of the library's `ToolSearchError` tree.
    """


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


def load_catalog_file(path: str) -> list[dict[str, Any]]:
    """Read a JSON list of tool schemas (Chat Completions or Responses shape).

    Raises:
        CatalogFileError: the file is missing, unreadable, not JSON, or not a list of objects.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogFileError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CatalogFileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise CatalogFileError(f"{path}: expected a JSON list of tool schema objects")
    # Responses-style entries carry the function fields at the top level.
    return [
        e if "function" in e or "name" not in e else {"type": "function", "function": e}
        for e in data
    ]


def _field_terms(schema: Mapping[str, Any]) -> tuple[set[str], ...]:
    function = schema.get("function") or {}
    description = function.get("description")
    names, texts = _parameter_text(function.get("parameters"))
    return (
        set(index_terms(str(function.get("name", "")))),
        set(names),
        set(index_terms(description)) if isinstance(description, str) else set(),
        set(texts),
    )


def _hits(term: str, terms: set[str]) -> list[str]:
    if term in terms:
        return [term]
    if len(term) < _PREFIX_MIN or not term.isascii():
        return []
    return [
        f"{term}~{t}"
        for t in sorted(terms)
        if t.startswith(term) or term.startswith(t)
        if len(t) >= _PREFIX_MIN
    ]


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
        schema = catalog.schema(name) or {}
        fields = _field_terms(schema)
        matched = {
            label: tuple(hit for term in terms for hit in _hits(term, field))
            for label, field in zip(_FIELDS, fields, strict=True)
        }
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
    tiered = any(m.score is not None and m.score >= _TIER_STEP for m in matches)
    if tiered and args.explain:
        print("(one-word query: name hits rank first, then parameter-name hits, then the rest;")
        print(" the score orders tools within each group)")
    for match in matches:
        score = "   -  " if match.score is None else f"{match.score % _TIER_STEP:6.2f}"
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


@dataclass(frozen=True, slots=True)
class CatalogStats:
    """The figures ``catalog stats`` prints."""

    entries: int
    usable: int
    renamed: tuple[tuple[str, str], ...]
    invalid: tuple[tuple[str, str], ...]
    duplicates: tuple[str, ...]
    case_variants: tuple[tuple[str, ...], ...]
    full_tokens: int
    projected_tokens: int


def catalog_stats(schemas: Sequence[Mapping[str, Any]], dot_delimiter: str) -> CatalogStats:
    """Compute the ``catalog stats`` figures for a list of schemas."""
    from ._demo import tokens

    entries = len(schemas)
    raw_names = [(e.get("function") or {}).get("name") for e in schemas]
    invalid = tuple(
        (repr(n), reason) for n in raw_names if (reason := invalid_name_reason(n)) is not None
    ) + tuple(
        (repr(n), "reserved for the virtual tool_search tool")
        for n in raw_names
        if n == TOOL_SEARCH_NAME
    )
    # Reported above; a bot with tool search on refuses the whole catalog until it is renamed.
    schemas = [e for e in schemas if (e.get("function") or {}).get("name") != TOOL_SEARCH_NAME]
    seen: set[str] = set()
    duplicates: list[str] = []
    for name in raw_names:
        if isinstance(name, str) and invalid_name_reason(name) is None:
            if name in seen and name not in duplicates:
                duplicates.append(name)
            seen.add(name)
    catalog = ToolCatalog(schemas)
    wire = WireNames.build(catalog.names, dot_delimiter=dot_delimiter)
    renamed = tuple((n, wire.to_wire(n)) for n in catalog.names if wire.to_wire(n) != n)
    groups: dict[str, list[str]] = {}
    for name in catalog.names:
        groups.setdefault(name.casefold(), []).append(name)
    variants = tuple(tuple(g) for g in groups.values() if len(g) > 1)
    session = ToolSearchSession(catalog)
    directory = render_deferred_tools(session.deferred_tool_names) + "\n\n" + TOOL_SEARCH_RULES
    return CatalogStats(
        entries=entries,
        usable=len(catalog),
        renamed=renamed,
        invalid=invalid,
        duplicates=tuple(duplicates),
        case_variants=variants,
        full_tokens=tokens.tools_tokens(catalog.schemas(catalog.names)),
        projected_tokens=tokens.tools_tokens(session.request_tools())
        + tokens.messages_tokens([{"role": "system", "content": directory}]),
    )


def _print_list(title: str, rows: Sequence[str], limit: int = 20) -> None:
    print(f"{title}: {len(rows)}")
    for row in rows[:limit]:
        print(f"  {row}")
    if len(rows) > limit:
        print(f"  … and {len(rows) - limit} more")


def _stats(args: argparse.Namespace) -> int:
    from ._demo import tokens

    library = logging.getLogger("bot_toolsearch")
    level = library.level
    try:
        schemas = load_catalog_file(args.catalog)
        encode_name("x", args.dot_delimiter)  # validates the delimiter
        # The skipped-entry warnings would repeat what the report lists.
        library.setLevel(logging.ERROR)
        stats = catalog_stats(schemas, args.dot_delimiter)
    except (ToolSearchError, ValueError) as exc:
        print(f"bot-toolsearch catalog stats: error: {exc}", file=sys.stderr)
        return 2
    finally:
        library.setLevel(level)
    print(f"tools: {stats.usable} usable of {stats.entries} entries")
    _print_list("names the wire encoding changes", [f"{a} -> {b}" for a, b in stats.renamed])
    _print_list("invalid names (skipped)", [f"{n}: {r}" for n, r in stats.invalid])
    _print_list("duplicate names (first kept)", list(stats.duplicates))
    _print_list("case-variant names", [", ".join(g) for g in stats.case_variants])
    saved = stats.full_tokens - stats.projected_tokens
    share = saved / stats.full_tokens * 100 if stats.full_tokens else 0.0
    print(f"tokens ({tokens.counter_label()}):")
    print(f"  full tools list:                      {stats.full_tokens:>8}")
    print(f"  first request with tool search:       {stats.projected_tokens:>8}")
    print("    (always-loaded tools + tool_search + directory and rules message)")
    print(f"  saved:                                {saved:>8} ({share:.1f}%)")
    if saved <= 0:
        print("  (this catalog is small enough to send whole: tool search does not pay off)")
    return 0


def add_catalog_subparser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add the ``catalog`` group: ``catalog stats tools.json`` and ``catalog list``."""
    parser = subparsers.add_parser("catalog", help="inspect a tool catalog file")
    commands = parser.add_subparsers(dest="catalog_command", metavar="COMMAND", required=True)
    stats = commands.add_parser("stats", help="names, encoding and token cost of a catalog")
    stats.add_argument("catalog", help="JSON list of OpenAI tool schemas")
    stats.add_argument(
        "--dot-delimiter", default=DEFAULT_DOT_DELIMITER, help="what replaces dots on the wire"
    )
    stats.set_defaults(func=_stats)
    from ._registry_cli import add_catalog_list_command

    add_catalog_list_command(commands)  # ``catalog list`` (issue 6) joins the same group
