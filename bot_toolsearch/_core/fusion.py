"""Reciprocal rank fusion of the BM25 ranking with a semantic (embedding) ranking.

Pure: no I/O. The semantic ranking comes through a `SemanticRanker` hook that the session
calls for keyword queries only (never for ``select:`` or an exact name). Each document scores
``sum over rankings of 1 / (RRF_K + rank)`` (rank 1-based, a ranking that lacks the document
adds nothing). For a one-term query the index's tiers still decide first (a name hit before a
parameter-name hit before the rest; a document only the semantic ranking found is tier 0), so
the reference contract survives the fusion.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping, Sequence

from .index import split_tier

__all__ = ["FUSION_DEPTH", "RRF_K", "SemanticRanker", "fuse", "top_documents"]

RRF_K = 60
"""The rank offset of reciprocal rank fusion (Cormack et al., 2009): large enough that the
first few places of either ranking weigh about the same."""
FUSION_DEPTH = 100
"""How many places of each ranking take part in the fusion (at least what a search needs)."""

SemanticRanker = Callable[[str, int], Sequence[int] | None]
"""``ranker(query_text, count)``: the search document ids (catalog ranks) of up to ``count``
tools, most similar first, or ``None`` when the semantic stage is unavailable (BM25 answers
alone). It must never raise."""


def top_documents(scores: Mapping[int, float], count: int) -> list[int]:
    """The ``count`` best documents of ``scores``, by descending score, then ascending id.

    >>> top_documents({3: 1.0, 1: 2.0, 2: 1.0}, 2)
    [1, 2]
    """
    return heapq.nsmallest(count, scores, key=lambda d: (-scores[d], d))


def fuse(
    scores: Mapping[int, float],
    semantic: Sequence[int],
    *,
    depth: int = FUSION_DEPTH,
    k: int = RRF_K,
    tiers: bool = False,
    allowed: Collection[int] | None = None,
) -> list[int]:
    """The fused order of the BM25 ``scores`` and the ``semantic`` ranking.

    Args:
        scores: BM25 scores by document id (`SearchIndex.scores`).
        semantic: document ids, most similar first.
        depth: places of each ranking that count.
        k: the RRF rank offset.
        tiers: keep the tiers of ``scores`` (a one-term query) ahead of the fused score.
        allowed: only these documents may appear (the ``+required`` filter); ``None``: any.

    Returns:
        Document ids, best first; ties broken by ascending id.

    >>> fuse({0: 3.0, 1: 2.0}, [2, 1])  # 1 is second and first-but-one: it wins
    [1, 0, 2]
    """
    fused: dict[int, float] = {}
    tier: dict[int, int] = {}
    for place, doc in enumerate(top_documents(scores, depth), start=1):
        fused[doc] = 1.0 / (k + place)
        if tiers:
            tier[doc] = split_tier(scores[doc])[0]
    place = 0
    for doc in semantic:
        if place >= depth:
            break
        if allowed is not None and doc not in allowed:
            continue
        place += 1
        fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + place)
    return sorted(fused, key=lambda d: (-tier.get(d, 0), -fused[d], d))
