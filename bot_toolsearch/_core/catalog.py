"""``ToolCatalog``: a validated, immutable, indexed snapshot of tool schemas.

The catalog is the only part of tool search that does work proportional to the number of tools.
It is built once per registry change and shared by every ask, so everything a session needs is
precomputed here: the search index, the ``(casefold, name)`` order, and the case-insensitive
name map.
"""

from __future__ import annotations

import bisect
import gc
import json
import logging
import threading
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from bot_toolsearch._core.unicode import well_formed
from bot_toolsearch._errors import CatalogError

from .index import Document, Fragments, SearchIndex
from .tokens import release_caches, text_terms

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_SCHEMA_DEPTH",
    "TOOL_SEARCH_NAME",
    "Namespaces",
    "ToolCatalog",
    "invalid_name_reason",
    "log_reserved_skipped",
    "schema_depth_problem",
    "search_index",
]

TOOL_SEARCH_NAME = "tool_search"
"""The name of the virtual search tool; a real tool of that name is skipped where it is offered."""

_RESERVED_REASON = "the reserved name of the virtual search tool"
"""Why a catalog skips a real tool named ``tool_search`` (shown in its one warning)."""

logger = logging.getLogger("bot_toolsearch")

# json.dumps(..., ensure_ascii=False, allow_nan=False) without building an encoder per tool.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

# JSON Schema keywords that can hold parameters: 0 = a mapping of sub-schemas, 1 = a single
# sub-schema, 2 = a list of sub-schemas (``items`` is either of the last two).
_SCHEMA_KEYS = {
    "$defs": 0,
    "definitions": 0,
    "properties": 0,
    "patternProperties": 0,
    "additionalProperties": 1,
    "contains": 1,
    "else": 1,
    "if": 1,
    "items": 1,
    "not": 1,
    "propertyNames": 1,
    "then": 1,
    "allOf": 2,
    "anyOf": 2,
    "oneOf": 2,
    "prefixItems": 2,
}


_DEFERRED_CACHE_SIZE = 64
# Search indexes with namespace descriptions kept per catalog, besides the one without (one
# per set of descriptions: a config reload that changes them builds a new one).
_INDEXES_KEPT = 2
_T = TypeVar("_T")

Namespaces = tuple[tuple[str, str], ...]
"""``(namespace, description)`` pairs, as a hashable key."""

MAX_NAME_LENGTH = 256
"""Longest canonical tool name: every deferred name costs prompt tokens on every ask, so a
hostile catalog must not be able to inflate the directory with one giant name."""


MAX_SCHEMA_DEPTH = 128
"""Deepest nesting of objects and arrays in a tool's ``parameters`` (the schema object itself
is level 1). Deeper parameters are refused with `CatalogError` (or the catalog entry skipped),
explicitly, long before Python's recursion limit could turn them into a ``RecursionError``."""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def schema_depth_problem(value: object, limit: int = MAX_SCHEMA_DEPTH) -> str | None:
    """Why ``value`` nests too deeply, or ``None`` when it is within ``limit`` levels.

    Iterative, and each container is visited once, so neither deep nor self-referencing
    values can exhaust the stack or loop (a cycle is left to the JSON encoder to name).

    >>> schema_depth_problem({"a": [{"b": 1}]}), schema_depth_problem([[[]]], limit=2)
    (None, 'nests deeper than 2 levels')
    """
    if not isinstance(value, Mapping | list | tuple):
        return None
    # Only containers are pushed (scalars are most of a schema and need no visit).
    stack: list[tuple[Any, int]] = [(value, 1)]  # containers only: mappings, lists, tuples
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return f"nests deeper than {limit} levels"
        if id(node) in seen:
            continue
        seen.add(id(node))
        children = node.values() if type(node) is dict or isinstance(node, Mapping) else node
        deeper = depth + 1
        for child in children:
            kind = type(child)  # exact types first: the ABC check is slow and rarely needed
            container = kind is dict or kind is list
            if container or (kind not in _SCALARS and isinstance(child, Mapping | tuple | list)):
                stack.append((child, deeper))
    return None


