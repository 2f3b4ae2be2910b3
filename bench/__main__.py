"""Run every ``bench/bench_*.py`` module's ``run()`` and print one table."""

from __future__ import annotations

import importlib
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
    print(render(rows))
    return 0


raise SystemExit(main())
