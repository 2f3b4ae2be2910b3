"""The examples run as a newcomer runs them: as subprocesses, against the embedded model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_own_loop_searches_loads_and_answers() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "own_loop.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The first request carries only tool_search; the loaded schemas arrive in the next one.
    assert lines[1] == "  sending 1 tools"
    assert lines[2].startswith('  tool_search -> {"loaded":[')
    assert "  sending 6 tools" in lines
    assert "reply: 10 km is 6.21371 mi." in done.stdout
    assert "reply: 查到了（示例数据）：nickname：小明" in done.stdout  # noqa: RUF001
    assert "小明" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "example", ["openai_agents_example", "pydantic_ai_example", "langchain_proxy_example"]
)
def test_framework_examples_run_the_real_tool_behind_tool_search(example: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "frameworks" / f"{example}.py")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("INFO:")]
    assert lines == [
        "  ran get_weather(city='Oslo')",
        "reply: It is sunny in Oslo, 21 C.",
        "  upstream request 1: tools=['tool_search']",
        "  upstream request 2: tools=['tool_search', 'get_weather']",
        "  upstream request 3: tools=['tool_search', 'get_weather']",
    ]
