"""``bot-toolsearch demo`` end to end: the real Bot, SDK and HTTP on the embedded model."""

from __future__ import annotations

import re
import socket
import subprocess

from bot_toolsearch._demo._width import display_width
from bot_toolsearch._demo.run import FOLLOW_UP, QUESTIONS
from bot_toolsearch.testing import ErrorTurn, ModelRequest, ScriptedOpenAIServer, error
from tests._cli_runner import run_cli


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("demo", *args)


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
    assert 'call time.now({"timezone":"Europe/Paris"}) -> ran' in follow_up
    assert "tool_search" not in follow_up
    assert '"result": 6.213712' in out
    without = re.search(r"tool search OFF: +(\d+) tools +(\d+) tokens", out)
    with_search = re.search(r"tool search ON: +(\d+) tools +(\d+) tokens", out)
    assert without is not None
    assert with_search is not None
    assert int(without.group(1)) >= 150
    assert int(with_search.group(2)) * 5 < int(without.group(2))
    # Each figure says what it counts: per round the schemas alone, the first request with
    # the directory, and the whole asks (every round) with and without tool search.
    assert "round 1: sent 3 tools (schemas: " in out
    assert "first request (tool schemas, plus the directory message with tool search):" in out
    whole = re.search(
        r"whole asks, every round \(the same 6 questions asked twice\):\n"
        r" +tool search OFF: +(\d+) tokens\n +tool search ON: +(\d+) tokens\n"
        r" +saved: +(\d+) tokens \((\d+\.\d)%\)",
        out,
    )
    assert whole is not None, out
    off, on, saved = (int(whole.group(i)) for i in (1, 2, 3))
    assert saved == off - on > 0
    per_ask = re.findall(r"^.+? +\d+ +\d+ +\d+ +\d+ +\d+ +\d+ +(\d+) +(\d+)$", out, re.M)
    assert len(per_ask) == 6
    assert sum(int(a) for a, _ in per_ask) == on
    assert sum(int(b) for _, b in per_ask) == off
    # Without tool search every round sends all the schemas: at least the first request's.
    assert all(int(b) >= int(without.group(2)) for _, b in per_ask)
    # Replies read like a model's: no tool names, numbers rounded.
    assert "  reply: 10 km is 6.21371 mi." in out
    assert "  reply: The result is 25.6667." in out
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
        f"error: cannot reach the model endpoint http://127.0.0.1:{port}; check --model-url"
    ]


def test_model_url_needs_a_model_name() -> None:
    done = demo("--model-url", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert done.stderr == "error: --model-url needs --model NAME\n"
    assert "Traceback" not in done.stderr


def test_bad_api_key_is_one_line_and_nonzero() -> None:
    def reject(request: ModelRequest) -> ErrorTurn:
        return error(401, "Incorrect API key provided.", code="invalid_api_key")

    with ScriptedOpenAIServer(responder=reject) as server:
        done = demo("--model-url", server.base_url, "--model", "gpt-x", "--api-key", "bad")
        server.reset()  # the rejections were the point, not failures of the server
    assert done.returncode == 1
    where = server.base_url.removesuffix("/v1")
    assert done.stderr.strip().splitlines() == [
        f"error: {where} rejected the API key (HTTP 401: Incorrect API key provided.); "
        "check --api-key or OPENAI_API_KEY"
    ]
