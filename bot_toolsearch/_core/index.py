"""Field-weighted BM25 inverted index over tool names, parameter names and descriptions.

Every tool is one document with four fields. A term's weight in a document is

    idf(term) * (MATCH_BONUS + sum over fields f of  W_f * tf_f / (tf_f + K * norm_f))

with ``norm_f = 1 - B + B * length_f / average_length_f`` (BM25-style saturation per field,
inverse document frequency over the catalog, length normalisation on every field). The part
in brackets is precomputed when the catalog is built, in one pass over the documents; the IDF
is applied while a search adds up the postings of its few terms. On top of BM25:

- a query term also matches index terms it is a prefix of, or that are a prefix of it, at half
  weight (``hypot`` / ``hypotenuse``, ``info`` / ``information``);
- every matched term adds a fixed bonus (times its IDF), so matching more of the query's
  distinct terms beats repeating one of them (coverage), at no cost per search;
- for a one-term query, a name hit always outranks a parameter-name hit, which always
  outranks a description hit (the reference design's contract); BM25 orders inside a tier.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence

__all__ = ["FIELD_WEIGHTS", "Document", "SearchIndex", "split_tier"]

Document = tuple[Sequence[str], ...]
"""The terms of one tool: name parts (the leaf, after the last ``.``), parameter names, tool
description, parameter texts, the name's namespace parts (before the last ``.``) and the
descriptions of the namespaces the tool is in; trailing fields may be left out (empty).

