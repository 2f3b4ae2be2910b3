"""The one table ``make bench`` prints: every benchmark module returns rows of it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Row:
    """One figure: which benchmark, what was measured, the value and its unit or note."""

    section: str
    metric: str
    value: str
    note: str = ""


def median_seconds(fn: Callable[[], object], *, repeat: int = 200, warmup: int = 5) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def us(seconds: float) -> str:
    """Seconds as a microsecond string."""
    return f"{seconds * 1e6:.1f} µs"


def render(rows: list[Row]) -> str:
    """Rows as an aligned text table."""
    header = Row("benchmark", "metric", "value", "note")
    cols = [header, *rows]
    widths = [max(len(getattr(r, f)) for r in cols) for f in ("section", "metric", "value")]
    lines = []
    for i, r in enumerate(cols):
        lines.append(
            f"{r.section:<{widths[0]}}  {r.metric:<{widths[1]}}  {r.value:>{widths[2]}}  {r.note}"
        )
        if i == 0:
            lines.append("-" * (sum(widths) + 6 + max(len(x.note) for x in cols)))
    return "\n".join(lines)
