"""``chat`` keeps one conversation (``--conversation``, ``/reset``, ``/history``, ``/tools``)
and ``ask --conversation`` continues one, as real subprocesses on the embedded offline model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.test_chat import DEMO_TOOLS, run

CONFIG = (
    "[skills]\ntool_search_enabled = true\n{extra}\n[bot]\nhot_reload = false\n"
    "[conversations]\nstore = {store}\n"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    text = CONFIG.format(extra="", store='"sqlite:///state/bot.db"')
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return tmp_path


def conversation_of(stderr: str) -> str:
    match = re.search(r"^conversation: (\S+) \(kept in (.+?);", stderr, re.M)
    assert match is not None, stderr
    return match.group(1)


def test_chat_prints_a_fresh_conversation_and_follow_ups_see_the_first_turn(
    folder: Path,
) -> None:
    lines = "What is the current local time in Tokyo?\nand in Paris?\n/history\n"
    done = run("chat", "--tools", DEMO_TOOLS, cwd=folder, stdin=lines)
    assert done.returncode == 0, done.stderr
    first = conversation_of(done.stderr)
    assert str(folder / "state" / "bot.db") in done.stderr
    assert "timezone: Europe/Paris" in done.stdout
    assert "[1] you> What is the current local time in Tokyo?" in done.stdout
    assert "[2] you> and in Paris?" in done.stdout
    again = run("chat", "--tools", DEMO_TOOLS, cwd=folder, stdin="/history\n")
    assert conversation_of(again.stderr) != first  # a fresh one per session
    assert "(no turns yet)" in again.stdout


def test_a_conversation_survives_the_process_and_reset_forgets_it(folder: Path) -> None:
    done = run(
        "ask",
        "What is the current local time in Tokyo?",
        "--conversation",
        "team/42 'quoted'",
        "--tools",
        DEMO_TOOLS,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    lines = "/history\nand in Paris?\n/reset\n/history\n"
    chat = run(
        "chat", "--conversation", "team/42 'quoted'", "--tools", DEMO_TOOLS, cwd=folder, stdin=lines
    )
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert out.index("[1] you> What is the current local time in Tokyo?") < out.index("Paris")
    assert "timezone: Europe/Paris" in out
    assert "conversation team/42 'quoted' forgotten" in out
    assert out.rstrip().endswith("(no turns yet)\nyou>")


def test_tools_shows_what_is_loaded(tmp_path: Path) -> None:
    text = CONFIG.format(extra='tool_search_keep_loaded = "conversation"', store='"memory"')
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    lines = "/tools\nWhat is the current local time in Tokyo?\n/tools\n/nope\n/help\n"
    done = run("chat", "--tools", DEMO_TOOLS, cwd=tmp_path, stdin=lines)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("always loaded: send_message, end") == 2
    assert "kept for this conversation: (none yet)" in out
    assert "kept for this conversation: time.now" in out
    assert "the last message loaded: time.now" in out
    assert "unknown command /nope" in out
    assert "unknown command /help" not in out
    assert "commands: /reset forgets this conversation;" in out
    assert "/help shows this" in out


def test_a_corrupt_store_is_named_and_chat_goes_on_without_memory(folder: Path) -> None:
    (folder / "state").mkdir()
    (folder / "state" / "bot.db").write_bytes(b"not sqlite at all " * 100)
    lines = "Convert 10 km to miles\nWhat is the current local time in Tokyo?\n"
    done = run("chat", "--tools", DEMO_TOOLS, cwd=folder, stdin=lines)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1
    assert str(folder / "state" / "bot.db") in errors[0]
    assert "going on without conversation memory" in errors[0]
    assert "10 km is 6.21371 mi." in done.stdout
    assert "timezone: Asia/Tokyo" in done.stdout
    single = run("ask", "Convert 10 km to miles", "--tools", DEMO_TOOLS, cwd=folder)
    assert single.returncode == 0, single.stderr  # a single-shot ask never opens the store
    failed = run("ask", "hi", "--conversation", "c", cwd=folder)
    assert failed.returncode == 1
    assert f"error: {folder / 'state' / 'bot.db'}: not a usable" in failed.stderr
