"""``GET /metrics``: the proxy's counters in the Prometheus text format (version 0.0.4).

A small writer of our own rather than ``prometheus_client``: the proxy exposes a dozen metrics
with fixed, bounded labels, which takes a few dozen lines; the library's process-global default
registry would collide with an application that embeds the proxy and already uses it, its
multiprocess mode needs a shared directory set before start-up, and ``/metrics`` must work in a
plain install. Each metric belongs to one `ProxyMetrics` (one per `ProxyApp`), so two apps in
one process count apart. Under ``serve --workers N`` each worker counts its own requests.

Names follow the Prometheus conventions: ``bot_toolsearch_`` prefix, ``_total`` counters,
``_seconds`` histograms. Labels take values from closed sets only (the API, a status class, a
refusal reason), never a key, a model's text, a tool name or a path.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Sequence

__all__ = ["CONTENT_TYPE", "ProxyMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the Prometheus text exposition format."""

Labels = tuple[tuple[str, str], ...]

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upstream model requests: tens of milliseconds (a cached short answer) to minutes."""
_BUILD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Indexing a tool list: a millisecond for a few tools, about a second at 10,000."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[str, str] | None = None) -> str:
    pairs = (*labels, extra) if extra is not None else labels
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Metric:
    kind = ""

    def __init__(self, name: str, help_text: str, lock: threading.Lock) -> None:
        self.name = name
        self.help = help_text
        self._lock = lock

    def samples(self) -> list[str]:
        raise NotImplementedError

    def render(self) -> str:
        head = f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.kind}\n"
        return head + "".join(line + "\n" for line in self.samples())


class _Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, lock: threading.Lock) -> None:
        super().__init__(name, help_text, lock)
        self._values: dict[Labels, float] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(tuple(sorted(labels.items())), 0.0)

    def samples(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return [f"{self.name}{_labels(k)} {_number(v)}" for k, v in items]


class _Gauge(_Metric):
    kind = "gauge"

    def __init__(
        self, name: str, help_text: str, lock: threading.Lock, read: Callable[[], float]
    ) -> None:
        super().__init__(name, help_text, lock)
        self._read = read

    def samples(self) -> list[str]:
        return [f"{self.name} {_number(self._read())}"]


class _Histogram(_Metric):
    kind = "histogram"

    def __init__(
        self, name: str, help_text: str, lock: threading.Lock, buckets: Sequence[float]
    ) -> None:
        super().__init__(name, help_text, lock)
        self._bounds = (*buckets, math.inf)
        self._series: dict[Labels, tuple[list[int], list[float]]] = {}

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        at = bisect.bisect_left(self._bounds, value)
        with self._lock:
            counts, total = self._series.setdefault(key, ([0] * len(self._bounds), [0.0]))
            counts[at] += 1
            total[0] += value

    def count(self, **labels: str) -> int:
        with self._lock:
            series = self._series.get(tuple(sorted(labels.items())))
            return sum(series[0]) if series is not None else 0

    def samples(self) -> list[str]:
        with self._lock:
            items = sorted((k, (list(c), t[0])) for k, (c, t) in self._series.items())
        lines: list[str] = []
        for key, (counts, total) in items:
            running = 0
            for bound, count in zip(self._bounds, counts, strict=True):
                running += count
                lines.append(f"{self.name}_bucket{_labels(key, ('le', _number(bound)))} {running}")
            lines.append(f"{self.name}_sum{_labels(key)} {_number(total)}")
            lines.append(f"{self.name}_count{_labels(key)} {running}")
        return lines


class ProxyMetrics:
    """The counters of one proxy app.

    Args:
        cache_size: reads how many tool lists the app has indexed and cached.
        cache_bytes: reads their JSON size in bytes.
    """

    def __init__(self, cache_size: Callable[[], float], cache_bytes: Callable[[], float]) -> None:
        lock = threading.Lock()
        self.requests = _Counter(
            "bot_toolsearch_requests_total",
            "HTTP requests answered, by route (chat_completions, responses, forwarded, "
            "healthz, metrics) and status class.",
            lock,
        )
        self.client_requests = _Counter(
            "bot_toolsearch_client_requests_total",
            "HTTP requests of named [[proxy.clients]] clients, by client name and status class.",
            lock,
        )
        self.rounds = _Counter(
            "bot_toolsearch_upstream_rounds_total",
            "Model rounds sent upstream for tool-searched calls, by API.",
            lock,
        )
        self.hidden_rounds = _Counter(
            "bot_toolsearch_hidden_rounds_total",
            "Rounds the proxy answered itself (tool_search, refusals) and asked again, by API.",
            lock,
        )
        self.searches = _Counter(
            "bot_toolsearch_searches_total", "tool_search calls answered, by API.", lock
        )
        self.loads = _Counter(
            "bot_toolsearch_tools_loaded_total",
            "Tools loaded by searches and blind calls, by API.",
            lock,
        )
        self.refusals = _Counter(
            "bot_toolsearch_refusals_total",
            "Calls refused or unusable, by API and reason.",
            lock,
        )
        self.index_builds = _Histogram(
            "bot_toolsearch_index_build_seconds",
            "Time to index a new tool list and build its search index.",
            lock,
            _BUILD_BUCKETS,
        )
        self.upstream = _Histogram(
            "bot_toolsearch_upstream_request_duration_seconds",
            "Time from sending an upstream HTTP request to its response headers, by API.",
            lock,
            _LATENCY_BUCKETS,
        )
        self._all: list[_Metric] = [
            self.requests,
            self.client_requests,
            self.rounds,
            self.hidden_rounds,
            self.searches,
            self.loads,
            self.refusals,
            self.index_builds,
            _Gauge(
                "bot_toolsearch_tool_lists_cached",
                "Tool lists indexed and cached (their catalogs and search indexes).",
                lock,
                cache_size,
            ),
            _Gauge(
                "bot_toolsearch_tool_lists_cached_bytes",
                "JSON size of the cached tool lists.",
                lock,
                cache_bytes,
            ),
            self.upstream,
        ]

    def render(self) -> bytes:
        """Every metric in the text exposition format."""
        return "".join(metric.render() for metric in self._all).encode()

    def names(self) -> Iterable[str]:
        """The metric names (for the docs and the tests)."""
        return (metric.name for metric in self._all)
