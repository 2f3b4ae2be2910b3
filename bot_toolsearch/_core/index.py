"""Field-weighted BM25 inverted index over tool names, parameter names and descriptions.

Every tool is one document with five fields (leaf name, parameter names, description,
parameter texts, namespace). A term's weight in a document is

    idf(term) * (MATCH_BONUS + sum over fields f of  W_f * tf_f / (tf_f + K * norm_f))

with ``norm_f = 1 - B + B * length_f / average_length_f`` (BM25-style saturation per field,
inverse document frequency over the catalog, length normalisation on every field).

The build is what a bot pays at start-up, so it does as little as it can: it files each
distinct text's terms once (catalogs repeat the same parameter descriptions thousands of
times) and each field's length per document, in C-level passes. A term's weights are worked
out on its first search, from the texts holding it, and kept for the next. On top of BM25:

- a query term also matches index terms it is a prefix of, or that are a prefix of it, at half
  weight (``hypot`` / ``hypotenuse``, ``info`` / ``information``);
- every matched term adds a fixed bonus (times its IDF), so matching more of the query's
  distinct terms beats repeating one of them (coverage), at no cost per search;
- for a one-term query, a name hit always outranks a parameter-name hit, which always
  outranks a description hit (the reference design's contract); BM25 orders inside a tier.
"""

from __future__ import annotations

import bisect
import contextlib
import math
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import add

__all__ = ["FIELD_WEIGHTS", "Document", "Fragments", "SearchIndex", "TermFields", "split_tier"]

Document = tuple[Sequence[str], ...]
"""The terms of one tool: name parts (the leaf, after the last ``.``), parameter names, tool
description, parameter texts, the name's namespace parts (before the last ``.``) and the
descriptions of the namespaces the tool is in; trailing fields may be left out (empty).

The namespace descriptions are scored as part of the namespace field (one field, one length),
but they are not the tool's name: a one-term query's name tier looks at the name parts only."""

Fragments = tuple[Sequence[Sequence[str]], ...]
"""A :data:`Document` whose fields are sequences of fragments, each the terms of one text (a
description, a parameter name, one parameter's description); a field's terms are its
fragments' terms back to back. A fragment object shared by several documents (catalogs repeat
the same parameter descriptions thousands of times) is indexed once."""

# BM25 saturation and length normalisation, the same on every field. Normalising names too
# lets a name made mostly of the query's words (``get_stock_price``) beat a longer name that
# merely contains them.
_K = 1.2
_B = 0.75
FIELD_WEIGHTS = (2.0, 0.25, 1.25, 0.5, 1.0)
"""Weights of the leaf-name, parameter-name, description, parameter-description and namespace
fields.

The leaf of a name says what a tool does, its namespace which service offers it; as separate
fields, each is length-normalised against its own kind, so a long namespace
(``aiplatform.projects.locations.endpoints``) neither dilutes the leaf nor outweighs it. Both
count as the name for a one-term query's tier.

Parameter names say what a tool takes, not what it does, and the same few (``city``,
``date``, ``location``, ``id``) recur across unrelated tools, so they weigh a fifth of a
description word. Chosen by ``bench/tune_ranking.py``: cross-validation over the dev set's two
halves, each searched among its 769 tools and among 10,000; only the values both folds chose
on their own were taken (the leaf, parameter-name and description weights)."""
# Every matched term adds this much (times its IDF) on top of BM25, whatever the field: a tool
# matching more of the query's distinct terms beats one repeating a single term (coverage).
_MATCH_BONUS = 1.0
# A query term also matches index terms that are its prefix or that it prefixes (``hypot`` and
# ``hypotenus``, ``calcul`` and ``calc``), at this fraction of their weight.
_PREFIX_WEIGHT = 0.5
_PREFIX_MIN = 4
_PREFIX_MAX_VARIANTS = 16
# Name tier 2, parameter-name tier 1, description tier 0: for a one-term query the tier decides
# first (the reference design's contract), BM25 orders tools inside a tier.
_TIER_STEP = 1e6
_WEIGHTED_CACHE_SIZE = 4096
# The stored fields: the five scored ones, then the namespace descriptions, which are scored
# with the namespace (field 4) but are not part of the name.
_STORED = 6
_SCORED = 5
_GROUP = (0, 1, 2, 3, 4, 4)  # the scored field of each stored field


