"""Choose the ranking's field weights and BM25 parameters by cross-validation (issue 23).

Not part of ``make bench`` (it takes minutes): run ``.venv/bin/python -m bench.tune_ranking``.

Three evaluation sets, never the dev set alone:

- **A** and **B**: the dev query set's two halves (even and odd lines), each searched in the
  769-tool benchmark catalog;
- **10k**: the same half's queries searched in the 10,000-tool pool (``_scale_catalog``), which
  holds the 769 tools among 9,231 real others (BFCL's other categories, Google's APIs).

The score of a setting on a set is the mean of recall@5 and MRR@5 over both query styles
(questions and keyword forms). Fold 1 chooses on half A (769 and 10,000 tools) and reports
half B; fold 2 the reverse. The search is coordinate descent from today's setting over a
small fixed grid per parameter, two passes. A parameter's value is adopted only when both folds
choose it; where they disagree, today's value stays (the adopted setting). Every figure is
printed so the decision can be checked. No query is ever looked at one by one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from bot_toolsearch._core import index as index_module
from bot_toolsearch._core.index import SearchIndex
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._scale_catalog import load_scale_catalog
from .bench_quality import CAP, DATA, evaluate

Setting = dict[str, Any]
GRID: dict[str, tuple[Any, ...]] = {
    "leaf": (1.0, 1.5, 2.0),
    "param_names": (0.25, 0.5, 0.75),
    "description": (0.75, 1.0, 1.25),
    "param_texts": (0.25, 0.5, 0.75),
    "namespace": (0.25, 0.5, 1.0, 1.5),
    "k": (0.9, 1.2, 1.5),
    "b": (0.5, 0.75, 0.9),
    "bonus": (0.5, 1.0, 1.5),
}
_FIELDS = ("leaf", "param_names", "description", "param_texts", "namespace")


def current() -> Setting:
    """Today's setting, read from the index module."""
    weights = dict(zip(_FIELDS, index_module.FIELD_WEIGHTS, strict=True))
    return {
        **weights,
        "k": index_module._K,
        "b": index_module._B,
        "bonus": index_module._MATCH_BONUS,
    }


@contextmanager
def applied(setting: Setting) -> Iterator[None]:
    """The index module's constants set to ``setting`` for the duration (bench only)."""
    saved = (
        index_module.FIELD_WEIGHTS,
        index_module._K,
        index_module._B,
        index_module._MATCH_BONUS,
    )
    index_module.FIELD_WEIGHTS = tuple(setting[f] for f in _FIELDS)
    index_module._K, index_module._B = setting["k"], setting["b"]
    index_module._MATCH_BONUS = setting["bonus"]
    try:
        yield
    finally:
        (index_module.FIELD_WEIGHTS, index_module._K, index_module._B,
         index_module._MATCH_BONUS) = saved  # fmt: skip


class Corpus:
    """One catalog with its documents tokenised once; `ranker` re-indexes under a setting."""

    def __init__(self, schemas: list[dict[str, Any]]) -> None:
        self.catalog = ToolCatalog(schemas)
        self.docs = [self.catalog.document(name) for name in self.catalog.sorted_names]

    def ranker(self, setting: Setting) -> Callable[[str], Sequence[str]]:
        with applied(setting):
            built = SearchIndex(self.docs)
        # The session reads the catalog's index: this setting's replaces it (bench only).
        self.catalog._index = built

        def rank(query: str) -> Sequence[str]:
            return ToolSearchSession(self.catalog, max_results=CAP).search(query).loaded

        return rank


def figures(rank: Callable[[str], Sequence[str]], queries: list[dict[str, Any]]) -> list[float]:
    """recall@5 and MRR@5 for questions, then for keyword forms."""
    out = []
    for field in ("question", "keyword_query"):
        _, r5, mrr = evaluate(rank, queries, field)
        out += [r5, mrr]
    return out


def main() -> None:
    lines = (DATA / "queries_dev.jsonl").read_text("utf-8").splitlines()
    queries = [json.loads(line) for line in lines if line.strip()]
    halves = {"A": queries[0::2], "B": queries[1::2]}
    small, large = Corpus(load_scale_catalog(769)), Corpus(load_scale_catalog(10_000))
    cache: dict[str, dict[str, list[float]]] = {}

    def measure(setting: Setting) -> dict[str, list[float]]:
        key = json.dumps(setting, sort_keys=True)
        if key not in cache:
            rank_small, rank_large = small.ranker(setting), None
            found = {f"{h} 769": figures(rank_small, qs) for h, qs in halves.items()}
            rank_large = large.ranker(setting)
            found |= {f"{h} 10k": figures(rank_large, qs) for h, qs in halves.items()}
            cache[key] = found
            print(f"  {key}: " + ", ".join(f"{k} {_score(v):.4f}" for k, v in found.items()),
                  flush=True)  # fmt: skip
        return cache[key]

    def objective(setting: Setting, half: str) -> float:
        found = measure(setting)
        return (_score(found[f"{half} 769"]) + _score(found[f"{half} 10k"])) / 2

    start = current()
    chosen = {}
    for train, test in (("A", "B"), ("B", "A")):
        print(f"fold: choose on {train}, report {test}")
        best = dict(start)
        for _ in range(2):
            for name, values in GRID.items():
                for value in values:
                    candidate = {**best, name: value}
                    if objective(candidate, train) > objective(best, train) + 1e-9:
                        best = candidate
        chosen[train] = best
    # Adopted: each value both folds chose on their own; where they disagree, today's stays.
    adopted = {k: v if chosen["B"][k] == v else start[k] for k, v in chosen["A"].items()}
    for train, test in (("A", "B"), ("B", "A")):
        print(f"\nchosen on {train}: {chosen[train]}")
        for label, setting in (("today", start), ("chosen", chosen[train]), ("adopted", adopted)):
            found = measure(setting)
            print(f"  {label:7} held-out {test}: 769 {_fmt(found[f'{test} 769'])}"
                  f" | 10k {_fmt(found[f'{test} 10k'])}")  # fmt: skip
    print(f"\nadopted (both folds agree): {adopted}")
    for label, setting in (("today", start), ("adopted", adopted)):
        found = measure(setting)
        whole = {size: [(a + b) / 2 for a, b in zip(found[f"A {size}"], found[f"B {size}"],
                                                    strict=True)]
                 for size in ("769", "10k")}  # fmt: skip
        print(f"  {label:7} whole dev set: 769 {_fmt(whole['769'])} | 10k {_fmt(whole['10k'])}")


def _score(values: list[float]) -> float:
    return sum(values) / len(values)


def _fmt(values: list[float]) -> str:
    q_r, q_m, k_r, k_m = values
    return f"question {q_r:.3f}/{q_m:.3f} keywords {k_r:.3f}/{k_m:.3f}"


if __name__ == "__main__":
    main()
