"""Config layer: reload latency (write → new snapshot) and the cost of ``snapshot()``."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path

from bot_toolsearch import BotSettings
from bot_toolsearch.config import ConfigReloader, load_settings

from ._table import Row, median_seconds, us

EDITS = 20
TIMEOUT = 10.0


def _text(value: int) -> str:
    return f"[skills]\ntool_search_enabled = true\ntool_search_max_results = {value}\n"


def _reload_latency(folder: Path, debounce: float) -> float:
    """Median seconds from the end of a write to the new snapshot being live."""
    path = folder / f"config-{debounce}.toml"
    path.write_text(_text(1), encoding="utf-8")
    swapped = threading.Event()
    wanted = [0]
    samples = []

    def on_reload(settings: BotSettings) -> None:
        # With no debounce a reload can read the file between truncate and write (an empty
        # file is valid TOML); the figure is the time until the *edited* value is live.
        if settings.skills.tool_search_max_results == wanted[0]:
            swapped.set()

    with ConfigReloader(path, debounce=debounce, env={}) as reloader:
        reloader.subscribe(on_reload)
        for value in range(2, EDITS + 2):
            swapped.clear()
            wanted[0] = value
            path.write_text(_text(value), encoding="utf-8")
            start = time.perf_counter()
            if not swapped.wait(TIMEOUT):
                raise RuntimeError(f"no reload within {TIMEOUT} s")
            samples.append(time.perf_counter() - start)
            assert reloader.snapshot().skills.tool_search_max_results == value
    return statistics.median(samples)


def run() -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for debounce in (0.2, 0.0):
            latency = _reload_latency(folder, debounce)
            note = f"median of {EDITS} edits, debounce {debounce * 1000:.0f} ms"
            rows.append(Row("config", "reload latency", f"{latency * 1000:.1f} ms", note))
        path = folder / "config.toml"
        path.write_text(_text(5), encoding="utf-8")
        with ConfigReloader(path, env={}) as reloader:
            snap = median_seconds(reloader.snapshot, repeat=20_000)
            assert isinstance(reloader.snapshot(), BotSettings)
        rows.append(Row("config", "snapshot() per ask", us(snap), "reference read, no parsing"))
        load = median_seconds(lambda: load_settings(path, env={}), repeat=200)
        rows.append(Row("config", "load + validate file", us(load), "off the ask path"))
    return rows
