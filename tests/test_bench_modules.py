"""Every ``bench/bench_*.py`` module imports and offers ``run()``: a moved module cannot break
``make bench`` unnoticed."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCH.glob("bench_*.py")))
def test_the_bench_module_imports_and_has_run(name: str) -> None:
    module = importlib.import_module(f"bench.{name}")
    assert callable(module.run)
