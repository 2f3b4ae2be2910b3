"""Field-weighted BM25 inverted index over tool names, parameter names and descriptions.

Every tool is one document with four fields. A term's weight in a document is

    idf(term) * (MATCH_BONUS + sum over fields f of  W_f * tf_f / (tf_f + K_f * norm_f))

(BM25F-style: saturating term frequency per field, inverse document frequency over the
catalog, length normalisation on the description fields). The weights are precomputed when the
catalog is built, so a search only adds up the postings of its few terms. On top of BM25:

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
from collections import Counter
from collections.abc import Collection, Sequence

__all__ = ["FIELD_WEIGHTS", "Document", "SearchIndex"]

Document = tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[str]]
"""The terms of one tool: name parts, parameter names, tool description, parameter texts."""

# Saturation (K) and length normalisation (B) per field: name, parameter names, tool
# description, parameter descriptions. Names are short: no length normalisation there.
_K = (1.2, 1.2, 1.2, 1.2)
_B = (0.0, 0.0, 0.75, 0.75)
FIELD_WEIGHTS = (1.5, 1.0, 1.0, 0.5)
"""Weights of the name, parameter-name, description and parameter-description fields."""
# Every matched term adds this much (times its IDF) on top of BM25, whatever the field: a tool
# matching more of the query's distinct terms beats one repeating a single term (coverage).
_MATCH_BONUS = 1.0
# A query term also matches index terms that are its prefix or that it prefixes (``hypot`` and
# ``hypotenuse``, ``calc`` and ``calculat``), at this fraction of their weight.
_PREFIX_WEIGHT = 0.5
_PREFIX_MIN = 4
_PREFIX_MAX_VARIANTS = 16
# Name tier 2, parameter-name tier 1, description tier 0: for a one-term query the tier decides
# first (the reference design's contract), BM25 orders tools inside a tier.
_TIER_STEP = 1e6


class SearchIndex:
    """Immutable postings ``term -> {doc_id: weight}`` over a fixed list of documents.

    Args:
        docs: one :data:`Document` per tool; a tool's position is its ``doc_id``.
    """

    __slots__ = ("_name_docs", "_param_docs", "_postings", "_vocabulary", "size")

    def __init__(self, docs: Sequence[Document]) -> None:
        self.size = len(docs)
        counts = [[Counter(field) for field in doc] for doc in docs]
        lengths = [[len(field) for field in doc] for doc in docs]
        avg = [max(1.0, sum(row[f] for row in lengths) / max(1, self.size)) for f in range(4)]
        raw: dict[str, dict[int, float]] = {}
        name_docs: dict[str, set[int]] = {}
        param_docs: dict[str, set[int]] = {}
        for doc_id, fields in enumerate(counts):
            for term in fields[0]:
                name_docs.setdefault(term, set()).add(doc_id)
            for term in fields[1]:
                param_docs.setdefault(term, set()).add(doc_id)
            for f, counter in enumerate(fields):
                weight = FIELD_WEIGHTS[f]
                norm = _K[f] * (1.0 - _B[f] + _B[f] * lengths[doc_id][f] / avg[f])
                for term, tf in counter.items():
                    postings = raw.setdefault(term, {})
                    postings[doc_id] = postings.get(doc_id, 0.0) + weight * tf / (tf + norm)
        n = self.size
        self._postings: dict[str, dict[int, float]] = {}
        for term, postings in raw.items():
            idf = math.log(1.0 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            self._postings[term] = {d: (w + _MATCH_BONUS) * idf for d, w in postings.items()}
        self._name_docs = {t: frozenset(d) for t, d in name_docs.items()}
        self._param_docs = {t: frozenset(d) for t, d in param_docs.items()}
        self._vocabulary = sorted(self._postings)

    def __contains__(self, term: object) -> bool:
        return term in self._postings

    def _variants(self, term: str) -> list[str]:
        """Index terms sharing a prefix relation with ``term`` (``term`` itself excluded)."""
        if len(term) < _PREFIX_MIN or not term.isascii() or not term.isalpha():
            return []
        found = [term[:i] for i in range(_PREFIX_MIN, len(term)) if term[:i] in self._postings]
        vocabulary = self._vocabulary
        i = bisect.bisect_right(vocabulary, term)
        while i < len(vocabulary) and vocabulary[i].startswith(term):
            found.append(vocabulary[i])
            i += 1
            if len(found) >= _PREFIX_MAX_VARIANTS:
                break
        return found

    def _matches(self, term: str) -> dict[int, float]:
        """The weight of ``term`` per document, prefix variants counted at a discount."""
        exact = self._postings.get(term)
        variants = self._variants(term)
        if not variants:
            return exact if exact is not None else {}
        merged = dict(exact) if exact is not None else {}
        get = merged.get
        for variant in variants:
            for d, w in self._postings[variant].items():
                discounted = w * _PREFIX_WEIGHT
                if discounted > get(d, 0.0):
                    merged[d] = discounted
        return merged

    def _tiers(self, term: str, docs: Collection[int]) -> dict[int, int]:
        """Per document: 2 for a name hit on ``term``, 1 for a parameter-name hit, else 0."""
        terms = (term, *self._variants(term))
        empty: frozenset[int] = frozenset()
        names = empty.union(*(self._name_docs.get(t, empty) for t in terms))
        params = empty.union(*(self._param_docs.get(t, empty) for t in terms))
        return {d: 2 if d in names else 1 if d in params else 0 for d in docs}

    def scores(self, terms: Sequence[str], required: Collection[str] = ()) -> dict[int, float]:
        """Score every document that matches the query.

        Args:
            terms: the scoring terms, de-duplicated (required ones included).
            required: terms every returned document must contain (exactly, after stemming).

        Returns:
            ``{doc_id: score}`` for every document that contains all ``required`` terms and
            matches at least one of ``terms``; a fresh dict the caller may change. Higher is
            better; equal scores are left to the caller's tie-break.
        """
        groups = [m for m in map(self._matches, terms) if m]
        if not groups:
            return {}
        if required:
            needed = [self._postings.get(t) for t in required]
            if not all(needed):
                return {}
            postings = sorted((p for p in needed if p is not None), key=len)
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
        if len(terms) == 1:
            tiers = self._tiers(terms[0], acc)
            return {d: s + _TIER_STEP * tiers[d] for d, s in acc.items()}
        return acc
