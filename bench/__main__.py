"""Run every ``bench/bench_*.py`` module's ``run()`` and print one table."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

from ._table import Row, render


def main() -> int:
    rows: list[Row] = []
    here = Path(__file__).parent
    only = set(sys.argv[1:])
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if not info.name.startswith("bench_") or (only and info.name not in only):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        start = time.perf_counter()
        rows.extend(module.run())
        print(f"[{info.name}: {time.perf_counter() - start:.1f} s]", file=sys.stderr)
    table = render(rows)
    print(table)
    if not only:  # a full run: docs/benchmarks.md is what it printed, nothing else
        write_docs(table)
    return 0


def write_docs(table: str) -> None:
    """Write docs/benchmarks.md from a full run's table (the README links it)."""
    import platform

    path = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
    path.write_text(
        "# Benchmarks\n\n"
        "Written by `make bench` (`bench/__main__.py`) from its last full run; do not edit.\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}. What the rows mean: [performance.md](performance.md).\n\n"
        f"```\n{table}\n```\n",
        encoding="utf-8",
    )
    print(f"wrote {path.relative_to(path.parents[1]).as_posix()}", file=sys.stderr)


raise SystemExit(main())