def invalid_name_reason(name: object) -> str | None:
    """Why ``name`` cannot be a tool name, or ``None`` when it can.

    A name must be a non-empty string of at most `MAX_NAME_LENGTH` characters without
    whitespace, control or format characters, ``<`` or ``>``, so that it always fits on one
    short line of the deferred-tools directory.
    """
    if not isinstance(name, str):
        return f"name is {type(name).__name__}, not a string"
    if not name:
        return "name is empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"name is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
    if name.isascii() and name.isprintable() and not any(ch in name for ch in " <>"):
        return None  # the usual case, without a per-character Unicode lookup
    for ch in name:
        if ch.isspace():
            return "name contains whitespace"
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            return f"name contains the control character U+{ord(ch):04X}"
        if ch in "<>":
            return "name contains '<' or '>'"
    return None


def _parameter_text(
    parameters: object,
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The terms of every property name, and of every description and enum value, in a schema,
    one fragment (tuple of terms) per text; equal texts give the very same tuple (cached).

    ``parameters`` is freshly parsed JSON: its containers are exactly ``dict`` and ``list``,
    without cycles (a stack bounds deep nesting). Only the keys a node has are looked at: the
    walk runs over every schema of the catalog.
    """
    names: list[tuple[str, ...]] = []
    texts: list[tuple[str, ...]] = []
    stack: list[object] = [parameters]
    keys = _SCHEMA_KEYS
    while stack:
        node = stack.pop()
        if type(node) is list:
            stack.extend(node)
            continue
        if type(node) is not dict:
            continue
        for key, sub in node.items():
            if key == "description":
                if type(sub) is str:
                    texts.append(text_terms(sub))
            elif key == "enum":
                if type(sub) is list:
                    texts.extend(text_terms(value) for value in sub if type(value) is str)
            else:
                kind = keys.get(key)
                if kind is None:
                    continue
                if type(sub) is dict:
                    if kind == 0:
                        if key == "properties":
                            names.extend(map(text_terms, sub))
                        stack.extend(sub.values())
                    elif kind == 1:
                        stack.append(sub)
                elif (kind == 2 or key == "items") and type(sub) is list:
                    stack.extend(sub)
    return names, texts


class ToolCatalog:
    """An immutable index over OpenAI Chat Completions function tools.

    Build it once and reuse it across any number of asks; a
    :class:`~bot_toolsearch.ToolSearchSession` over it costs nothing per catalog tool.

    Args:
        schemas: tool schemas, ``{"type": "function", "function": {"name", "description",
            "parameters"}}``. Entries without a ``function`` mapping, with a name that is not
            a non-empty string, or a name containing whitespace, control characters, ``<`` or
            ``>``, or that cannot be serialised as JSON, are skipped; one build logs them in
            one warning line on the ``bot_toolsearch`` logger (counts and the first few
            entries). Of duplicate names, the first is kept.

    A tool named exactly ``tool_search`` (the virtual search tool's name) is skipped the same
    way, counted as ``reserved`` in that one warning: every other tool stays searchable.

    Raises:
        CatalogError: ``schemas`` is not a sequence of schemas (a string, a mapping, ``None``,
            a number). An entry whose ``parameters`` nest deeper than `MAX_SCHEMA_DEPTH`
            levels, refer to themselves or hold non-JSON values is skipped with a warning.

    >>> catalog = ToolCatalog([{"type": "function", "function": {"name": "weather.now"}}])
    >>> catalog.names, "weather.now" in catalog, len(catalog)
    (('weather.now',), True, 1)
    """

    __slots__ = (
        "_by_fold",
        "_deferred_cache",
        "_descriptions",
        "_index",
        "_index_lock",
        "_indexes",
        "_json",
        "_memo",
        "_order",
        "_rank",
        "names",
        "sorted_names",
    )

    def __init__(self, schemas: Iterable[Mapping[str, Any]]) -> None:
        if isinstance(schemas, str | bytes | Mapping) or not isinstance(schemas, Iterable):
            raise CatalogError(
                f"schemas must be a sequence of tool schemas, not a single {type(schemas).__name__}"
            )
        # The build allocates hundreds of thousands of long-lived objects and no reference
        # cycles; the cyclic collector would traverse all of them (and the caller's schemas)
        # again and again for nothing, which costs about a quarter of the build.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._build(schemas)
        finally:
            if collecting:
                gc.enable()

    def _build(self, schemas: Iterable[Mapping[str, Any]]) -> None:
        names: list[str] = []
        encoded: dict[str, str] = {}
        described: dict[str, str] = {}
        skipped = _Skipped()
        position = -1
        for position, entry in enumerate(schemas):
            function = entry.get("function") if isinstance(entry, Mapping) else None
            if not isinstance(function, Mapping):
                skipped.add(position, None, "no 'function' mapping", "malformed")
                continue
            name = function.get("name")
            if name == TOOL_SEARCH_NAME:
                # The virtual search tool's name: skipped like any unusable entry, so that one
                # such tool never costs the catalog every other tool.
                skipped.add(position, name, _RESERVED_REASON, "reserved")
                continue
            reason = invalid_name_reason(name)
            if reason is not None:
                skipped.add(position, name, reason, "invalid name")
                continue
            assert isinstance(name, str)
            if name in encoded:
                skipped.add(position, name, "duplicate name (the first is kept)", "duplicate")
                continue
            text = _encoded_entry(position, name, entry, function, skipped)
            if text is None:
                continue
            if name.casefold() == TOOL_SEARCH_NAME:
                skipped.note_reserved(name)
            description = function.get("description")
            names.append(name)
            encoded[name] = text
            if isinstance(description, str) and description:
                described[name] = description
        skipped.log(position + 1)
        self.names: tuple[str, ...] = tuple(names)
        """Canonical tool names in input order."""
        self.sorted_names: tuple[str, ...] = tuple(sorted(names, key=lambda n: (n.casefold(), n)))
        """Canonical tool names in ``(casefold(name), name)`` order: the directory order."""
        self._json = encoded
        self._descriptions = described
        self._memo: dict[object, object] = {}
        self._order = {name: i for i, name in enumerate(names)}
        # A document's id is its position in sorted_names, so ties in score break by id.
        self._rank = {name: i for i, name in enumerate(self.sorted_names)}
        self._deferred_cache: dict[frozenset[str], tuple[str, ...]] = {}
        self._index: SearchIndex | None = None
        self._indexes: dict[Namespaces, SearchIndex] = {}
        self._index_lock = threading.Lock()
        by_fold: dict[str, list[str]] = {}
        for name in self.sorted_names:
            by_fold.setdefault(name.casefold(), []).append(name)
        self._by_fold = {key: tuple(group) for key, group in by_fold.items()}

    @property
    def index(self) -> SearchIndex:
        """The keyword search index without namespace descriptions (`search_index` of none),
        built on first use (the doors build it ahead)."""
        return self._search_index(())

    def _search_index(self, namespaces: Namespaces) -> SearchIndex:
        if not namespaces and self._index is not None:
            return self._index
        index = self._indexes.get(namespaces) if namespaces else None
        if index is None:
            with self._index_lock:
                index = self._index if not namespaces else self._indexes.get(namespaces)
                if index is None:
                    index = self._build_index(namespaces)
                    if not namespaces:
                        self._index = index
                    else:
                        if len(self._indexes) >= _INDEXES_KEPT:
                            self._indexes.pop(next(iter(self._indexes)), None)
                        self._indexes[namespaces] = index
        return index

    def _build_index(self, namespaces: Namespaces) -> SearchIndex:
        described = self._namespace_terms(namespaces)
        collecting = gc.isenabled()
        gc.disable()  # as in the build: no cycles, many long-lived objects
        try:
            return SearchIndex.from_fragments(
                [
                    self._fragments(name, described.get(rank, ()))
                    for rank, name in enumerate(self.sorted_names)
                ]
            )
        finally:
            release_caches()
            if collecting:
                gc.enable()

    def _namespace_terms(self, namespaces: Namespaces) -> dict[int, list[tuple[str, ...]]]:
        """Per document id, the terms of the descriptions of the namespaces it is in, one
        fragment per description (shared by every member)."""
        described: dict[int, list[tuple[str, ...]]] = {}
        for namespace, text in namespaces:
            if not isinstance(namespace, str) or not isinstance(text, str) or not text:
                continue
            terms = text_terms(text)
            for member in self.namespace_members(namespace):
                described.setdefault(self._rank[member], []).append(terms)
        return described

    def _fragments(self, name: str, described: Sequence[tuple[str, ...]] = ()) -> Fragments:
        """The fields of catalog tool ``name`` as fragments, one per text (see `Fragments`)."""
        function = json.loads(self._json[name])["function"]
        description = function.get("description")
        param_names, param_texts = _parameter_text(function.get("parameters"))
        namespace, _, leaf = name.rpartition(".")
        fields: Fragments = (
            (text_terms(leaf),),
            param_names,
            (text_terms(description),) if isinstance(description, str) else (),
            param_texts,
            (text_terms(namespace),),
        )
        return (*fields, described) if described else fields

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._json

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __repr__(self) -> str:
        return f"ToolCatalog({len(self.names)} tools)"

    def schema(self, name: str) -> dict[str, Any] | None:
        """A fresh deep copy of the stored schema of ``name`` (exact spelling), or ``None``."""
        text = self._json.get(name) if isinstance(name, str) else None
        if text is None:
            return None
        schema: dict[str, Any] = json.loads(text)
        return schema

    def schemas(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """Fresh deep copies of the schemas of catalog tools ``names``, in the given order.

        Raises:
            KeyError: a name is not in the catalog.
        """
        return [json.loads(self._json[name]) for name in names]

    def position(self, name: str) -> int:
        """The input-order position of catalog tool ``name``."""
        return self._order[name]

    def deferred_names(self, excluded: frozenset[str]) -> tuple[str, ...]:
        """`sorted_names` without ``excluded``, cached per excluded set.

        Asks with the same always-loaded and hidden tools get the very same tuple back, so
        the per-ask cost does not grow with the catalog (and the directory built from it can
        be cached by identity).
        """
        if not excluded:
            return self.sorted_names
        cached = self._deferred_cache.get(excluded)
        if cached is None:
            cached = tuple(name for name in self.sorted_names if name not in excluded)
            if len(self._deferred_cache) >= _DEFERRED_CACHE_SIZE:
                # Oldest first: a permission hook that varies per user must not grow it forever.
                self._deferred_cache.pop(next(iter(self._deferred_cache)), None)
            self._deferred_cache[excluded] = cached
        return cached

    def document(self, name: str, namespaces: Namespaces = ()) -> Document:
        """The terms catalog tool ``name`` is indexed under, by field (for explanations): five
        fields, and a sixth when ``namespaces`` describe a namespace it is in.

        Raises:
            KeyError: ``name`` is not in the catalog.
        """
        described = self._namespace_terms(namespaces).get(self._rank[name], ())
        fields = self._fragments(name, described)
        return tuple([term for fragment in field for term in fragment] for field in fields)

    def description(self, name: str) -> str:
        """The description of catalog tool ``name`` (``""`` when it has none)."""
        return self._descriptions.get(name, "")

    def memo(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, computed once per ``key`` for this catalog and then shared.

        For what a session derives from the catalog and a few settings (the directory of a
        permitted set, a namespace index): computed on the first ask that needs it, never per
        ask. Bounded, oldest first out, like `deferred_names`. ``key`` must identify the value
        (start it with the caller's own tag).
        """
        try:
            found = self._memo[key]
        except KeyError:
            value = build()
            if len(self._memo) >= _DEFERRED_CACHE_SIZE:
                self._memo.pop(next(iter(self._memo)), None)
            self._memo[key] = value
            return value
        return found  # type: ignore[return-value]

    def namespace_members(self, namespace: str) -> tuple[str, ...]:
        """Catalog names inside ``namespace`` (``ns.`` prefix, ignoring case), in directory order.

        >>> ToolCatalog([{"function": {"name": n}} for n in ("gh.pr", "GH.issue", "ghx")]
        ...             ).namespace_members("gh")
        ('GH.issue', 'gh.pr')
        """
        prefix = namespace.casefold() + "."
        folded = self.memo(("casefolded",), lambda: [n.casefold() for n in self.sorted_names])
        start = bisect.bisect_left(folded, prefix)
        end = start
        while end < len(folded) and folded[end].startswith(prefix):
            end += 1
        return self.sorted_names[start:end]

    def rank(self, name: str) -> int:
        """The position of ``name`` in :attr:`sorted_names`, which is its search document id."""
        return self._rank[name]

    def case_variants(self, name: str) -> tuple[str, ...]:
        """Catalog names equal to ``name`` ignoring case, in ``(casefold, name)`` order."""
        return self._by_fold.get(name.casefold(), ())


def search_index(catalog: ToolCatalog, namespaces: Namespaces = ()) -> SearchIndex:
    """The keyword search index of ``catalog``, with the ``(namespace, description)`` pairs
    indexed in the namespace field of every tool inside each namespace.

    Built on first use, then kept (the last few sets of descriptions). Exact names,
    ``select:`` and the directory never need it, but every door builds it ahead, when it gets
    the catalog (``_services/indexing.py``), so no search waits for it.
    """
    return catalog._search_index(namespaces)


def index_built(catalog: ToolCatalog, namespaces: Namespaces = ()) -> bool:
    """Whether `search_index` of these ``namespaces`` is already built (nothing is built)."""
    return catalog._index is not None if not namespaces else namespaces in catalog._indexes


def indexes_built(catalog: ToolCatalog) -> int:
    """How many search indexes ``catalog`` holds (each about as large as the catalog)."""
    return (catalog._index is not None) + len(catalog._indexes)


def _encoded_entry(
    position: int,
    name: str,
    entry: Mapping[str, Any],
    function: Mapping[str, Any],
    skipped: _Skipped,
) -> str | None:
    """The catalog's JSON copy of one entry, or ``None`` (noted in ``skipped``) when it is
    unusable: nested too deep, or not JSON at all."""
    # One walk of the whole entry (envelope and function add two levels); only when it is too
    # deep is the walk repeated on the parameters, to say where.
    depth = schema_depth_problem(entry, MAX_SCHEMA_DEPTH + 2)
    if depth is not None:
        depth = schema_depth_problem(function.get("parameters")) or depth
        skipped.add(position, name, f"parameters {depth}", "unusable schema")
        return None
    try:
        # A JSON round trip is the deep copy: it isolates the catalog from the caller's
        # objects and rejects what no provider could be sent (cycles, non-JSON values).
        # Lone surrogates (in a description, say) become U+FFFD: the schema is sent.
        return well_formed(_ENCODER.encode({**entry, "function": dict(function)}))
    except (TypeError, ValueError, RecursionError) as exc:
        skipped.add(position, name, f"schema is not JSON: {exc}", "unusable schema")
        return None


def log_reserved_skipped(position: int, total: int) -> None:
    """Log the warning a catalog build logs when it skips only a real ``tool_search``: the
    entry at ``position`` of a tool list of ``total`` entries.

    For a door that keeps that tool out of its catalog itself, because whether it is skipped
    depends on the request (`bot_toolsearch._core.reserved`): the same line, worded once.
    """
    skipped = _Skipped()
    skipped.add(position, TOOL_SEARCH_NAME, _RESERVED_REASON, "reserved")
    skipped.log(total)


_EXAMPLES = 3
"""Skipped entries a catalog build names in its one warning line (the rest are counted)."""

_SHOWN_CHARS = 60
"""Longest excerpt of a skipped entry's name or reason in that line."""


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


class _Skipped:
    """The entries one catalog build skipped, logged as one summary line at the end.

    A tool list of 100,000 duplicates must not write 99,999 warning lines: the build counts
    each kind of problem and names the first few entries (names and reasons cut short, since
    a hostile list controls both).
    """

    __slots__ = ("count", "examples", "kinds", "reserved", "reserved_count")

    def __init__(self) -> None:
        self.count = 0
        self.kinds: dict[str, int] = {}
        self.examples: list[str] = []
        self.reserved: list[str] = []
        self.reserved_count = 0

    def add(self, position: int, name: object, reason: str, kind: str) -> None:
        """Note entry ``position`` (tool ``name``, if any) as skipped: ``kind`` is counted,
        ``reason`` shown for the first few."""
        self.count += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.examples) < _EXAMPLES:
            # Only a string is shown (cut before repr: it may be huge); the reason names the
            # type of anything else, whose repr could be huge or nest past the recursion limit.
            shown = f" ({_cut(repr(_cut(name)))})" if isinstance(name, str) else ""
            self.examples.append(f"entry {position}{shown}: {_cut(reason)}")

    def note_reserved(self, name: str) -> None:
        """Note a kept name that differs from ``tool_search`` only in case."""
        self.reserved_count += 1
        if len(self.reserved) < _EXAMPLES:
            self.reserved.append(repr(name))

    def log(self, total: int) -> None:
        """One warning line for the skipped entries, one for case variants of the reserved name."""
        if self.count:
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.kinds.items()))
            more = self.count - len(self.examples)
            logger.warning(
                "tool catalog: skipping %s of %s entries (%s): %s%s",
                f"{self.count:,}",
                f"{total:,}",
                kinds,
                "; ".join(self.examples),
                f"; and {more:,} more" if more else "",
            )
        if self.reserved_count:
            logger.warning(
                "tool catalog: %d name(s) differ from the reserved name %r only in case (%s); "
                "select:<name> loads such a tool, other spellings mean the virtual tool",
                self.reserved_count,
                TOOL_SEARCH_NAME,
                ", ".join(self.reserved),
            )
