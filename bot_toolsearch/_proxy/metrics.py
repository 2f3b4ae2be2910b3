"""``GET /metrics``: the proxy's counters in the Prometheus text format (version 0.0.4).

Written by ``prometheus_client`` (the reference client: its exposition, escaping and histogram
rules, and its multiprocess mode) on a `CollectorRegistry` of each `ProxyMetrics`' own, never
the library's process-global default registry, so an application that embeds the proxy and
uses that registry is untouched, and two apps in one process count apart.

Under ``serve --workers N`` each worker is its own process: ``serve`` then gives the workers one
shared folder (``PROMETHEUS_MULTIPROC_DIR``, set before any worker starts), each worker's
counters and histograms live in files there, and whichever worker answers ``/metrics`` reports
the whole server (`multiprocess.MultiProcessCollector`); the cached-list gauges are summed over
the live workers.

Names follow the Prometheus conventions: ``bot_toolsearch_`` prefix, ``_total`` counters,
``_seconds`` histograms. Labels take values from closed sets only (the API, a status class, a
refusal reason, a configured client's name), never a key, a model's text, a tool name or a path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "MULTIPROCESS_ENV", "ProxyMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the Prometheus text exposition format."""
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""The folder ``serve --workers N`` shares between its workers for their metrics."""

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upstream model requests: tens of milliseconds (a cached short answer) to minutes."""
_BUILD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Indexing a tool list: a millisecond for a few tools, about a second at 10,000."""


def _multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROCESS_ENV))


_CHILDREN = 4096
"""Most label sets a metric keeps found (its labels are closed sets: routes, status classes,
APIs, refusal reasons, the configured clients' names)."""


def _child(
    metric: Any, children: dict[tuple[tuple[str, str], ...], Any], labels: dict[str, str]
) -> Any:
    """``metric.labels(**labels)`` (``metric`` itself without labels), found once per label
    set: the library's lookup validates and locks on every call."""
    if not labels:
        return metric
    key = tuple(labels.items())
    child = children.get(key)
    if child is None:
        child = metric.labels(**labels)
        if len(children) < _CHILDREN:
            children[key] = child
    return child


def _child_at(metric: Any, children: dict[tuple[str, ...], Any], values: tuple[str, ...]) -> Any:
    """``metric.labels(*values)``, found once per set of values (as `_child`, without
    naming the labels: no keyword arguments to pack and sort into a key)."""
    child = children.get(values)
    if child is None:
        child = metric.labels(*values)
        if len(children) < _CHILDREN:
            children[values] = child
    return child


class _Counter:
    """A labelled counter: ``inc(amount, **labels)``, or ``at(*values).inc(amount)``."""

    def __init__(
        self, registry: CollectorRegistry, name: str, help_text: str, labels: Sequence[str]
    ) -> None:
        self.name = name
        self._metric = Counter(name, help_text, labels, registry=registry)
        self._children: dict[tuple[tuple[str, str], ...], Any] = {}
        self._at: dict[tuple[str, ...], Any] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        _child(self._metric, self._children, labels).inc(amount)

    def at(self, *values: str) -> Any:
        """The counter of these label values, given in the order of the metric's labels
        (``inc(**labels)`` costs about half a microsecond more, issue 44)."""
        return _child_at(self._metric, self._at, values)

    def value(self, **labels: str) -> float:
        """This process's count (for the tests)."""
        for metric in self._metric.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total") and sample.labels == labels:
                    return sample.value
        return 0.0


class _Histogram:
    """A labelled histogram: ``observe(value, **labels)``, or ``at(*values).observe(value)``."""

    def __init__(
        self,
        registry: CollectorRegistry,
        name: str,
        help_text: str,
        labels: Sequence[str],
        buckets: Sequence[float],
    ) -> None:
        self.name = name
        self._metric = Histogram(name, help_text, labels, registry=registry, buckets=buckets)
        self._children: dict[tuple[tuple[str, str], ...], Any] = {}
        self._at: dict[tuple[str, ...], Any] = {}

    def observe(self, value: float, **labels: str) -> None:
        _child(self._metric, self._children, labels).observe(value)

    def at(self, *values: str) -> Any:
        """The histogram of these label values, in the order of the metric's labels."""
        return _child_at(self._metric, self._at, values)

    def count(self, **labels: str) -> int:
        """This process's number of observations (for the tests)."""
        for metric in self._metric.collect():
            for sample in metric.samples:
                if sample.name.endswith("_count") and sample.labels == labels:
                    return int(sample.value)
        return 0


class _Read(Collector):
    """Gauges read when scraped (one process: the app's own cache)."""

    def __init__(self, gauges: Sequence[tuple[str, str, Callable[[], float]]]) -> None:
        self._gauges = gauges

    def collect(self) -> Iterator[Metric]:
        for name, help_text, read in self._gauges:
            yield GaugeMetricFamily(name, help_text, value=read())


class ProxyMetrics:
    """The counters of one proxy app.

    Args:
        cache_size: reads how many tool lists the app has indexed and cached.
        cache_bytes: reads their JSON size in bytes.
    """

    def __init__(self, cache_size: Callable[[], float], cache_bytes: Callable[[], float]) -> None:
        self._registry = registry = CollectorRegistry()
        self.requests = _Counter(
            registry,
            "bot_toolsearch_requests_total",
            "HTTP requests answered, by route (chat_completions, responses, forwarded, "
            "healthz, metrics) and status class.",
            ("code", "route"),
        )
        self.client_requests = _Counter(
            registry,
            "bot_toolsearch_client_requests_total",
            "HTTP requests of named [[proxy.clients]] clients, by client name and status class.",
            ("client", "code"),
        )
        self.rounds = _Counter(
            registry,
            "bot_toolsearch_upstream_rounds_total",
            "Model rounds sent upstream for tool-searched calls, by API.",
            ("api",),
        )
        self.hidden_rounds = _Counter(
            registry,
            "bot_toolsearch_hidden_rounds_total",
            "Rounds the proxy answered itself (tool_search, refusals) and asked again, by API.",
            ("api",),
        )
        self.searches = _Counter(
            registry,
            "bot_toolsearch_searches_total",
            "tool_search calls answered, by API.",
            ("api",),
        )
        self.loads = _Counter(
            registry,
            "bot_toolsearch_tools_loaded_total",
            "Tools loaded by searches and blind calls, by API.",
            ("api",),
        )
        self.refusals = _Counter(
            registry,
            "bot_toolsearch_refusals_total",
            "Calls refused or unusable, by API and reason.",
            ("api", "reason"),
        )
        self.index_builds = _Histogram(
            registry,
            "bot_toolsearch_index_build_seconds",
            "Time to index a new tool list and build its search index.",
            (),
            _BUILD_BUCKETS,
        )
        self.upstream = _Histogram(
            registry,
            "bot_toolsearch_upstream_request_duration_seconds",
            "Time from sending an upstream HTTP request to its response headers, by API.",
            ("api",),
            _LATENCY_BUCKETS,
        )
        gauges = (
            (
                "bot_toolsearch_tool_lists_cached",
                "Tool lists indexed and cached (their catalogs and search indexes).",
                cache_size,
            ),
            (
                "bot_toolsearch_tool_lists_cached_bytes",
                "JSON size of the cached tool lists.",
                cache_bytes,
            ),
        )
        self._names = [
            *(m.name for m in (self.requests, self.client_requests, self.rounds)),
            *(m.name for m in (self.hidden_rounds, self.searches, self.loads, self.refusals)),
            self.index_builds.name,
            self.upstream.name,
            *(name for name, _, _ in gauges),
        ]
        self._shared: list[tuple[Gauge, Callable[[], float]]] = []
        if _multiprocess():  # each worker's share of the gauges, summed over live workers
            self._shared = [
                (Gauge(name, text, registry=registry, multiprocess_mode="livesum"), read)
                for name, text, read in gauges
            ]
        else:
            registry.register(_Read(gauges))

    def render(self) -> bytes:
        """Every metric in the text exposition format: this process's, or with
        ``--workers N`` the whole server's."""
        if not self._shared:
            return generate_latest(self._registry)
        from prometheus_client import multiprocess

        self.refresh()
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        return generate_latest(merged)

    def refresh(self) -> None:
        """With ``--workers N``: this worker's share of the gauges, written for the others'
        scrapes (after each request; nothing to do in one process, where they are read)."""
        for gauge, read in self._shared:
            gauge.set(read())

    def names(self) -> Iterable[str]:
        """The metric names (for the docs and the tests)."""
        return iter(self._names)
