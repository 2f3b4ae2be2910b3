"""``ToolSearchSession``: the state of one ask — a grow-only loaded set, paging and results.

A session over a prebuilt :class:`ToolCatalog` costs time proportional to its always-loaded and
hidden names only; everything proportional to the catalog is precomputed there or computed
lazily (and cached) on first use.
"""

from __future__ import annotations

import heapq
import logging
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .catalog import TOOL_SEARCH_NAME, ToolCatalog, search_index
from .directory import DEFAULT_DIRECTORY_BUDGET, DeferredDirectory, build_directory
from .fusion import FUSION_DEPTH, fused_scores
from .index import SearchIndex, split_tier
from .prompt import tool_search_schema
from .query import (
    MAX_KEYWORD_CHARS,
    KeywordQuery,
    NameDecoder,
    SelectQuery,
    decode_default_wire_name,
    echo,
    namespace_item,
    parse_query,
)
from .rerank import RERANK_DEPTH, rerank, weights_for
from .result import ToolSearchResult, read_arguments
from .tokens import split_name

__all__ = ["NAMES_PAGE", "NO_MATCH_HINTS", "ToolSearchSession"]

logger = logging.getLogger("bot_toolsearch")

NO_MATCH_HINTS = 3
"""Closest tools named as hints when a search falls below the no-match floor."""
NAMES_PAGE = 50
"""Names per page when ``select:namespace.*`` lists a namespace too large to load."""
_WORD_EDGES = "\"'`()[]{}<>,;:!?*+"
"""Characters stripped from a keyword query's words before they are tried as tool names
(quotes, brackets, ``name()``, a trailing comma; the ``+`` of a required term); a trailing
full stop is stripped too."""


def _names_arg(value: Iterable[str], what: str) -> Iterable[str]:
    if isinstance(value, str | bytes):
        raise TypeError(f"{what} must be a collection of tool names, not a single string")
    return value


def _named_first(named: Sequence[str], ranked: Iterable[str]) -> Iterable[str]:
    """``named``, then ``ranked`` without them."""
    if not named:
        return ranked
    return (*named, *(name for name in ranked if name not in named))


