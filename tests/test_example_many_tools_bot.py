"""examples/many_tools_bot/ runs as its README says: ``bot.py``, and ``chat`` with a hot edit."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bot_toolsearch._config.env import ENV_FALLBACKS

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "many_tools_bot"
TIMEOUT = 120


def clean_env() -> dict[str, str]:
    drop = {"OPENAI_API_KEY", "OPENAI_BASE_URL", *ENV_FALLBACKS}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_bot_py_runs_offline_and_searches(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "bot.py")],
        cwd=tmp_path,  # works from any directory
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("model: EMBEDDED OFFLINE MODEL at http://127.0.0.1:")
    assert out[1] == "catalog: 201 tools"  # ~200 tools plus send_message and end
    assert (
        out.count('  round 1: sent 3 tools; tool_search({"query":"convert km miles"}) -> answered')
        == 1
    )
    assert '  round 2: sent 8 tools; notes.add({"text":"buy milk"}) -> ran' in out
    assert "  reply: Here is what I found: saved: buy milk; count: 1." in out
    assert any(line.startswith("  round 2: sent 8 tools; shop.stock(") for line in out)
    assert "10 km is 6.21371 mi." in done.stdout


class Chat:
    """A running ``bot-toolsearch chat --trace`` whose output (stdout and stderr, where the trace
    goes, in one pipe) is read line by line; status lines are kept apart in ``notices``."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "bot_toolsearch", "chat", "--trace", "--config",
                str(config), "--tools", str(EXAMPLE / "catalog.py") + ":tools",
            ],
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.notices: list[str] = []
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def ask(self, text: str) -> list[str]:
        """The trace and reply lines of one ask."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        got: list[str] = []
        while not got or "bot> " not in got[-1]:
            line = self.lines.get(timeout=TIMEOUT).removeprefix("you> ").rstrip("\n")
            self.seen.append(line)
            if line.startswith(("chat: ", "config: ", "conversation: ")):
                self.notices.append(line)
            else:
                got.append(line)
        return got

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()  # EOF: chat exits
        try:
            status = self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=TIMEOUT)  # stdout reaches EOF once the process is gone
        with self.proc.stdout:
            while not self.lines.empty():
                self.seen.append(self.lines.get())
        return status, "\n".join(self.seen)


def round_2(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("  round 2: "))


def set_value(config: Path, key: str, value: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "bot_toolsearch",
            "config",
            "set",
            key,
            value,
            "--config",
            str(config),
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def ask_until(chat: Chat, text: str, wanted: str) -> list[str]:
    """Ask until round 1 or 2 starts with ``wanted`` (the reload is asynchronous)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        lines = chat.ask(text)
        if any(line.startswith(wanted) for line in lines[:6]) or time.monotonic() > deadline:
            return lines


def test_hot_editing_skills_while_chat_runs(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    shutil.copy(EXAMPLE / "config.toml", config)
    chat = Chat(config)
    try:
        first = chat.ask("Convert 10 km to miles")
        assert first[0] == "  round 1: sent 3 tools: send_message, end, tool_search"
        assert round_2(first).startswith("  round 2: sent 8 tools: ")  # 5 loaded

        assert set_value(config, "skills.tool_search_max_results", "3").returncode == 0
        fewer = ask_until(chat, "Convert 10 km to miles", "  round 2: sent 6 tools: ")
        assert round_2(fewer).startswith("  round 2: sent 6 tools: ")  # 3 loaded
        assert "units.convert_length" in round_2(fewer)

        assert set_value(config, "skills.tool_search_enabled", "false").returncode == 0
        every = ask_until(chat, "Convert 10 km to miles", "  round 1: sent 201 tools: ")
        assert every[0].startswith("  round 1: sent 201 tools: ")
        assert not any("call tool_search(" in line for line in every)

        refused = set_value(config, "skills.tool_search_max_results", '"three"')
        assert refused.returncode == 1
        assert "expected an integer" in refused.stderr
        assert "tool_search_max_results = 3" in config.read_text(encoding="utf-8")

        # An editor saving a broken file: the chat says so between prompts, plainly.
        config.write_text(config.read_text(encoding="utf-8") + "\n[skills\n", encoding="utf-8")
        deadline = time.monotonic() + TIMEOUT
        while not any("edit not applied" in n for n in chat.notices):
            assert time.monotonic() < deadline, chat.notices
            chat.ask("Convert 10 km to miles")
    finally:
        status, output = chat.close()
    assert status == 0
    assert "Traceback" not in output
    assert chat.notices[0] == (
        f"chat: {config}; 201 tools; tool search on ([skills] tool_search_enabled = true in the "
        "config); model: the EMBEDDED OFFLINE MODEL "
        "(a deterministic planner, not an LLM). Ctrl-D quits, Ctrl-C stops an answer."
    )
    reloaded = f"config: {config} reloaded; the next message uses it"
    assert chat.notices.count(reloaded) >= 2  # max_results, then tool search off
    refusal = next(n for n in chat.notices if "edit not applied" in n)
    assert refusal.startswith(f"config: edit not applied ({config}:")
    assert refusal.endswith("); the previous settings stay")
    assert "generation" not in output  # no internal terms, and no library log line instead
    assert "ERROR" not in output