The namespace descriptions are scored as part of the namespace field (one field, one length),
but they are not the tool's name: a one-term query's name tier looks at the name parts only."""

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


def split_tier(score: float) -> tuple[int, float]:
    """``(tier, score within the tier)`` of a :meth:`SearchIndex.scores` score.

    One-term queries rank name hits (tier 2) above parameter-name hits (tier 1) above the rest
    (tier 0); every other query has tier 0 only.

    >>> split_tier(2_000_003.5)
    (2, 3.5)
    """
    tier = int(score // _TIER_STEP)
    return tier, score - tier * _TIER_STEP


def _merge_namespace(doc: Document) -> tuple[Document, Sequence[str]]:
    """``(the scored fields, the namespace's name parts)``: the namespace descriptions (the
    sixth field) join the namespace field (the fifth) for scoring."""
    if len(doc) <= 5:
        return doc, doc[4] if len(doc) == 5 else ()
    namespace = doc[4]
    return (*doc[:4], (*namespace, *doc[5])), namespace


class SearchIndex:
    """Immutable postings ``term -> {doc_id: weight}`` over a fixed list of documents.

    Args:
        docs: one :data:`Document` per tool; a tool's position is its ``doc_id``.
    """

    __slots__ = (
        "_idf",
        "_ids",
        "_names",
        "_params",
        "_starts",
        "_terms",
        "_vocabulary",
        "_weighted_cache",
        "_weights",
        "size",
    )

    def __init__(self, docs: Sequence[Document]) -> None:
        self.size = n = len(docs)
        merged = [_merge_namespace(doc) for doc in docs]
        avg = [
            max(1.0, sum(len(doc[f]) for doc, _ in merged if f < len(doc)) / max(1, n))
            for f in range(len(FIELD_WEIGHTS))
        ]
        # Per field, BM25's K * (1 - B + B * length / avg) is base + slope * length.
        base = _K * (1.0 - _B)
        slopes = [_K * _B / a for a in avg]
        postings: defaultdict[str, dict[int, float]] = defaultdict(dict)
        # Per document, its distinct name terms and parameter-name terms (the tiers), as
        # tuples: a frozenset per document would cost several times the memory.
        self._names: list[tuple[str, ...]] = []
        self._params: list[tuple[str, ...]] = []
        empty: tuple[str, ...] = ()
        # The hot loop: one postings update per token, no per-document or per-posting objects.
        for doc_id, (fields, namespace) in enumerate(merged):
            names = params = empty
            for f in range(len(fields)):
                field = fields[f]
                if not field:
                    continue
                weight = FIELD_WEIGHTS[f]
                norm = base + slopes[f] * len(field)
                unique = frozenset(field)
                if f == 0:  # the leaf and the namespace are both the tool's name
                    names = (*names, *unique)
                elif f == 4:
                    names = (*names, *frozenset(namespace))
                elif f == 1:
                    params = tuple(unique)
                if len(unique) == len(field):  # every term once, the usual case: no counting
                    once = weight / (1.0 + norm)
                    for term in field:
                        found = postings[term]
                        found[doc_id] = found.get(doc_id, _MATCH_BONUS) + once
                else:
                    for term, tf in Counter(field).items():
                        found = postings[term]
                        found[doc_id] = found.get(doc_id, _MATCH_BONUS) + weight * tf / (tf + norm)
            self._names.append(names)
            self._params.append(params)
        log = math.log
        # Held flat: every posting list back to back in two arrays (doc ids, weights), term k
        # at [starts[k], starts[k + 1]): 12 bytes a posting instead of a dict entry and a
        # float object (~100 bytes). A search rebuilds the few dicts it needs and keeps the
        # most recent ones.
        self._vocabulary = sorted(postings)
        self._terms = {term: k for k, term in enumerate(self._vocabulary)}
        self._starts = starts = array("l", [0])
        self._ids = ids = array("i")
        self._weights = weights = array("d")
        self._idf = idf = array("d")
        for term in self._vocabulary:
            found = postings.pop(term)
            ids.extend(found.keys())
            weights.extend(found.values())
            starts.append(len(ids))
            df = len(found)
            idf.append(log(1.0 + (n - df + 0.5) / (df + 0.5)))
        self._weighted_cache: dict[str, dict[int, float]] = {}

    def __contains__(self, term: object) -> bool:
        return term in self._terms

    def _postings(self, term: str) -> tuple[array[int], array[float]] | None:
        """The doc ids and weights (before IDF) of ``term``, or ``None``."""
        k = self._terms.get(term)
        if k is None:
            return None
        start, end = self._starts[k], self._starts[k + 1]
        return self._ids[start:end], self._weights[start:end]

    def _variants(self, term: str) -> list[str]:
        """Index terms sharing a prefix relation with ``term`` (``term`` itself excluded)."""
        if len(term) < _PREFIX_MIN or not term.isascii() or not term.isalpha():
            return []
        found = [term[:i] for i in range(_PREFIX_MIN, len(term)) if term[:i] in self._terms]
        vocabulary = self._vocabulary
        i = bisect.bisect_right(vocabulary, term)
        while i < len(vocabulary) and vocabulary[i].startswith(term):
            found.append(vocabulary[i])
            i += 1
            if len(found) >= _PREFIX_MAX_VARIANTS:
                break
        return found

    def _weighted(self, term: str) -> dict[int, float] | None:
        """The postings of ``term`` times its IDF, computed on first use and then shared."""
        weighted = self._weighted_cache.get(term)
        if weighted is None:
            postings = self._postings(term)
            if postings is None:
                return None
            idf = self._idf[self._terms[term]]
            weighted = {d: w * idf for d, w in zip(*postings, strict=True)}
            # Racing threads compute the same dict; either copy may win.
            cache = self._weighted_cache
            if len(cache) >= _WEIGHTED_CACHE_SIZE:
                cache.pop(next(iter(cache)), None)
            cache[term] = weighted
        return weighted

    def _matches(self, term: str) -> dict[int, float]:
        """The weight of ``term`` per document (shared: do not change), prefix variants
        discounted."""
        exact = self._weighted(term)
        variants = self._variants(term)
        if not variants:
            return exact if exact is not None else {}
        merged = dict(exact) if exact is not None else {}
        get = merged.get
        for variant in variants:
            factor = self._idf[self._terms[variant]] * _PREFIX_WEIGHT
            found = self._postings(variant)
            assert found is not None  # a variant is an index term
            for d, w in zip(*found, strict=True):
                discounted = w * factor
                if discounted > get(d, 0.0):
                    merged[d] = discounted
        return merged

    def _tiers(self, term: str, docs: Collection[int]) -> dict[int, int]:
        """Per document: 2 for a name hit on ``term``, 1 for a parameter-name hit, else 0."""
        terms = frozenset((term, *self._variants(term)))
        names, params = self._names, self._params
        return {
            d: 2 if not terms.isdisjoint(names[d]) else 1 if not terms.isdisjoint(params[d]) else 0
            for d in docs
        }

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
            needed = [self._postings(t) for t in required]
            if not all(needed):
                return {}
            postings = sorted((p[0] for p in needed if p is not None), key=len)
            candidates = set(postings[0])
            for p in postings[1:]:
                candidates.intersection_update(p)
            acc = {d: sum(g.get(d, 0.0) for g in groups) for d in candidates}
        else:
            groups.sort(key=len, reverse=True)
            acc = dict(groups[0])
            get = acc.get
            for group in groups[1:]:
                for d, w in group.items():
                    acc[d] = get(d, 0.0) + w
        if tiers and len(terms) == 1:
            tier = self._tiers(terms[0], acc)
            return {d: s + _TIER_STEP * tier[d] for d, s in acc.items()}
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