TermFields = tuple[float, tuple[Counter[int], ...]]
"""What `SearchIndex.term_fields` gives: a term's IDF and its count per document, per stored
field (leaf, parameter names, description, parameter texts, namespace, namespace
descriptions)."""


def split_tier(score: float) -> tuple[int, float]:
    """``(tier, score within the tier)`` of a :meth:`SearchIndex.scores` score.

    One-term queries rank name hits (tier 2) above parameter-name hits (tier 1) above the rest
    (tier 0); every other query has tier 0 only.

    >>> split_tier(2_000_003.5)
    (2, 3.5)
    """
    tier = int(score // _TIER_STEP)
    return tier, score - tier * _TIER_STEP


def _merged(
    parts: Sequence[dict[int, float]], combine: Callable[[float, float], float]
) -> dict[int, float]:
    """A fresh dict: every document of ``parts`` with its values combined in ``parts`` order
    (the first part's value, else 0.0, then ``combine`` with each next part's). Put the largest
    part first: it is copied whole, the others are folded in by C-level passes over their own
    entries only."""
    total = dict(parts[0])
    for part in parts[1:]:
        combined = map(combine, map(total.get, part, repeat(0.0)), part.values())
        total.update(zip(part, combined, strict=True))
    return total


def _keep(cache: dict[str, dict[int, float]], term: str, value: dict[int, float]) -> None:
    """Store ``value`` in a bounded cache, dropping its oldest entry when full. Racing threads
    compute the same value (either copy may win) and may evict at once: a cache changed
    under the eviction just skips it this time."""
    if len(cache) >= _WEIGHTED_CACHE_SIZE:
        # Changed size during the iteration, or emptied: skip the eviction this once.
        with contextlib.suppress(RuntimeError, StopIteration):
            cache.pop(next(iter(cache)), None)
    cache[term] = value


def _file_fragments(
    docs: Sequence[Fragments],
) -> tuple[list[list[Sequence[str]]], list[list[list[int]]], list[list[int]], list[int]]:
    """Per stored field: its distinct fragments (by identity) and the documents holding each (a
    document holding one twice is listed twice: term frequencies add up); per scored field,
    its length in each document (the namespace descriptions lengthen the namespace field);
    and the namespace's own length in each document."""
    numbers: list[dict[int, int]] = [{} for _ in range(_STORED)]
    fragments: list[list[Sequence[str]]] = [[] for _ in range(_STORED)]
    holders: list[list[list[int]]] = [[] for _ in range(_STORED)]
    lengths = [[0] * len(docs) for _ in range(_SCORED)]
    namespaces = [0] * len(docs)
    for doc_id, doc in enumerate(docs):
        for f in range(min(len(doc), _STORED)):
            field = doc[f]
            if not field:
                continue
            number, kept, held = numbers[f], fragments[f], holders[f]
            total = 0
            for fragment in field:
                if not fragment:
                    continue
                k = number.get(id(fragment))
                if k is None:
                    number[id(fragment)] = len(held)
                    kept.append(fragment)
                    held.append([doc_id])
                else:
                    held[k].append(doc_id)
                total += len(fragment)
            lengths[_GROUP[f]][doc_id] += total
            if f == 4:
                namespaces[doc_id] = total
    return fragments, holders, lengths, namespaces


def _file_terms(fragments: Sequence[Sequence[str]]) -> dict[str, list[int]]:
    """Term -> the numbers of the ``fragments`` holding it, once per occurrence: one C-level
    pass, a list append per term of each fragment."""
    filed: defaultdict[str, list[int]] = defaultdict(list)
    numbered = chain.from_iterable(map(repeat, range(len(fragments)), map(len, fragments)))
    terms = chain.from_iterable(fragments)
    deque(map(list.append, map(filed.__getitem__, terms), numbered), maxlen=0)
    return dict(filed)


class SearchIndex:
    """Immutable BM25F postings over a fixed list of documents.

    Built for start-up speed: the build only files each distinct fragment's terms and each
    fragment's documents, a few C-level operations per term; a term's weight per document is
    worked out on its first search (counting, per field, how often the fragments holding it
    occur in each document), then kept.

    Args:
        docs: one :data:`Document` per tool; a tool's position is its ``doc_id``. Each field
            is indexed as one fragment; :meth:`from_fragments` takes shared fragments.
    """

    __slots__ = (
        "_bonus",
        "_docs",
        "_fields_cache",
        "_matches_cache",
        "_name_lengths",
        "_norms",
        "_postings",
        "_units",
        "_vocabulary",
        "_weighted_cache",
        "_weights",
        "size",
    )

    def __init__(self, docs: Sequence[Document]) -> None:
        self._build([tuple((tuple(field),) if field else () for field in doc) for doc in docs])

    @classmethod
    def from_fragments(cls, docs: Sequence[Fragments]) -> SearchIndex:
        """The index of documents given as fragments (:data:`Fragments`)."""
        index = cls.__new__(cls)
        index._build(docs)
        return index

    def _build(self, docs: Sequence[Fragments]) -> None:
        self.size = n = len(docs)
        # The constants as they are now (the bench's tuner sets them around a build).
        self._weights = weights = FIELD_WEIGHTS
        self._bonus = float(_MATCH_BONUS)
        fragments, self._docs, lengths, namespace_lengths = _file_fragments(docs)
        self._postings = [_file_terms(kept) for kept in fragments]
        # Per scored field and document: BM25's K * (1 - B + B * length / average), and the
        # weight of a term found once, W / (1 + that), the usual case.
        base = _K * (1.0 - _B)
        # Lists, not arrays: a search reads thousands of them, and a list hands out its float
        # objects where an array would box a new one each time.
        self._norms: list[list[float]] = []
        self._units: list[list[float]] = []
        norms, units = self._norms, self._units
        for f in range(_SCORED):
            slope = _K * _B / max(1.0, sum(lengths[f]) / max(1, n))
            field_norms = [base + slope * length for length in lengths[f]]
            norms.append(field_norms)
            weight = weights[f]
            units.append([weight / (1.0 + norm) for norm in field_norms])
        self._vocabulary = sorted(set().union(*self._postings))
        self._weighted_cache: dict[str, dict[int, float]] = {}
        self._matches_cache: dict[str, dict[int, float]] = {}
        self._fields_cache: dict[str, TermFields] = {}
        # The leaf's and the namespace's own lengths (the namespace descriptions left out).
        self._name_lengths = (lengths[0], namespace_lengths)

    def __contains__(self, term: object) -> bool:
        return any(term in postings for postings in self._postings)

    def _variants(self, term: str) -> list[str]:
        """Index terms sharing a prefix relation with ``term`` (``term`` itself excluded)."""
        if len(term) < _PREFIX_MIN or not term.isascii() or not term.isalpha():
            return []
        found = [term[:i] for i in range(_PREFIX_MIN, len(term)) if term[:i] in self]
        vocabulary = self._vocabulary
        i = bisect.bisect_right(vocabulary, term)
        while i < len(vocabulary) and vocabulary[i].startswith(term):
            found.append(vocabulary[i])
            i += 1
            if len(found) >= _PREFIX_MAX_VARIANTS:
                break
        return found

    def _counts(self, field: int, term: str) -> Counter[int]:
        """How often ``term`` occurs in each document's scored ``field`` (the namespace
        descriptions count as the namespace field): one C-level pass over the texts holding
        it."""
        found = self._postings[field].get(term)
        held: Iterable[int] = (
            chain.from_iterable(map(self._docs[field].__getitem__, found)) if found else ()
        )
        if field == 4:
            described = self._postings[5].get(term)
            if described:
                held = chain(held, chain.from_iterable(map(self._docs[5].__getitem__, described)))
        return Counter(held)

    def _weighted(self, term: str) -> dict[int, float] | None:
        """The weight of ``term`` per document holding it, times its IDF, worked out on first
        use and then shared (do not change it); ``None`` for a term no document holds.

        C-level passes over the documents holding it: its counts per field, then, field by
        field (largest first), the build's weight of a term found once (``W / (1 + norm)``)
        scaled by the IDF and added in; only documents holding it more than once in a field
        are corrected one by one.
        """
        weighted = self._weighted_cache.get(term)
        if weighted is not None:
            return weighted
        fields = [(f, counts) for f in range(_SCORED) if (counts := self._counts(f, term))]
        if not fields:
            return None
        fields.sort(key=lambda field: len(field[1]), reverse=True)
        first = fields[0][1]
        others = chain.from_iterable(counts for _, counts in fields[1:])
        idf = self._idf(len(first) if len(fields) == 1 else len(first.keys() | others))
        base = self._bonus * idf  # every matched term's bonus, once per document
        weighted = {}
        for f, counts in fields:
            units = self._units[f]
            scaled = map(idf.__mul__, map(units.__getitem__, counts))
            if not weighted:
                weighted = dict(zip(counts, map(base.__add__, scaled), strict=True))
            else:
                before = map(weighted.get, counts, repeat(base))
                weighted.update(zip(counts, map(add, before, scaled), strict=True))
            # Documents holding it more than once: BM25's W * tf / (tf + norm) instead.
            norms, weight = self._norms[f], self._weights[f]
            for d in compress(counts, map((1).__lt__, counts.values())):
                tf = counts[d]
                weighted[d] += idf * (weight * tf / (tf + norms[d]) - units[d])
        _keep(self._weighted_cache, term, weighted)
        return weighted

    def term_fields(self, term: str) -> TermFields:
        """``(idf, counts)`` of an exact ``term``: its IDF (that of a term no document holds
        when none does) and, per stored field, how often it occurs in each document holding
        it there (empty when none does). Worked out on first use, then kept (do not change
        it); for the second ranking stage (`bot_toolsearch._core.rerank`)."""
        found = self._fields_cache.get(term)
        if found is not None:
            return found
        counts = tuple(Counter(self._held(f, term)) for f in range(_STORED))
        weighted = self._weighted(term)
        found = (self._idf(len(weighted) if weighted else 0), counts)
        self._fields_cache[term] = found
        if len(self._fields_cache) > _WEIGHTED_CACHE_SIZE:
            with contextlib.suppress(RuntimeError, StopIteration, KeyError):
                self._fields_cache.pop(next(iter(self._fields_cache)))
        return found

    def matches(self, term: str) -> Mapping[int, float]:
        """The weight of ``term`` per document holding it or a prefix variant of it (shared:
        do not change); what a search adds up."""
        return self._matches(term)

    def norm(self, field: int, doc: int) -> float:
        """BM25's ``K * (1 - B + B * length / average length)`` of scored ``field`` of
        ``doc``."""
        return self._norms[field][doc]

    def name_length(self, doc: int) -> tuple[int, int]:
        """How many terms ``doc``'s leaf name and its namespace have."""
        return self._name_lengths[0][doc], self._name_lengths[1][doc]

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))

    def _matches(self, term: str) -> dict[int, float]:
        """The weight of ``term`` per document (shared: do not change), prefix variants
        discounted; worked out on first use and then kept."""
        matches = self._matches_cache.get(term)
        if matches is not None:
            return matches
        exact = self._weighted(term)
        parts = [(exact, 1.0)] if exact is not None else []
        for variant in self._variants(term):
            found = self._weighted(variant)
            assert found is not None  # a variant is an index term
            parts.append((found, _PREFIX_WEIGHT))
        if not parts:
            matches = {}
        elif len(parts) == 1 and exact is not None:
            matches = exact
        else:  # each document's best: its exact weight or a variant's discounted one
            parts.sort(key=lambda part: len(part[0]), reverse=True)
            matches = {}
            for part, factor in parts:
                values = part.values() if factor == 1.0 else map(factor.__mul__, part.values())
                if matches:
                    values = map(max, map(matches.get, part, repeat(0.0)), values)
                matches.update(zip(part, values, strict=True))
        _keep(self._matches_cache, term, matches)
        return matches

    def _held(self, field: int, term: str) -> Iterable[int]:
        """The documents holding ``term`` in stored ``field`` (a document may repeat)."""
        found = self._postings[field].get(term)
        return chain.from_iterable(map(self._docs[field].__getitem__, found)) if found else ()

    def _tiers(self, term: str, docs: dict[int, float]) -> dict[int, float]:
        """``docs`` (not changed) with the tier added: two steps for a name hit on ``term``,
        one for a parameter-name hit."""
        terms = (term, *self._variants(term))
        held = self._held
        names = docs.keys() & chain.from_iterable(held(f, t) for t in terms for f in (0, 4))
        params = docs.keys() & chain.from_iterable(held(1, t) for t in terms)
        tiered = dict(docs)
        for d in names:
            tiered[d] += 2 * _TIER_STEP
        for d in params - names:
            tiered[d] += _TIER_STEP
        return tiered

    def scores(
        self, terms: Sequence[str], required: Collection[str] = (), *, tiers: bool = True
    ) -> dict[int, float]:
        """Score every document that matches the query.

        Args:
            terms: the scoring terms, de-duplicated (required ones included).
            required: terms every returned document must contain (exactly, after stemming).
            tiers: for a one-term query, rank name hits above parameter-name hits above
                description hits (the reference contract); ``False`` gives plain scores.

        Returns:
            ``{doc_id: score}`` for every document that contains all ``required`` terms and
            matches at least one of ``terms``; a fresh dict the caller may change. Higher is
            better; equal scores are left to the caller's tie-break.
        """
        groups = [m for m in map(self._matches, terms) if m]
        if not groups:
            return {}
        if required:
            needed = [self._weighted(t) for t in required]
            if not all(needed):
                return {}
            holding = sorted((p for p in needed if p is not None), key=len)
            candidates = set(holding[0])
            for p in holding[1:]:
                candidates.intersection_update(p)
            acc = {d: sum(g.get(d, 0.0) for g in groups) for d in candidates}
        else:
            groups.sort(key=len, reverse=True)
            acc = _merged(groups, add)
        if tiers and len(terms) == 1:
            return self._tiers(terms[0], acc)
        return acc

    def explain(self, terms: Sequence[str], document: Document) -> tuple[tuple[str, ...], ...]:
        """Per field of ``document``, the query ``terms`` that hit it, by the rule search uses.

        An exact hit is the term itself; a prefix match is ``term~indexterm``.

        >>> index = SearchIndex([(["get", "weather"], ["citi"], ["forecast"], [])])
        >>> index.explain(["weath", "citi"], (["get", "weather"], ["citi"], ["forecast"], []))
        (('weath~weather',), ('citi',), (), ())
        """
        found: list[tuple[str, ...]] = []
        for field in document:
            present = frozenset(field)
            hits: list[str] = []
            for term in terms:
                if term in present:
                    hits.append(term)
                else:
                    hits.extend(f"{term}~{v}" for v in self._variants(term) if v in present)
            found.append(tuple(hits))
        return tuple(found)
