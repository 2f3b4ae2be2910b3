"""``bot-toolsearch search``: why can the model not find my tool?

It runs a ``tool_search`` query over a JSON list of tool schemas (``--catalog``, read by
`catalog`) or over the merged catalog of a config (``--config``, ``--tools``), and shows rank,
score and the words each tool matched, by field. It searches as the bot does: the config's
always-loaded tools are no results, and with an embedding model (the config's
``[skills.tool_search_embeddings]``, or ``--local-model``) the search is hybrid; the first line
says which ranking answered (BM25, hybrid, or BM25 because the model is unavailable, and why).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot_toolsearch._config.settings import BotSettings
from bot_toolsearch._core.catalog import ToolCatalog, search_index
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.query import KeywordQuery, parse_query
from bot_toolsearch._core.result import ToolSearchResult
from bot_toolsearch._core.session import ToolSearchSession
from bot_toolsearch._core.tokens import _words, index_terms
from bot_toolsearch._errors import ToolSearchError

from .catalog import (
    CatalogFileError,
    add_catalog_options,
    add_catalog_subparser,
    catalog_stats,
    load_catalog_file,
    load_merged,
)
from .hybrid import Ranking, add_model_options, model_label, prepare, wanted
from .options import USAGE, CliError, plural, positive_int

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

_FIELDS = (
    "name",
    "parameter names",
    "description",
    "parameter descriptions",
    "namespace",
    "namespace description",
)


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
    """Field → the tool's words that a query word hit, as written in the tool (``temp~
    temperature`` for a prefix match: the query's word, then the tool's)."""


def _spellings(texts: Iterable[str]) -> dict[str, str]:
    """Index term (a stem) → the word it came from, first seen; CJK terms stand for themselves."""
    out: dict[str, str] = {}
    for text in texts:
        for word in _words(text):
            if word.isascii():
                for term in index_terms(word):
                    out.setdefault(term, word)
    return out


def _schema_texts(schema: Mapping[str, Any]) -> list[str]:
    """Every text of a schema the index reads: name, description, parameter names and texts."""
    function = schema.get("function") or {}
    texts = [str(function.get("name", "")), str(function.get("description") or "")]
    stack: list[object] = [function.get("parameters")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, sub in node.items():
                texts.append(str(key))
                if isinstance(sub, str):
                    texts.append(sub)
                else:
                    stack.append(sub)
    return texts


def explain_search(
    catalog: ToolCatalog,
    query: str,
    max_results: int = 5,
    namespaces: Mapping[str, str] | None = None,
) -> tuple[list[Match], bool, tuple[str, ...]]:
    """The tools a fresh session's ``tool_search(query)`` loads, with scores and matched terms.

    Read-only: it uses a throwaway session and the catalog's own index and tokenizer.
    ``namespaces`` are the namespace descriptions a bot's session would search with
    (``[tools.namespaces]`` over the folder and MCP descriptions), as in the `Bot`.

    Returns:
        ``(matches, truncated, not_found)``; ``not_found`` lists ``select:`` names that are
        not in the catalog.
    """
    matches, result = _explain(catalog, query, max_results, namespaces)
    return matches, result.truncated, result.not_found


def _explain(
    catalog: ToolCatalog,
    query: str,
    max_results: int,
    namespaces: Mapping[str, str] | None,
    *,
    always_loaded: Iterable[str] = (),
    semantic: Ranking | None = None,
    no_match_floor: float | None = None,
) -> tuple[list[Match], ToolSearchResult]:
    """`explain_search`'s matches, and the whole search result (with a namespace's names);
    ``always_loaded``, ``semantic`` and ``no_match_floor`` as a bot's session has them."""
    described = tuple(namespaces.items()) if namespaces else ()
    session = ToolSearchSession(
        catalog,
        always_loaded=always_loaded,
        max_results=max_results,
        namespaces=namespaces,
        semantic=semantic,
        no_match_floor=no_match_floor if semantic is not None else None,
    )
    result = session.search(query)
    index = search_index(catalog, described)
    parsed = parse_query(query)
    scores: dict[int, float] = {}
    terms: tuple[str, ...] = ()
    if isinstance(parsed, KeywordQuery) and parsed.terms and parsed.text not in catalog:
        terms = parsed.terms
        scores = index.scores(parsed.terms, parsed.required)
    asked = _spellings([query])
    matches = []
    for rank, name in enumerate(result.loaded, 1):
        schema = catalog.schema(name) or {}
        written = _spellings(_schema_texts(schema))

        def word(hit: str, written: dict[str, str] = written) -> str:
            ours, _, theirs = hit.partition("~")
            if theirs:
                return f"{asked.get(ours, ours)}~{written.get(theirs, theirs)}"
            return written.get(ours, ours)

        hits = index.explain(terms, catalog.document(name, described))
        matched = {
            label: tuple(dict.fromkeys(word(hit) for hit in field_hits))
            for label, field_hits in zip(_FIELDS[: len(hits)], hits, strict=True)
        }
        score = scores.get(catalog.rank(name)) if scores else None
        matches.append(Match(rank, name, score, {k: v for k, v in matched.items() if v}))
    return matches, result


