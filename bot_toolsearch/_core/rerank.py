"""The second ranking stage: a linear ranker that reorders the first stage's best candidates.

Pure: no I/O. Over the first `RERANK_DEPTH` candidates of a keyword search (BM25's order, or
BM25 fused with the semantic ranking), each candidate gets the `FEATURES` below, all worked
out from what the index already holds (`SearchIndex.term_fields`, a few dictionary look-ups
per query term and candidate), and the candidates are sorted by the weighted sum of their
features: the one-term tiers first, as before (a name hit, then a parameter-name hit, then
the rest), then the score, then the first stage's order. The weights are data, fit on the dev
set by ``bench/tune_rerank.py`` (cross-validation, its folds in docs/benchmarks.md);
`WEIGHTS` holds them per first stage, ``None`` where the ranker did not beat the first
stage's own order on every fold, query style and catalog size, so that stage keeps its order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .index import SearchIndex

__all__ = ["FEATURES", "RERANK_DEPTH", "WEIGHTS", "features", "rerank", "weights_for"]

RERANK_DEPTH = 30
"""Candidates of the first stage the second one reorders (the rest follow in their order)."""

FEATURES = (
    "first",
    "leaf_bm25",
    "param_name_bm25",
    "description_bm25",
    "param_text_bm25",
    "namespace_bm25",
    "coverage",
    "leaf_coverage",
    "namespace_coverage",
    "exact_name",
    "param_name_overlap",
    "cosine",
    "place",
)
"""What the ranker sees of a candidate, in order. With ``Z`` the sum of the query terms' IDF:

- ``first``: the first stage's score over the best candidate's (1 for the best);
- ``*_bm25``: per field (leaf name, parameter names, description, parameter texts,
  namespace and its descriptions), the sum over exact query terms of
  ``idf * tf / (tf + norm)`` (BM25's saturation and length normalisation), over ``Z``;
- ``coverage``: the IDF share of the query terms the tool matches (prefix matches count);
- ``leaf_coverage`` / ``namespace_coverage``: the share of the leaf's (namespace's) terms
  that are query terms (a partial name match); ``exact_name``: 1 when all of both are;
- ``param_name_overlap``: the share of the query terms that are parameter-name terms;
- ``cosine``: the candidate's similarity to the query minus the best candidate's (0 without a
  model; a candidate the semantic ranking did not list counts its lowest similarity);
- ``place``: ``1 / (1 + place)`` in the first stage's order."""

Weights = tuple[float, ...]

WEIGHTS: dict[str, Weights | None] = {
    "bm25": None,
    "hybrid": None,
}
"""The ranker's weights per first stage (``bm25``: BM25 alone; ``hybrid``: BM25 fused with a
semantic ranking), one per `FEATURES` entry; ``None``: that stage keeps its own order."""


def weights_for(hybrid: bool) -> Weights | None:
    """The shipped weights of a first stage, or ``None`` (keep its order)."""
    return WEIGHTS["hybrid" if hybrid else "bm25"]


def features(
    index: SearchIndex,
    terms: Sequence[str],
    candidates: Sequence[int],
    first: Sequence[float],
    similarity: Mapping[int, float] | None = None,
) -> list[list[float]]:
    """The `FEATURES` of each of ``candidates`` (document ids, in the first stage's order,
    with its ``first`` scores) for a query of ``terms`` (de-duplicated index terms);
    ``similarity``: the semantic ranking's similarities, ``None`` without a model."""
    if not candidates:
        return []
    looked = [(index.term_fields(t), index.matches(t)) for t in terms]
    total = sum(idf for (idf, _), _ in looked) or 1.0
    best_first = max(first) or 1.0
    if similarity:
        floor = min(similarity.values())
        sims = [similarity.get(d, floor) for d in candidates]
        best_sim = max(sims)
    else:
        sims, best_sim = [0.0] * len(candidates), 0.0
    count = len(terms) or 1
    rows = []
    for place, doc in enumerate(candidates):
        fields = [0.0] * 5
        covered = 0.0
        leaf_hits = namespace_hits = param_hits = 0
        for (idf, counts), matched in looked:
            if doc in matched:
                covered += idf
            for f in range(4):
                tf = counts[f].get(doc)
                if tf:
                    fields[f] += idf * tf / (tf + index.norm(f, doc))
                    if f == 0:
                        leaf_hits += tf
                    elif f == 1:
                        param_hits += 1
            own = counts[4].get(doc, 0)
            tf = own + counts[5].get(doc, 0)
            if tf:
                fields[4] += idf * tf / (tf + index.norm(4, doc))
                namespace_hits += own
        leaf_length, namespace_length = index.name_length(doc)
        leaf = min(1.0, leaf_hits / leaf_length) if leaf_length else 0.0
        namespace = min(1.0, namespace_hits / namespace_length) if namespace_length else 1.0
        rows.append(
            [
                first[place] / best_first,
                *(value / total for value in fields),
                covered / total,
                leaf,
                namespace if namespace_length else 0.0,
                1.0 if leaf == 1.0 and namespace == 1.0 else 0.0,
                param_hits / count,
                sims[place] - best_sim,
                1.0 / (1 + place),
            ]
        )
    return rows


def rerank(
    index: SearchIndex,
    terms: Sequence[str],
    candidates: Sequence[int],
    first: Sequence[float],
    weights: Weights,
    *,
    tiers: Sequence[int] | None = None,
    similarity: Mapping[int, float] | None = None,
) -> list[int]:
    """``candidates`` (the first stage's order, its scores ``first`` within their ``tiers``)
    with the first `RERANK_DEPTH` reordered by the ranker (tier first, then the weighted sum
    of `features`, then the first stage's order); the rest follow unchanged.

    >>> index = SearchIndex([(["get", "weather"], [], ["forecast"]), (["forecast"], [], [])])
    >>> rerank(index, ["forecast"], [0, 1], [2.0, 1.0], (0.0, 1.0) + (0.0,) * 11)
    [1, 0]
    """
    head = list(candidates[:RERANK_DEPTH])
    rows = features(index, terms, head, first[: len(head)], similarity)
    scores = [sum(w * x for w, x in zip(weights, row, strict=True)) for row in rows]
    tier = list(tiers[: len(head)]) if tiers is not None else [0] * len(head)
    order = sorted(range(len(head)), key=lambda i: (-tier[i], -scores[i], i))
    return [head[i] for i in order] + list(candidates[RERANK_DEPTH:])
