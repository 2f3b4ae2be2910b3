"""``bot-toolsearch serve --access-log json --log-level info``: one JSON object per request
with what tool search did, and one log line per round, from a real ``serve`` process."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import openai

from bot_toolsearch._proxy.access_log import JsonFormatter
from bot_toolsearch.offline import demo_tools
from tests.cli.test_serve import start_serve, stop_serve


def test_json_access_log_and_round_lines(tmp_path: Path) -> None:
    root, proc = start_serve(tmp_path, "--access-log=json", "--log-level=info")
    try:
        client = openai.OpenAI(base_url=f"{root}/v1", api_key="sk-do-not-log", max_retries=0)
        client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Convert 10 km to miles"}],
            tools=[t.schema() for t in demo_tools()],  # type: ignore[misc]
        )
        client.close()
        httpx.get(f"{root}/metrics?token=s3cret")
    finally:
        stderr = stop_serve(proc)
    assert "sk-do-not-log" not in stderr
    assert "s3cret" not in stderr
    # Every line is JSON: the banner, uvicorn's own lines and the rounds' lines too.
    records = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert records[0]["message"].startswith("serve: http://127.0.0.1:")
    assert any(r["logger"].startswith("uvicorn") for r in records)
    access = [r for r in records if r["logger"] == "bot_toolsearch.access"]
    chat = next(r for r in access if r["route"] == "chat_completions")
    assert (chat["method"], chat["path"], chat["status"]) == ("POST", "/v1/chat/completions", 200)
    assert chat["model"] == "any"
    assert chat["stream"] is False
    assert chat["rounds"] >= 2
    assert chat["hidden_rounds"] == chat["rounds"] - 1
    assert chat["searches"] >= 1
    assert chat["loaded"]
    assert all(name.startswith("units.") for name in chat["loaded"])
    assert chat["duration_ms"] >= 0
    scrape = next(r for r in access if r["route"] == "metrics")
    assert scrape["path"] == "/metrics?token=REDACTED"
    # uvicorn's own text access line is off; the rounds are logged at info.
    assert '"POST /v1/chat/completions HTTP/1.1"' not in stderr
    rounds = [r for r in records if r["logger"] == "bot_toolsearch.rounds"]
    assert rounds[0]["message"].startswith("round 1 (hidden)")
    assert rounds[0]["toolsearch_hidden"] is True


def test_log_level_warning_hides_the_round_lines(tmp_path: Path) -> None:
    root, proc = start_serve(tmp_path, "--log-level=warning")
    try:
        client = openai.OpenAI(base_url=f"{root}/v1", api_key="k", max_retries=0)
        client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Convert 10 km to miles"}],
            tools=[t.schema() for t in demo_tools()],  # type: ignore[misc]
        )
        client.close()
    finally:
        stderr = stop_serve(proc)
    assert "bot_toolsearch.rounds" not in stderr
    assert "Uvicorn running" not in stderr  # uvicorn's info lines follow --log-level too


def test_the_json_formatter_writes_one_object_per_record() -> None:
    record = logging.LogRecord("bot_toolsearch.x", logging.WARNING, "f", 1, "a %s", ("b",), None)
    assert json.loads(JsonFormatter().format(record))["message"] == "a b"
    record.access = {"status": 200}
    assert json.loads(JsonFormatter().format(record))["status"] == 200


def test_the_documented_curl_example_posts_the_shipped_ask_json(tmp_path: Path) -> None:
    """docs/wrapper.md's `curl ... -d @examples/ask.json` against `serve --upstream offline`:
    the file exists, and the x-toolsearch headers and metrics the page shows are what it gets."""
    repo = Path(__file__).resolve().parents[2]
    page = (repo / "docs" / "wrapper.md").read_text(encoding="utf-8")
    shown = page[page.index("-d @examples/ask.json") :]
    shown = shown[: shown.index("```")]
    root, proc = start_serve(tmp_path)
    try:
        body = (repo / "examples" / "ask.json").read_bytes()
        reply = httpx.post(
            f"{root}/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
            timeout=60,
        )
        metrics = httpx.get(f"{root}/metrics").text.splitlines()
    finally:
        stop_serve(proc)
    assert reply.status_code == 200
    got = [f"{k}: {v}" for k, v in reply.headers.items() if k.startswith("x-toolsearch-")]
    documented = [line for line in shown.splitlines() if line.startswith("x-toolsearch-")]
    assert sorted(got) == sorted(documented)
    for line in shown.splitlines():
        if line.startswith("bot_toolsearch_") and "seconds" not in line:
            assert line in metrics