def _build_catalog(
    args: argparse.Namespace,
) -> tuple[ToolCatalog, Mapping[str, str], BotSettings]:
    """The catalog to search, its namespace descriptions (none for a ``--catalog`` file) and
    the settings (the defaults for a ``--catalog`` file)."""
    if args.catalog is not None:
        if args.config is not None or args.tools is not None:
            raise CliError("give --catalog FILE, or --config/--tools, not both", USAGE)
        return ToolCatalog(load_catalog_file(args.catalog)), {}, BotSettings()
    config, merged = load_merged(args)
    if merged.unavailable:
        servers = "; ".join(f"{name!r}: {why}" for name, why in merged.unavailable.items())
        raise CliError(f"MCP server unavailable, its tools cannot be searched: {servers}")
    # As a bot's session searches: the config's [tools.namespaces] over the sources' own.
    toolset = merged.toolset
    settings = config.loaded.settings
    return toolset.catalog, toolset.namespace_descriptions(settings.tools.namespaces), settings


def _search(args: argparse.Namespace) -> int:
    try:
        catalog, namespaces, settings = _build_catalog(args)
    except (ToolSearchError, ValueError) as exc:
        raise CliError(str(exc)) from None
    embeddings = wanted(args, settings)
    ranking: Ranking | None = None
    if embeddings is not None:
        _, ranking, why = prepare(settings, catalog, embeddings)
        if ranking is None:
            print(f"ranking: BM25 alone, the embedding model is unavailable ({why})")
    always = tuple(n for n in settings.skills.tool_search_always_loaded if n in catalog)
    try:
        matches, result = _explain(
            catalog,
            args.query,
            args.max_results,
            namespaces,
            always_loaded=always,
            semantic=ranking,
            no_match_floor=embeddings.no_match_floor if embeddings is not None else None,
        )
    except (ToolSearchError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if ranking is not None and embeddings is not None:
        if ranking.answered:
            print(f"ranking: hybrid, BM25 fused with {model_label(embeddings)}")
        else:
            print("ranking: BM25 alone (the query is select: or an exact name, or the model "
                  "did not answer in time)")  # fmt: skip
    elif args.explain and embeddings is None:
        print("ranking: BM25 (no embedding model configured)")
    truncated, not_found = result.truncated, result.not_found
    keyword = isinstance(parse_query(args.query), KeywordQuery)
    if not_found and not keyword:  # select: and exact names; keywords simply match nothing
        print(f"not in the catalog: {', '.join(not_found)}")
    if not matches and result.names:
        _print_listing(result, args.max_results)
        return 0
    if not matches:
        searched = plural(len(catalog), "tool")
        print(f"no tool matches {args.query!r} ({searched} searched)")
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
            if not why and ranking is not None and ranking.answered:
                why = "no word: found by meaning (the embedding model)"
            print(f"           matched {why or 'the exact name (select: or full name)'}")
    if truncated:
        print(f"(more tools match; raise --max-results above {args.max_results} to see them)")
    return 0


def _print_listing(result: ToolSearchResult, max_results: int) -> None:
    """A namespace too large to load at once: the page of names ``tool_search`` returns."""
    print(
        f"{plural(len(result.names), 'name')} listed, none loaded: the namespace has more "
        f"not-yet-loaded tools than --max-results {max_results}, so tool_search returns its "
        "names for the model to select: exactly"
    )
    for rank, name in enumerate(result.names, 1):
        print(f"{rank:>2}.    -    {name}")
    if result.next_query:
        print(f"(next page: {result.next_query!r})")


def add_search_subparser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``search QUERY [--catalog tools.json | --config PATH --tools M:A] [--explain]``."""
    parser = subparsers.add_parser(
        "search", help="search a tool catalog offline, as tool_search would"
    )
    parser.add_argument("query", help='a tool_search query, e.g. "weather forecast" or select:a,b')
    add_catalog_options(parser)
    parser.add_argument("--max-results", type=positive_int, default=5, help="results (default 5)")
    parser.add_argument("--explain", action="store_true", help="show the terms each tool matched")
    add_model_options(parser, "search hybrid")
    parser.set_defaults(func=_search)
