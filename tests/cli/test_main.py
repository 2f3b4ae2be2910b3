"""The conventions every ``bot-toolsearch`` command shares: --version, errors, exit statuses."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bot_toolsearch
from tests._cli_runner import clean_env, run_cli

DEMO_TOOLS = "bot_toolsearch._demo.catalog:demo_tools"


def test_version() -> None:
    done = run_cli("--version")
    assert (done.returncode, done.stdout) == (0, f"bot-toolsearch {bot_toolsearch.__version__}\n")


@pytest.mark.parametrize(
    "args",
    [
        ("nonsense",),
        ("ask",),
        ("search", "x", "--max-results", "0"),
        ("catalog", "stats", "x.json", "--dot-delimiter", "."),
        ("demo", "--model-url", "http://127.0.0.1:9/v1"),
    ],
)
def test_usage_errors_exit_2_with_one_error_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    assert done.stderr.splitlines()[-1] == errors[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "hi", "--config", "missing.toml"),
        ("chat", "--tools", "no_such_module_xyz:tools"),
        ("search", "x", "--catalog", "missing.json"),
        ("catalog", "stats", "missing.json"),
        ("catalog", "list", "--config", "missing.toml"),
        ("config", "validate", "missing.toml"),
    ],
)
def test_failures_exit_1_with_one_error_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 1, done
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1, done.stderr


def test_ask_json_prints_the_whole_result(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[skills]\ntool_search_enabled = true\n")
    done = run_cli("ask", "Convert 10 km to miles", "--json", "--tools", DEMO_TOOLS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reply"] == "10 km is 6.21371 mi."
    assert result["finish_reason"] == "end"
    assert result["rounds"] == len(result["trace"]) == 4
    assert result["trace"][0]["calls"][0]["name"] == "tool_search"
    assert result["stats"]["searches"] == 1
    assert "units.convert_length" in result["stats"]["tools_loaded"]


def test_chat_edits_lines_with_readline_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[bot]\nhot_reload = false\n")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", "chat", "--tools", DEMO_TOOLS],
        cwd=tmp_path,
        env=clean_env({"TERM": "xterm", "INPUTRC": "/dev/null"}),
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""

    def read_until(marker: bytes, count: int) -> None:
        nonlocal seen
        deadline = time.monotonic() + 120
        while seen.count(marker) < count:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                seen += os.read(leader, 4096)

    try:
        read_until(b"you> ", 1)
        os.write(leader, b"Convert 10 km to miles\r")
        read_until(b"you> ", 2)
        os.write(leader, b"\x1b[A\r")  # up arrow: the previous line again, from the history
        read_until(b"you> ", 3)
        os.write(leader, b"\x04")  # Ctrl-D
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    assert seen.count(b"bot> 10 km is 6.21371 mi.") == 2, seen
