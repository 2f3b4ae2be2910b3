"""A bot process killed mid-ask, or mid-write, leaves only whole turns in its SQLite file."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bot_toolsearch.conversations import ConversationHistory, SQLiteConversationStore
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

TIMEOUT = 60.0

ASKER = """
import asyncio, pathlib, sys
import openai
from bot_toolsearch import Bot, BotSettings, Tool
from bot_toolsearch.conversations import SQLiteConversationStore

base_url, db, marker = sys.argv[1:4]

async def hang() -> str:
    pathlib.Path(marker).write_text("started")
    await asyncio.sleep(3600)
    return "never"

async def main() -> None:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="t", max_retries=0)
    tools = [Tool("hang", "Hangs.", None, hang)]
    bot = Bot(BotSettings(), tools, client=client, conversations=SQLiteConversationStore(db))
    await bot.ask("first", conversation="c")
    await bot.ask("second, killed midway", conversation="c")

asyncio.run(main())
"""

WRITER = """
import asyncio, sys
from bot_toolsearch.conversations import ConversationTurn, SQLiteConversationStore

async def main() -> None:
    store = SQLiteConversationStore(sys.argv[1])
    n = 0
    while True:
        n += 1
        big = "x" * 200_000
        messages = ({"role": "user", "content": f"turn {n}"}, {"role": "assistant", "content": big})
        turn = ConversationTurn(
            user_text=f"turn {n}", reply=big, messages=messages, tools_called=(f"tool.{n}",)
        )
        await store.append("c", turn)

asyncio.run(main())
"""


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def kill(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(TIMEOUT)
    if process.stderr is not None:
        process.stderr.close()


def read(db: Path) -> ConversationHistory:
    """The conversation as a fresh store (this process, not the killed one) reads it."""

    async def load() -> ConversationHistory:
        store = SQLiteConversationStore(db)
        try:
            return await store.load("c")
        finally:
            await store.aclose()

    return asyncio.run(load())


def test_an_ask_killed_midway_stores_nothing_of_itself(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    db, marker = tmp_path / "bot.db", tmp_path / "started"
    server.script(text("one"), call("hang", id="h1"))
    process = subprocess.Popen(
        [sys.executable, "-c", ASKER, server.base_url, str(db), str(marker)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: marker.exists() or process.poll() is not None, "the hanging tool")
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
    finally:
        kill(process)
    history = read(db)
    assert [t.user_text for t in history.turns] == ["first"]
    assert history.turns[0].reply == "one"


def test_a_process_killed_while_writing_leaves_only_whole_turns(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def written() -> int:
        if process.poll() is not None:
            raise AssertionError(process.stderr.read() if process.stderr else "writer died")
        try:
            with sqlite3.connect(db, timeout=1) as conn:
                return int(conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0])
        except sqlite3.Error:
            return 0  # not created yet

    try:
        wait_for(lambda: written() >= 15, "15 turns")
    finally:
        kill(process)  # almost surely in the middle of a write
    history = read(db)
    count = history.total_turns
    assert count >= 15
    assert [t.seq for t in history.turns] == list(range(1, count + 1))
    for turn in history.turns:
        assert turn.user_text == f"turn {turn.seq}"
        assert turn.messages[0] == {"role": "user", "content": f"turn {turn.seq}"}
        assert len(turn.messages[1]["content"]) == 200_000
    # The conversation row was written in the same transaction as each turn.
    assert history.tools_called == tuple(f"tool.{n}" for n in range(1, count + 1))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
