"""The semantic stage's similarity scan: numpy (the ``semantic`` extra) and the pure-Python
fallback rank the same vectors alike, ties by document order, from one float32 copy; the
disk cache's values are checked on both paths. Speed is measured in bench/bench_embeddings.py."""

from __future__ import annotations

import hashlib
import logging
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._services import semantic
from bot_toolsearch._services.semantic import VectorCache, semantic_ranker
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer

from .test_semantic import RAIN, TOOLS, _schema


@pytest.fixture(params=[True, False], ids=["numpy", "pure-python"])
def fast(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Run the test on the numpy path, then again with it switched off."""
    monkeypatch.setattr(semantic, "_USE_NUMPY", request.param)
    return bool(request.param)


def _both(rows: list[list[float]], dimension: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The same rows as a numpy matrix and as a pure-Python one."""
    monkeypatch.setattr(semantic, "_USE_NUMPY", True)
    numpy_matrix = semantic._Matrix(rows, dimension)
    monkeypatch.setattr(semantic, "_USE_NUMPY", False)
    python_matrix = semantic._Matrix(rows, dimension)
    assert numpy_matrix.fast
    assert not python_matrix.fast
    return numpy_matrix, python_matrix


def test_numpy_and_pure_python_rank_random_vectors_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(23)
    rows = [[rng.gauss(0.0, 1.0) for _ in range(48)] for _ in range(400)]
    query = semantic._normalised([rng.gauss(0.0, 1.0) for _ in range(48)])
    numpy_matrix, python_matrix = _both(rows, 48, monkeypatch)
    units = [semantic._normalised(row) for row in rows]
    exact = [math.fsum(a * b for a, b in zip(unit, query, strict=True)) for unit in units]
    expected = sorted(range(400), key=lambda d: (-exact[d], d))
    for count in (1, 7, 100, 399, 400, 1000):
        for matrix in (numpy_matrix, python_matrix):
            found = matrix.top(query, count)
            assert [d for d, _ in found] == expected[:count]
            # The similarity is the cosine, to float32 precision.
            assert all(math.isclose(s, exact[d], abs_tol=1e-5) for d, s in found)
    assert numpy_matrix.top(query, 0) == python_matrix.top(query, 0) == []


class _Ids:
    """A matrix whose `top` gives the document ids alone."""

    def __init__(self, matrix: Any) -> None:
        self.matrix = matrix

    def top(self, query: list[float], count: int) -> list[int]:
        return [d for d, _ in self.matrix.top(query, count)]


def test_ties_go_to_document_order_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [[3.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [0.6, 0.8], [0.0, 0.0]]
    for scored in _both(rows, 2, monkeypatch):
        matrix = _Ids(scored)
        # Rows 0, 2 and 3 are the same unit vector: equal scores, earliest first, also
        # when the cut falls among them.
        assert matrix.top([1.0, 0.0], 2) == [0, 2]
        assert matrix.top([1.0, 0.0], 4) == [0, 2, 3, 4]
        # Rows 1 and 5 (a zero row stays zero) score 0 exactly only in exact arithmetic:
        # the pure path's |r|^2 - |r - q|^2 may round them apart, a float tie.
        ranked = matrix.top([1.0, 0.0], 6)
        assert ranked[:4] == [0, 2, 3, 4]
        assert sorted(ranked[4:]) == [1, 5]
        assert matrix.top([0.0, 1.0], 2) == [1, 4]


def test_the_rows_are_one_float32_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [[float(i), 1.0, 2.0] for i in range(10)]
    numpy_matrix, python_matrix = _both(rows, 3, monkeypatch)
    assert numpy_matrix.nbytes == python_matrix.nbytes == 10 * 3 * 4
    # The numpy path keeps its own array and no flat copy beside it.
    assert numpy_matrix._rows.base is None
    assert len(numpy_matrix._flat) == 0
    assert python_matrix._rows is None
    assert len(python_matrix._flat) == 30


def test_the_scan_path_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bot_toolsearch")
    semantic._announce.cache_clear()
    rows = [[1.0, 0.0], [0.0, 1.0]]
    for _ in range(3):
        _both(rows, 2, monkeypatch)
    said = [r.getMessage() for r in caplog.records if "similarity scan" in r.getMessage()]
    assert len(said) == 2
    assert "with numpy" in said[0]
    assert "numpy is not installed" in said[1]
    assert "pip install numpy" in said[1]
    assert all(r.levelno < logging.WARNING for r in caplog.records)


def test_a_cached_vector_is_a_view_of_the_file_not_a_copy(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "identity")
    digest = hashlib.sha256(b"text").digest()
    cache.save(3, {digest: [0.0, 0.6, 0.8]})
    dimension, vectors = cache.load()
    assert dimension == 3
    assert list(vectors[digest]) == pytest.approx([0.0, 0.6, 0.8])
    if sys.byteorder == "little":
        assert isinstance(vectors[digest], memoryview)
    cache.save(3, {})
    assert cache.load() == (3, {})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_cache_file_holding_nan_or_infinity_is_refused(
    fast: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture, bad: float
) -> None:
    # Checksummed like a good file (written by save), so only the value check can refuse it.
    cache = VectorCache(tmp_path, "identity")
    good, broken = hashlib.sha256(b"a").digest(), hashlib.sha256(b"b").digest()
    cache.save(2, {good: [1.0, 0.0], broken: [0.5, bad]})
    assert cache.load() == (None, {})
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    cache.save(2, {good: [1.0, 0.0], broken: [0.5, 0.5]})
    dimension, vectors = cache.load()
    assert (dimension, sorted(vectors)) == (2, sorted([good, broken]))


def _settings(server: ScriptedOpenAIServer, cache: Path) -> BotSettings:
    wanted = {"model": "hashed-words", "base_url": server.base_url, "cache_dir": str(cache)}
    return BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": wanted}}
    )


def test_both_paths_serve_the_same_searches_over_http(
    server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.embeddings.dimension = 256
    server.embeddings.aliases.update({"rain": "weather", "tomorrow": "forecast"})
    tools = [*TOOLS, *(_schema(f"extra.tool_{i}", f"Tool number {i}.", "x") for i in range(40))]
    settings = _settings(server, tmp_path)
    found = {}
    for fast in (True, False):
        monkeypatch.setattr(semantic, "_USE_NUMPY", fast)
        catalog = ToolCatalog(tools)  # a new catalog: its matrix is built on this path
        ranker = semantic_ranker(settings, catalog)
        assert ranker is not None
        found[fast] = [
            [d for d, _ in ranker(query, 20) or ()]
            for query in (RAIN, "send a letter", "tool number 7")
        ]
        session = ToolSearchSession(catalog, semantic=ranker, max_results=1)
        assert session.search(RAIN).loaded == ("weather.forecast",)
    assert found[True] == found[False]
    assert all(ranking is not None and len(ranking) == 20 for ranking in found[True])


@pytest.mark.parametrize("damage", ["flipped", "truncated"])
def test_a_corrupt_cache_file_is_rebuilt_on_both_paths(
    fast: bool,
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: str,
) -> None:
    server.embeddings.dimension = 64
    server.embeddings.aliases.update({"rain": "weather", "tomorrow": "forecast"})
    settings = _settings(server, tmp_path)
    before = ToolCatalog(TOOLS)
    ToolSearchSession(before, semantic=semantic_ranker(settings, before)).search(RAIN)
    (path,) = tmp_path.glob("*.vectors")
    data = path.read_bytes()
    flipped = data[:-5] + bytes([data[-5] ^ 0x40]) + data[-4:]
    path.write_bytes(flipped if damage == "flipped" else data[:-9])
    catalog = ToolCatalog(TOOLS)
    session = ToolSearchSession(catalog, semantic=semantic_ranker(settings, catalog), max_results=1)
    assert session.search(RAIN).loaded == ("weather.forecast",)
    # Rebuilt whole (the query's vector is remembered from the first search).
    assert [len(r["input"]) for r in server.embeddings.requests] == [3, 1, 3]
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    assert path.read_bytes() == data


def test_huge_values_are_normalised_not_zeroed() -> None:
    # Finite float64 values an endpoint may send: squaring them overflowed to a zero vector.
    assert semantic._normalised([3e300, -4e300]) == pytest.approx([0.6, -0.8])
    assert semantic._normalised([0.0, 0.0]) == [0.0, 0.0]