class ToolSearchSession:
    """The tool-search state of one ask.

    Args:
        catalog_or_schemas: a prebuilt :class:`ToolCatalog` (cheap) or tool schemas (indexed
            now).
        always_loaded: names whose schemas every request carries; resolved exactly, then
            case-insensitively; unknown names are ignored.
        max_results: the cap on tools one search loads; an ``int`` >= 1.
        hidden: names (exact spelling) removed from this session entirely: from the catalog
            names, the directory, keyword search, ``select:`` and exact names.
        decode_name: turns a wire spelling the model may echo (``weather-_-forecast``) into a
            canonical name, for ``select:`` items and a bare full name that match no tool as
            written. Pass ``WireNames.to_canonical`` of the names you send; the default
            undoes the default delimiter ``-_-``.
        directory_budget: tokens the :attr:`directory` may take; 0 means no limit.
        directory_spelling: how the :attr:`directory` writes a name, when the model reads
            another spelling than the canonical one (``WireNames.to_wire`` of the names you
            send): the budget counts the names as written. ``None``: canonical names.
        namespaces: namespace -> description (``[tools.namespaces]``, MCP server
            instructions, folder READMEs): lines of a grouped directory, and text keyword
            search matches. Read when first needed; treat it as read-only.
        semantic: the optional semantic stage over this catalog, ``semantic(text, count)``
            -> ``(document id, similarity)`` pairs (ids are catalog ranks) best first, or
            ``None`` when unavailable; it must not raise
            (`bot_toolsearch._core.fusion.SemanticRanker`). A keyword query's BM25 scores are
            fused with the similarities (`bot_toolsearch._core.fusion`);
            ``select:`` and exact names never call it. ``None``: BM25 alone.
        no_match_floor: with ``semantic``, a keyword search whose candidates are all less
            similar to the query than this (cosine) loads nothing: it answers the query as
            not found, with the `NO_MATCH_HINTS` closest tools in ``names`` as hints.
            ``None`` (the default): off.

    Raises:
        ValueError: ``max_results`` is not a positive integer, ``directory_budget`` is
            not an integer >= 0, or ``no_match_floor`` is not in [-1, 1].
        TypeError: ``always_loaded`` or ``hidden`` is a single string.
    """

    __slots__ = (
        "_budget",
        "_catalog",
        "_catalog_names",
        "_decode",
        "_deferred",
        "_described",
        "_directory",
        "_excluded",
        "_excluded_docs",
        "_exposed",
        "_hidden",
        "_initial",
        "_loaded",
        "_loaded_docs",
        "_max_results",
        "_namespaces",
        "_no_match_floor",
        "_search_loaded",
        "_semantic",
        "_spelling",
    )

    def __init__(
        self,
        catalog_or_schemas: ToolCatalog | Sequence[Mapping[str, Any]],
        *,
        always_loaded: Iterable[str] = (),
        max_results: int = 5,
        hidden: Iterable[str] = (),
        decode_name: NameDecoder | None = None,
        directory_budget: int = DEFAULT_DIRECTORY_BUDGET,
        directory_spelling: Callable[[str], str] | None = None,
        namespaces: Mapping[str, str] | None = None,
        semantic: Callable[[str, int], Sequence[tuple[int, float]] | Sequence[int] | None]
        | None = None,
        no_match_floor: float | None = None,
    ) -> None:
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise ValueError(f"max_results must be a positive integer, got {max_results!r}")
        if (
            isinstance(directory_budget, bool)
            or not isinstance(directory_budget, int)
            or directory_budget < 0
        ):
            raise ValueError(f"directory_budget must be an integer >= 0, got {directory_budget!r}")
        self._budget = directory_budget
        self._spelling = directory_spelling
        self._semantic = semantic
        if no_match_floor is not None and not -1.0 <= no_match_floor <= 1.0:
            raise ValueError(
                f"no_match_floor must be a similarity in [-1, 1], got {no_match_floor!r}"
            )
        self._no_match_floor = no_match_floor
        self._namespaces = namespaces
        self._described: tuple[tuple[str, str], ...] | None = None
        self._directory: DeferredDirectory | None = None
        catalog = (
            catalog_or_schemas
            if isinstance(catalog_or_schemas, ToolCatalog)
            else ToolCatalog(catalog_or_schemas)
        )
        self._catalog = catalog
        self._decode = decode_name or decode_default_wire_name
        self._max_results = max_results
        self._hidden = frozenset(
            stripped
            for name in _names_arg(hidden, "hidden")
            if isinstance(name, str) and (stripped := name.strip()) in catalog
        )
        initial: set[str] = set()
        for name in _names_arg(always_loaded, "always_loaded"):
            if isinstance(name, str):
                resolved = self._resolve_real(name.strip())
                if resolved is not None:
                    initial.add(resolved)
        self._initial = tuple(sorted(initial, key=catalog.position))
        self._loaded = set(initial)
        self._search_loaded: list[str] = []
        self._exposed = frozenset((*self._initial, TOOL_SEARCH_NAME))
        self._excluded = self._hidden | initial
        self._excluded_docs: frozenset[int] | None = None
        rank = catalog.rank
        self._loaded_docs = {rank(name) for name in initial}
        self._deferred: tuple[str, ...] | None = None
        self._catalog_names: tuple[str, ...] | None = None

    def fork(self) -> ToolSearchSession:
        """A fresh session of this one's catalog and arguments, as this one started: only
        the always-loaded tools loaded, nothing searched. What this session derived from its
        arguments (the deferred names, the directory, ...) is shared, not computed again, so
        a fork costs time proportional to the always-loaded tools only: a host keeps one
        session per catalog and settings and forks it per ask."""
        fork = object.__new__(ToolSearchSession)
        fork._budget = self._budget
        fork._catalog = self._catalog
        fork._catalog_names = self._catalog_names
        fork._decode = self._decode
        fork._deferred = self._deferred
        fork._described = self._described
        fork._directory = self._directory
        fork._excluded = self._excluded
        fork._excluded_docs = self._excluded_docs
        fork._hidden = self._hidden
        fork._max_results = self._max_results
        fork._namespaces = self._namespaces
        fork._no_match_floor = self._no_match_floor
        fork._semantic = self._semantic
        fork._spelling = self._spelling
        initial = fork._initial = self._initial
        fork._loaded = set(initial)
        fork._search_loaded = []
        fork._exposed = frozenset((*initial, TOOL_SEARCH_NAME))
        rank = self._catalog.rank
        fork._loaded_docs = {rank(name) for name in initial}
        return fork

    # -- read-only views ------------------------------------------------------------------

    @property
    def catalog(self) -> ToolCatalog:
        """The catalog this session searches (hidden tools included; see :meth:`has_tool`)."""
        return self._catalog

    @property
    def semantic(
        self,
    ) -> Callable[[str, int], Sequence[tuple[int, float]] | Sequence[int] | None] | None:
        """The semantic stage keyword searches fuse with BM25, or ``None`` (BM25 alone)."""
        return self._semantic

    @property
    def max_results(self) -> int:
        """The configured cap on tools one search loads."""
        return self._max_results

    @property
    def catalog_tool_names(self) -> tuple[str, ...]:
        """Canonical names of the session catalog (catalog minus hidden), in catalog order."""
        if self._catalog_names is None:
            names = self._catalog.names
            hidden = self._hidden
            self._catalog_names = tuple(n for n in names if n not in hidden) if hidden else names
        return self._catalog_names

    @property
    def deferred_tool_names(self) -> tuple[str, ...]:
        """Session catalog names not always-loaded, sorted by ``(casefold(name), name)``."""
        if self._deferred is None:
            self._deferred = self._catalog.deferred_names(self._excluded)
        return self._deferred

    @property
    def directory(self) -> DeferredDirectory:
        """The ``<available_deferred_tools>`` block of this session under its budget.

        Computed once per catalog, excluded set, always-loaded set, budget, namespace
        descriptions and spelling (compared with ``==``, as bound methods of one object are),
        then shared by every session that asks for the same (see
        `bot_toolsearch._core.directory`). ``directory.grouped`` says whether the host should
        add `GROUPED_DIRECTORY_RULES` to the rules.
        """
        if self._directory is None:
            described = self._namespace_items()
            deferred = self.deferred_tool_names
            catalog = self._catalog
            spelling = self._spelling
            key = ("directory", self._excluded, self._initial, self._budget, described, spelling)
            self._directory = catalog.memo(
                key,
                lambda: build_directory(
                    deferred,
                    budget=self._budget,
                    descriptions=dict(described),
                    always_loaded=self._initial,
                    tool_descriptions=catalog.description,
                    spell=spelling,
                ),
            )
        return self._directory

    def _namespace_items(self) -> tuple[tuple[str, str], ...]:
        if self._described is None:
            given = self._namespaces
            self._described = tuple(given.items()) if given else ()
        return self._described

    @property
    def total_deferred_tools(self) -> int:
        """The number of initially deferred tools."""
        return len(self._catalog) - len(self._excluded)

    @property
    def loaded_tool_names(self) -> frozenset[str]:
        """Names whose schemas the next request carries (``tool_search`` not included)."""
        return frozenset(self._loaded)

    @property
    def tool_search_schema(self) -> dict[str, Any]:
        """A fresh copy of the virtual tool's schema, ``max_results`` up to the cap."""
        return tool_search_schema(self._max_results)

    def has_tool(self, name: str) -> bool:
        """Whether ``name`` (exact spelling) is in the session catalog, i.e. permitted."""
        return name in self._catalog and name not in self._hidden

    def exposed_tool_names(self) -> frozenset[str]:
        """Names the latest :meth:`request_tools` sent, ``tool_search`` included."""
        return self._exposed

    def request_tools(self) -> list[dict[str, Any]]:
        """The tool list for the next model round, and freeze that round's exposure.

        The order is the initially loaded tools in catalog order, then ``tool_search``, then
        the tools loaded by searches in load order, so each round's list extends the previous
        one (a stable prompt-cache prefix). The schemas are fresh copies.
        """
        tools = self._catalog.schemas(self._initial)
        tools.append(tool_search_schema(self._max_results))
        tools.extend(self._catalog.schemas(self._search_loaded))
        self._exposed = frozenset((*self._initial, TOOL_SEARCH_NAME, *self._search_loaded))
        return tools

    def request_tool_names(self) -> tuple[str, ...]:
        """The names of the tools :meth:`request_tools` lists, in its order, and freeze that
        round's exposure as it does; for a host that sends schemas of its own for them (no
        schema is copied)."""
        names = (*self._initial, TOOL_SEARCH_NAME, *self._search_loaded)
        self._exposed = frozenset(names)
        return names

    # -- searching ------------------------------------------------------------------------

    def _resolve_real(self, name: str) -> str | None:
        if name in self._catalog and name not in self._hidden:
            return name
        for variant in self._catalog.case_variants(name):
            if variant not in self._hidden:
                return variant
        return None

    def _resolve(self, name: str) -> str | None:
        # An exact catalog spelling beats the virtual name; the virtual name beats case folding.
        if name in self._catalog and name not in self._hidden:
            return name
        if name.casefold() == TOOL_SEARCH_NAME:
            return TOOL_SEARCH_NAME
        real = self._resolve_real(name)
        if real is None:
            # A wire spelling, as the model saw it in its tools list (grammar table, README).
            decoded = self._decode(name)
            if decoded is not None and decoded != name:
                real = self._resolve_real(decoded)
        return real

    def _namespace(
        self, item: str, limit: int
    ) -> tuple[tuple[str, ...] | None, tuple[tuple[str, ...], str | None] | None]:
        """``(members, None)`` to load a namespace whole, ``(members, (page, next query))``
        to list a page of its names, ``(None, None)`` when ``item`` names no namespace."""
        parsed = namespace_item(item)
        if parsed is None:
            return None, None
        hidden = self._hidden
        members = tuple(
            n for n in self._catalog.namespace_members(parsed.namespace) if n not in hidden
        )
        if not members:
            return None, None
        unloaded = sum(1 for n in members if n not in self._loaded)
        if parsed.page == 1 and unloaded <= limit:
            return members, None
        start = (parsed.page - 1) * NAMES_PAGE
        page = members[start : start + NAMES_PAGE]
        more = start + NAMES_PAGE < len(members)
        following = f"select:{parsed.namespace}.*:{parsed.page + 1}" if more and page else None
        return members, (page, following)

    def _limit(self, max_results: object) -> int:
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            return self._max_results
        return max(1, min(max_results, self._max_results))

    def _result(self, **fields: Any) -> ToolSearchResult:
        # A not-found query or name is repeated to the model, so its length is bounded.
        not_found = fields.pop("not_found", ())
        return ToolSearchResult(
            not_found=tuple(echo(text) for text in not_found),
            total_deferred_tools=self.total_deferred_tools,
            **fields,
        )

    def _take(self, ordered: Iterable[str], limit: int) -> ToolSearchResult:
        # The cap counts new loads only; matches loaded before are reported, not re-counted.
        loaded: list[str] = []
        already: list[str] = []
        truncated = False
        for name in ordered:
            if name == TOOL_SEARCH_NAME or name in self._loaded:
                already.append(name)
            elif len(loaded) < limit:
                loaded.append(name)
            else:
                truncated = True
                break
        # The loaded set only grows within a session.
        self._loaded.update(loaded)
        rank = self._catalog.rank
        self._loaded_docs.update(rank(name) for name in loaded)
        self._search_loaded.extend(loaded)
        return self._result(
            loaded=tuple(loaded), already_loaded=tuple(already), truncated=truncated
        )

    def search(self, query: str, max_results: object = None) -> ToolSearchResult:
        """Run a ``tool_search`` query and load what it selects.

        Args:
            query: ``select:a,b`` (commas or whitespace separate names), a full tool name, or
                keywords with optional ``+required`` terms.
            max_results: lowers the cap for this call; values < 1 count as 1, ``None``,
                bools and non-integers are ignored.

        Returns:
            The result; newly loaded tools are exposed from the next :meth:`request_tools`.

        Raises:
            TypeError: ``query`` is not a string (the model's arguments go through
                :meth:`execute`, which never raises).
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        limit = self._limit(max_results)
        parsed = parse_query(query)
        if isinstance(parsed, SelectQuery):
            if not parsed.names:
                return self._result(not_found=(parsed.text,))
            resolved: dict[str, None] = {}
            missing: dict[str, str] = {}
            listing: list[str] = []
            next_query: str | None = None
            for item in parsed.names:
                name = self._resolve(item)
                if name is not None:
                    resolved.setdefault(name)
                    continue
                members, page = self._namespace(item, limit)
                if members is None:
                    missing.setdefault(item.casefold(), item)
                elif page is None:
                    resolved.update(dict.fromkeys(members))
                elif page[0]:
                    listing.extend(n for n in page[0] if n not in listing)
                    next_query = next_query or page[1]
                else:
                    missing.setdefault(item.casefold(), item)  # a page past the end
            result = self._take(resolved, limit)
            if not missing and not listing:
                return result
            return ToolSearchResult(
                loaded=result.loaded,
                already_loaded=result.already_loaded,
                not_found=tuple(echo(item) for item in missing.values()),
                truncated=result.truncated or bool(listing),
                total_deferred_tools=result.total_deferred_tools,
                names=tuple(listing),
                next_query=next_query,
            )
        if not parsed.text:
            return self._result()
        exact = self._resolve(parsed.text)
        if exact is not None:
            return self._take((exact,), limit)
        if not parsed.terms:
            return self._result(not_found=(parsed.text,))
        # Tools the query names outright, among other words, come first (any spelling).
        named = self._named(parsed.text)
        # Namespace descriptions are indexed in their tools' namespace field.
        index = search_index(self._catalog, self._namespace_items())
        scores = index.scores(parsed.terms, parsed.required)
        scores = self._deferred_only(scores)
        if self._semantic is not None:
            fused = self._fused(parsed, scores, limit, index)
            if fused is not None:
                order, best = fused
                if not order and not named:
                    return self._result(not_found=(parsed.text,))
                names = self._catalog.sorted_names
                floor = self._no_match_floor
                if not named and floor is not None and best is not None and best < floor:
                    # Nothing is close in meaning: no tool rather than five weak ones; the
                    # closest names are hints the model may select: if one fits after all.
                    hints = [names[d] for d in order if names[d] not in self._loaded]
                    return self._result(
                        not_found=(parsed.text,), names=tuple(hints[:NO_MATCH_HINTS])
                    )
                return self._take(_named_first(named, (names[doc] for doc in order)), limit)
        if not scores and not named:
            return self._result(not_found=(parsed.text,))
        names = self._catalog.sorted_names
        ranked = self._bm25_order(index, parsed.terms, scores, limit)
        return self._take(_named_first(named, (names[d] for d in ranked)), limit)

    def _bm25_order(
        self, index: SearchIndex, terms: Sequence[str], scores: dict[int, float], limit: int
    ) -> list[int]:
        """`_ranked`, its best candidates reordered by the second stage when it has weights."""
        weights = weights_for(hybrid=False)
        if weights is None:
            return self._ranked(scores, limit + 1)
        ranked = self._ranked(scores, max(limit + 1, RERANK_DEPTH))
        within = [split_tier(scores[d]) for d in ranked]
        return rerank(
            index,
            terms,
            ranked,
            [score for _, score in within],
            weights,
            tiers=[tier for tier, _ in within],
        )

    def _named(self, text: str) -> list[str]:
        """The tools a keyword query names outright, in the query's order: each word (quotes,
        brackets and trailing punctuation stripped) that resolves as an exact name does
        (exact, any case, or a wire spelling). Only names of two parts or more
        (``get_weather``, ``math.factorial``, ``searchSongs``) count: a one-word name
        (``list``, ``search``) is an ordinary word in a query, left to the ranking."""
        found: dict[str, None] = {}
        for raw in text[:MAX_KEYWORD_CHARS].split():
            word = raw.strip(_WORD_EDGES).rstrip(".")
            if not word:
                continue
            name = self._resolve(word)
            if name is not None and name != TOOL_SEARCH_NAME and len(split_name(name)) > 1:
                found.setdefault(name)
        return list(found)

    def _deferred_only(self, scores: dict[int, float]) -> dict[int, float]:
        """``scores`` (changed) without the hidden and always-loaded tools: keyword hits are
        initially deferred tools only."""
        excluded = self._excluded_ranks()
        if excluded:
            if len(excluded) < len(scores):
                for doc in excluded:
                    scores.pop(doc, None)
            else:
                scores = {d: v for d, v in scores.items() if d not in excluded}
        return scores

    def _excluded_ranks(self) -> frozenset[int]:
        """The document ids of the hidden and always-loaded tools (fixed per session)."""
        if self._excluded_docs is None:
            rank = self._catalog.rank
            self._excluded_docs = frozenset(rank(name) for name in self._excluded)
        return self._excluded_docs

    def _ranked(self, scores: dict[int, float], depth: int) -> list[int]:
        """The documents `_take` needs of the BM25 ranking, in order: the ``depth`` best tools
        not loaded yet (``limit + 1`` of them, or the second stage's candidates) and every
        loaded tool ranked above the last of them.

        With nothing loaded, the cut is made at the ``depth``-th best score (in C) and
        only what is above it is sorted. Once tools are loaded, any number of them may rank
        above that cut, so the candidates are heaped by (score, document id) instead, in C,
        and taken best first until ``depth`` are not loaded: the cost does not grow with
        the loaded set, which is only looked up in.
        """
        loaded = self._loaded_docs
        if not loaded:
            if depth < len(scores):
                # Ties at the cut stay in, so the (score, doc id) order below is exact.
                floor = heapq.nlargest(depth, scores.values())[-1]
                top = [d for d, s in scores.items() if s >= floor]
            else:
                top = list(scores)
            top.sort(key=lambda d: (-scores[d], d))
            return top[:depth]
        heap = list(zip(map(operator.neg, scores.values()), scores, strict=True))
        heapq.heapify(heap)
        taken: list[int] = []
        fresh = 0
        pop = heapq.heappop
        while heap and fresh < depth:
            doc = pop(heap)[1]
            taken.append(doc)
            if doc not in loaded:
                fresh += 1
        return taken

    def _fused(
        self, parsed: KeywordQuery, scores: dict[int, float], limit: int, index: SearchIndex
    ) -> tuple[list[int], float | None] | None:
        """The BM25 ``scores`` fused with the semantic ranking (its best candidates reordered
        by the second stage when it has weights), and the best similarity of a candidate
        (``None`` from a hook that gives bare ids); ``None`` without a ranking."""
        assert self._semantic is not None
        # The text as the model meant it: ``+`` marks dropped, as bounded as the parser's.
        words = parsed.text[:MAX_KEYWORD_CHARS].split()
        text = " ".join(w[1:] if w.startswith("+") and len(w) > 1 else w for w in words)
        depth = max(FUSION_DEPTH, limit + len(self._loaded) + 1)
        ranked = self._semantic(text, depth + len(self._excluded))
        if ranked is None:
            return None
        excluded = self._excluded_ranks()
        semantic: list[Any] = [
            item
            for item in ranked
            if (item[0] if isinstance(item, tuple) else item) not in excluded
        ]
        allowed = scores.keys() if parsed.required else None
        similarities = [
            item[1]
            for item in semantic
            if isinstance(item, tuple) and (allowed is None or item[0] in allowed)
        ]
        found = fused_scores(
            scores, semantic, depth=depth, tiers=len(parsed.terms) == 1, allowed=allowed
        )
        order = sorted(found, key=lambda d: (-found[d][0], -found[d][1], d))
        weights = weights_for(hybrid=True)
        if weights is not None and order:
            head = order[:RERANK_DEPTH]
            similarity = {item[0]: item[1] for item in semantic if isinstance(item, tuple)}
            order = rerank(
                index,
                parsed.terms,
                order,
                [found[d][1] for d in head],
                weights,
                tiers=[found[d][0] for d in head],
                similarity=similarity,
            )
        return order, max(similarities, default=None)

    def execute(self, arguments: object) -> str:
        """Run a model's ``tool_search`` call and return the tool result text.

        The same as ``run(arguments).to_json()``: hosts that also read the result (for their
        statistics) call :meth:`run` and serialise once, at the edge.

        Args:
            arguments: the call's arguments, a mapping or the raw JSON string from the model.

        Returns:
            Compact JSON with ``loaded``, ``already_loaded``, ``not_found``, ``truncated`` and
            ``total_deferred_tools``; plus ``error`` when the arguments were unusable (invalid
            JSON, not an object, ``query`` missing or not a string). Never raises on bad input;
            extra argument fields are ignored.
        """
        return self.run(arguments).to_json()

    def run(self, arguments: object) -> ToolSearchResult:
        """Run a model's ``tool_search`` call and return the result as a value.

        Args:
            arguments: the call's arguments, a mapping or the raw JSON string from the model.

        Returns:
            The :class:`ToolSearchResult`; its ``error`` is set when the arguments were
            unusable. Never raises on bad input; extra argument fields are ignored.
        """
        args, error = read_arguments(arguments)
        if args is not None:
            query = args["query"]
            max_results = args.get("max_results")
            result = self.search(query, max_results)
            logger.info(
                "[tool_search] query=%r max_results=%r loaded=%r already_loaded=%r "
                "not_found=%r truncated=%r",
                query[:200],
                max_results,
                result.loaded,
                result.already_loaded,
                result.not_found,
                result.truncated,
            )
        else:
            result = self._result(error=error)
            logger.info("[tool_search] rejected arguments: %s", error)
        return result
