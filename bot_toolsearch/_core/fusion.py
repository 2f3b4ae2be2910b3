"""Weighted score fusion of the BM25 ranking with a semantic (embedding) ranking.

Pure: no I/O. The semantic ranking comes through a `SemanticRanker` hook that the session
calls for keyword queries only (never for ``select:`` or an exact name): ``(document id,
similarity)`` pairs, most similar first. Each list's candidates are its first ``depth``
places; each list's scores are min-max normalised over its first `NORMALISE_TOP` places
(its best scores 1, its `NORMALISE_TOP`-th 0, anything lower clamped to 0), and a document
scores

    weight * bm25_normalised + (1 - weight) * semantic_normalised

(a list that lacks the document adds 0). Unlike reciprocal rank fusion, how far ahead a
list's winner is counts, and BM25 (the stronger ranker on tool catalogs) weighs more: with a
weak model the fusion stays close to BM25 alone. For a one-term query the index's tiers still
decide first (a name hit before a parameter-name hit before the rest; a document only the
semantic ranking found is tier 0) and BM25 is normalised inside its tier, so the reference
contract survives the fusion.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping, Sequence

from .index import split_tier

__all__ = [
    "BM25_WEIGHT",
    "FUSION_DEPTH",
    "NORMALISE_TOP",
    "SemanticRanker",
    "fuse",
    "fused_scores",
    "normalised",
    "top_documents",
]

BM25_WEIGHT = 0.6
"""BM25's share of the fused score (the semantic similarity has the rest). Chosen by
``bench/bench_hybrid.py``: cross-validation over the dev set's two halves, each fold choosing
on one half (at 769 and 10,000 tools, both query styles, all-MiniLM-L6-v2 int8 as the model)
and reported on the other. The folds chose 0.45 and 0.6; 0.6 (the issue's measured value) is
kept where they disagree."""
NORMALISE_TOP = 100
"""Places of each list whose scores set its min-max normalisation: both folds chose 100 (of
5, 10, 20, 50, 100), the whole candidate list (`FUSION_DEPTH`)."""
FUSION_DEPTH = 100
"""How many places of each ranking take part in the fusion (at least what a search needs)."""

SemanticRanker = Callable[[str, int], Sequence[tuple[int, float]] | Sequence[int] | None]
"""``ranker(query_text, count)``: up to ``count`` ``(document id, similarity)`` pairs (ids are
catalog ranks), most similar first, or ``None`` when the semantic stage is unavailable (BM25
answers alone). Bare document ids are accepted too (an older hook): their similarity is then
minus their place. It must never raise."""


def top_documents(scores: Mapping[int, float], count: int) -> list[int]:
    """The ``count`` best documents of ``scores``, by descending score, then ascending id.

    >>> top_documents({3: 1.0, 1: 2.0, 2: 1.0}, 2)
    [1, 2]
    """
    return heapq.nsmallest(count, scores, key=lambda d: (-scores[d], d))


def normalised(values: Sequence[float], top: int = NORMALISE_TOP) -> list[float]:
    """``values`` (best first) min-max normalised over their first ``top``: the best is 1, the
    ``top``-th 0, lower ones clamp to 0; when those are all equal, each of them is 1.

    >>> normalised([4.0, 3.0, 2.0, 1.0], top=3)
    [1.0, 0.5, 0.0, 0.0]
    """
    if not values:
        return []
    high, low = values[0], values[min(top, len(values)) - 1]
    if high <= low:
        return [1.0 if v >= high else 0.0 for v in values]
    span = high - low
    return [max(0.0, (v - low) / span) for v in values]


def fused_scores(
    scores: Mapping[int, float],
    semantic: Sequence[tuple[int, float]] | Sequence[int],
    *,
    depth: int = FUSION_DEPTH,
    weight: float = BM25_WEIGHT,
    top: int = NORMALISE_TOP,
    tiers: bool = False,
    allowed: Collection[int] | None = None,
) -> dict[int, tuple[int, float]]:
    """Every candidate's ``(tier, fused score)`` (see the module docstring)."""
    bm25 = top_documents(scores, depth)
    within = [split_tier(scores[d])[1] if tiers else scores[d] for d in bm25]
    tier = {d: split_tier(scores[d])[0] for d in bm25} if tiers else {}
    fused = {d: weight * v for d, v in zip(bm25, normalised(within, top), strict=True)}
    pairs: list[tuple[int, float]] = []
    for place, item in enumerate(semantic):
        if len(pairs) >= depth:
            break
        doc, similarity = item if isinstance(item, tuple) else (item, float(-place))
        if allowed is not None and doc not in allowed:
            continue
        pairs.append((doc, similarity))
    share = 1.0 - weight
    for (doc, _), value in zip(pairs, normalised([s for _, s in pairs], top), strict=True):
        fused[doc] = fused.get(doc, 0.0) + share * value
    return {d: (tier.get(d, 0), value) for d, value in fused.items()}


def fuse(
    scores: Mapping[int, float],
    semantic: Sequence[tuple[int, float]] | Sequence[int],
    *,
    depth: int = FUSION_DEPTH,
    weight: float = BM25_WEIGHT,
    top: int = NORMALISE_TOP,
    tiers: bool = False,
    allowed: Collection[int] | None = None,
) -> list[int]:
    """The fused order of the BM25 ``scores`` and the ``semantic`` ranking.

    Args:
        scores: BM25 scores by document id (`SearchIndex.scores`).
        semantic: ``(document id, similarity)`` pairs, most similar first (or bare ids).
        depth: places of each ranking that count.
        weight: BM25's share of the fused score.
        top: places of each list that set its normalisation.
        tiers: keep the tiers of ``scores`` (a one-term query) ahead of the fused score.
        allowed: only these documents may appear (the ``+required`` filter); ``None``: any.

    Returns:
        Document ids, best first; ties broken by ascending id.

    >>> fuse({0: 3.0, 1: 2.9, 2: 0.1}, [(1, 0.8), (0, 0.3), (2, 0.2)], top=3)
    [1, 0, 2]
    """
    found = fused_scores(
        scores, semantic, depth=depth, weight=weight, top=top, tiers=tiers, allowed=allowed
    )
    return sorted(found, key=lambda d: (-found[d][0], -found[d][1], d))
