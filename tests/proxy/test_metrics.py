"""``GET /metrics``: the proxy's counters in the Prometheus text format, after real calls of
the openai SDK through the proxy."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import openai
import pytest

from bot_toolsearch._proxy.metrics import ProxyMetrics
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, Usage, call, text
from tests.wrap._tools import chat_tools, responses_tools

USER = {"role": "user", "content": "Weather in Oslo?"}
_SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$")


def _samples(exposition: str) -> dict[str, float]:
    """``name{labels}`` -> value; every line a comment or a well-formed sample."""
    out: dict[str, float] = {}
    for line in exposition.splitlines():
        if line.startswith("#"):
            assert line.startswith(("# HELP bot_toolsearch_", "# TYPE bot_toolsearch_")), line
            continue
        match = _SAMPLE.match(line)
        assert match is not None, line
        out[match[1] + (match[2] or "")] = float(match[3])
    return out


def test_metrics_count_requests_rounds_searches_loads_refusals_and_builds(
    server: ScriptedOpenAIServer, proxy_url: str
) -> None:
    server.script(
        ToolCallsTurn((call("tool_search", query="weather city"),), usage=Usage(100, 5, 0)),
        ToolCallsTurn((call("send_email", to="a", body="b"),), usage=Usage(110, 6, 0)),
        ToolCallsTurn((call("get_weather", city="Oslo"),), usage=Usage(120, 7, 0)),
        call("tool_search", query="select:play_music"),
        text("Playing."),
    )
    client = openai.OpenAI(base_url=proxy_url, api_key="sk-secret-key", max_retries=0)
    client.chat.completions.create(model="m", messages=[USER], tools=chat_tools())
    client.responses.create(model="m", input="Play", tools=responses_tools())
    # A list's index is built after the upstream's 2xx, in the index pool: its time is counted
    # when the build ends, which may come just after the reply.
    build = "bot_toolsearch_index_build_seconds_count"
    for _ in range(200):
        response = httpx.get(proxy_url.removesuffix("/v1") + "/metrics")
        if _samples(response.text).get(build) == 2:
            break
        time.sleep(0.025)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    exposition = response.text
    assert "sk-secret-key" not in exposition
    samples = _samples(exposition)
    assert samples['bot_toolsearch_requests_total{code="2xx",route="chat_completions"}'] == 1
    assert samples['bot_toolsearch_requests_total{code="2xx",route="responses"}'] == 1
    assert samples['bot_toolsearch_upstream_rounds_total{api="chat"}'] == 3
    assert samples['bot_toolsearch_upstream_rounds_total{api="responses"}'] == 2
    assert samples['bot_toolsearch_hidden_rounds_total{api="chat"}'] == 2
    assert samples['bot_toolsearch_hidden_rounds_total{api="responses"}'] == 1
    assert samples['bot_toolsearch_searches_total{api="chat"}'] == 1
    assert samples['bot_toolsearch_tools_loaded_total{api="responses"}'] == 1
    assert samples['bot_toolsearch_refusals_total{api="chat",reason="not_loaded"}'] == 1
    # Two new tool lists (the Chat and the Responses shapes), each indexed once.
    assert samples["bot_toolsearch_index_build_seconds_count"] == 2
    assert samples["bot_toolsearch_tool_lists_cached"] == 2
    assert samples["bot_toolsearch_tool_lists_cached_bytes"] > 0
    latency = 'bot_toolsearch_upstream_request_duration_seconds_count{api="chat"}'
    assert samples[latency] == 3
    assert samples['bot_toolsearch_upstream_request_duration_seconds_count{api="responses"}'] == 2
    buckets = [
        v
        for k, v in samples.items()
        if k.startswith('bot_toolsearch_upstream_request_duration_seconds_bucket{api="chat"')
    ]
    assert buckets == sorted(buckets)
    assert buckets[-1] == 3  # le="+Inf"
    client.close()
    # The scrape itself is counted by the next one.
    again = _samples(httpx.get(proxy_url.removesuffix("/v1") + "/metrics").text)
    assert again['bot_toolsearch_requests_total{code="2xx",route="metrics"}'] == 1


def test_label_values_are_escaped_and_names_follow_the_conventions() -> None:
    metrics = ProxyMetrics(lambda: 0, lambda: 0)
    metrics.refusals.inc(api="chat", reason='odd"\\\nreason')
    text_ = metrics.render().decode()
    assert 'reason="odd\\"\\\\\\nreason"' in text_
    for name in metrics.names():
        assert name.startswith("bot_toolsearch_")
        kind = re.search(rf"^# TYPE {name} (\w+)$", text_, re.MULTILINE)
        assert kind is not None
        if kind[1] == "counter":
            assert name.endswith("_total")
        if kind[1] == "histogram":
            assert name.endswith("_seconds")


def test_with_several_workers_any_worker_reports_the_whole_server(tmp_path: Path) -> None:
    from tests.cli.test_serve import start_serve, stop_serve

    root, proc = start_serve(tmp_path, "--workers=2")
    closing = {"connection": "close"}  # a new connection each time: either worker may take it
    try:
        for _ in range(12):
            answer = httpx.post(
                f"{root}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                headers=closing,
                timeout=60,
            )
            assert answer.status_code == 200
        counts = []
        for _ in range(20):
            found = _samples(httpx.get(f"{root}/metrics", headers=closing, timeout=60).text)
            counts.append(
                found['bot_toolsearch_requests_total{code="2xx",route="chat_completions"}']
            )
    finally:
        stop_serve(proc)
    assert set(counts) == {12}


def test_a_label_set_found_once_counts_every_time_in_its_own_series(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot_toolsearch._proxy import metrics as module

    monkeypatch.setattr(module, "_CHILDREN", 2)  # past it, series are looked up each time
    metrics = ProxyMetrics(lambda: 0, lambda: 0)
    for _ in range(3):
        metrics.refusals.inc(api="chat", reason="not_loaded")
        metrics.refusals.inc(reason="not_loaded", api="chat")  # the same series
        metrics.refusals.inc(api="responses", reason="not_loaded")
        metrics.refusals.inc(api="chat", reason="denied")
    assert metrics.refusals.value(api="chat", reason="not_loaded") == 6
    assert metrics.refusals.value(api="responses", reason="not_loaded") == 3
    assert metrics.refusals.value(api="chat", reason="denied") == 3
    metrics.upstream.observe(0.5, api="chat")
    metrics.upstream.observe(0.25, api="chat")
    assert metrics.upstream.count(api="chat") == 2


def test_a_series_found_by_its_values_is_the_one_its_labels_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``at(*values)`` (values in the order of the metric's labels) counts in the very series
    ``inc(**labels)`` counts in, found once or, past `_CHILDREN`, each time."""
    from bot_toolsearch._proxy import metrics as module

    for children in (module._CHILDREN, 1):
        monkeypatch.setattr(module, "_CHILDREN", children)
        metrics = ProxyMetrics(lambda: 0, lambda: 0)
        for _ in range(3):
            metrics.requests.inc(route="chat_completions", code="2xx")
            metrics.requests.at("2xx", "chat_completions").inc()  # labels: code, route
            metrics.requests.at("4xx", "responses").inc()
            metrics.client_requests.at("team-a", "2xx").inc(2)  # labels: client, code
            metrics.rounds.at("chat").inc()
            metrics.upstream.at("chat").observe(0.5)
            metrics.upstream.observe(0.25, api="chat")
        assert metrics.requests.value(route="chat_completions", code="2xx") == 6
        assert metrics.requests.value(route="responses", code="4xx") == 3
        assert metrics.requests.value(route="chat_completions", code="4xx") == 0
        assert metrics.client_requests.value(client="team-a", code="2xx") == 6
        assert metrics.rounds.value(api="chat") == 3
        assert metrics.upstream.count(api="chat") == 6
        assert metrics.requests.at("2xx", "chat_completions") is metrics.requests.at(
            "2xx", "chat_completions"
        )
