"""``bot-toolsearch demo`` end to end: the real Bot, SDK and HTTP on the embedded model."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

from bot_toolsearch._demo._width import display_width
from bot_toolsearch._demo.run import FOLLOW_UP, QUESTIONS
from bot_toolsearch.testing import ErrorTurn, ModelRequest, ScriptedOpenAIServer, error


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "demo", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_offline_demo_runs_every_question_and_prints_the_figures() -> None:
    done = demo()
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "EMBEDDED OFFLINE MODEL" in out
    assert "o200k_base" in out
    assert out.count("\nask: ") == 6
    assert "ask: 帮我看看群成员“小明”的头像" in out
    assert "call group.get_member_avatar(" in out
    assert "示例数据" in out
    # Each ask: a search round with only the always-loaded tools and tool_search, then more.
    assert out.count("round 1: sent 3 tools") == 5
    assert out.count("call end({}) -> ran") == 6
    # The follow-up reads the turn before it, and the tool that turn called is still loaded.
    follow_up = out[out.index(f"ask: {FOLLOW_UP}") : out.index(f"ask: {QUESTIONS[1]}")]
    assert "round 1: sent 4 tools" in follow_up
    assert 'call time.now({"timezone":"Europe/Paris"}) -> ran' in follow_up
    assert "tool_search" not in follow_up
    assert "result: 6.213712" in out
    without = re.search(r"tool search OFF: +(\d+) tools +(\d+) tokens", out)
    with_search = re.search(r"tool search ON: +(\d+) tools +(\d+) tokens", out)
    assert without is not None
    assert with_search is not None
    assert int(without.group(1)) >= 150
    assert int(with_search.group(2)) * 5 < int(without.group(2))
    assert "Traceback" not in done.stderr
    # The closing table lines up in a terminal, the Chinese question's row too.
    prefixes = ("question ", *QUESTIONS, FOLLOW_UP)
    rows = [line for line in out.splitlines() if line.startswith(prefixes)]
    assert len(rows) == 7
    assert len({display_width(row) for row in rows}) == 1


def test_unreachable_endpoint_is_one_line_and_nonzero() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = demo("--model-url", f"http://127.0.0.1:{port}/v1", "--model", "x", "--api-key", "k")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"bot-toolsearch demo: error: cannot reach http://127.0.0.1:{port}/v1"
    ]


def test_model_url_needs_a_model_name() -> None:
    done = demo("--model-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "needs --model" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_api_key_is_one_line_and_nonzero() -> None:
    def reject(request: ModelRequest) -> ErrorTurn:
        return error(401, "Incorrect API key provided.", code="invalid_api_key")

    with ScriptedOpenAIServer(responder=reject) as server:
        done = demo("--model-url", server.base_url, "--model", "gpt-x", "--api-key", "bad")
        server.reset()  # the rejections were the point, not failures of the server
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"bot-toolsearch demo: error: {server.base_url} rejected the API key"
    ]
