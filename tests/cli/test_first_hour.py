"""A newcomer's first hour (issue 22): defaults as documented, conversations that persist, the
demo's next step, a chat that survives endpoint errors, the server's own error text."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bot_toolsearch import Bot, ConfigError
from bot_toolsearch._demo.run import CHAT_HINT
from bot_toolsearch.testing import ErrorTurn, ModelRequest, ScriptedOpenAIServer, error, text
from tests._cli_runner import clean_env, run_cli
from tests.cli.test_chat import closed_port

TIMEOUT = 120
TOKYO = "What is the current local time in Tokyo?"


def test_config_init_writes_the_documented_deny_default(tmp_path: Path) -> None:
    assert run_cli("config", "init", cwd=tmp_path).returncode == 0
    got = run_cli("config", "get", "tools.deny", cwd=tmp_path)
    assert (got.returncode, got.stdout) == (0, "[]\n")  # README: `tools.deny` default `[]`


def test_trace_logs_how_many_tools_the_permissions_hid_never_their_names(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[skills]\ntool_search_enabled = true\n[tools]\ndeny = ["units.*"]\n[bot]\n'
        "hot_reload = false\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "ask", TOKYO, "--offline", "--trace"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "permissions" in line]
    assert len(lines) == 1, done.stderr  # once per ask, not per round
    assert lines[0].startswith("INFO: permissions ([tools] allow/deny, tool_filter) hid ")
    assert "units." not in lines[0]
    quiet = subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "ask", TOKYO, "--offline"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "permissions" not in quiet.stderr  # INFO: only with --trace (or the host's logging)


def test_without_a_config_file_conversations_are_kept_in_sqlite_next_to_cwd(
    tmp_path: Path,
) -> None:
    first = run_cli("ask", TOKYO, "--offline", "--conversation", "t1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "bot.db").is_file()
    # A new process continues the conversation: the follow-up is read as "local time in Paris".
    again = run_cli("ask", "and in Paris?", "--offline", "--conversation", "t1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "Europe/Paris" in again.stdout
    chat = run_cli("chat", "--offline", "--conversation", "t1", cwd=tmp_path, stdin="/history\n")
    assert "kept in bot.db; --conversation t1 continues it" in chat.stderr
    assert f"[1] you> {TOKYO}" in chat.stdout


def test_offline_alone_brings_the_demo_tools_and_the_demo_says_so(tmp_path: Path) -> None:
    command = CHAT_HINT.splitlines()[0].split(": ", 1)[1]
    assert command == "bot-toolsearch chat --offline"
    done = run_cli(*command.split()[1:], cwd=tmp_path, stdin="Convert 10 km to miles\n")
    assert done.returncode == 0, done.stderr
    assert "180 tools" in done.stderr  # the demo's 178 + send_message and end
    assert "bot> 10 km is 6.21371 mi." in done.stdout
    asked = run_cli("ask", "Convert 10 km to miles", "--offline", "--trace", cwd=tmp_path)
    assert asked.stdout == "10 km is 6.21371 mi.\n"
    # With no config file, --offline runs as the demo does: tool search on.
    assert "round 1: sent 3 tools: send_message, end, tool_search" in asked.stderr


def test_the_demo_ends_with_the_chat_hint() -> None:
    done = run_cli("demo")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(CHAT_HINT)


def test_an_unknown_model_shows_the_servers_message_in_demo_and_ask(tmp_path: Path) -> None:
    message = "The model `gpt-9-ultra` does not exist or you do not have access to it."

    def unknown(request: ModelRequest) -> ErrorTurn:
        return error(404, message, code="model_not_found")

    with ScriptedOpenAIServer(responder=unknown) as server:
        shown = run_cli(
            "demo", "--model-url", server.base_url, "--model", "gpt-9-ultra", "--api-key", "k"
        )
        (tmp_path / "config.toml").write_text(
            f'[model]\nname = "gpt-9-ultra"\nbase_url = "{server.base_url}"\napi_key = "k"\n',
            encoding="utf-8",
        )
        asked = run_cli("ask", "hi", cwd=tmp_path)
        server.reset()  # the 404s were the point
    where = server.base_url.removesuffix("/v1")
    assert shown.returncode == asked.returncode == 1
    assert shown.stderr.splitlines()[-1] == (
        f"error: {where} answered HTTP 404: {message}; check --model and --model-url"
    )
    assert asked.stderr.splitlines()[-1] == (
        f"error: {where} answered HTTP 404: {message}; check [model] name and [model] base_url"
    )


def test_from_config_on_a_missing_file_suggests_config_init(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"`bot-toolsearch config init` writes one"):
        Bot.from_config(tmp_path / "config.toml")


class _Chat:
    """A real ``chat`` process driven line by line, its output read as it comes."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot_toolsearch", "chat"],
            cwd=cwd,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.readers = [
            threading.Thread(target=self._read, args=(stream, tag), daemon=True)
            for stream, tag in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, stream: object, tag: str) -> None:
        assert hasattr(stream, "readline")
        for line in iter(stream.readline, ""):
            self.lines.put(f"{tag}: {line.rstrip()}")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, *markers: str) -> str:
        """The next output line holding one of ``markers``."""
        while True:
            line = self.lines.get(timeout=TIMEOUT)
            if any(marker in line for marker in markers):
                return line

    def finish(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=TIMEOUT)

    def close(self) -> None:
        """Kill the process if it still runs; close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for reader in self.readers:
            reader.join(TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def test_chat_goes_on_after_an_endpoint_error_and_uses_the_fixed_base_url(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    port = closed_port()
    config.write_text(
        f'[model]\nbase_url = "http://127.0.0.1:{port}/v1"\napi_key = "k"\n', encoding="utf-8"
    )
    with ScriptedOpenAIServer() as server:
        server.script(text("hello after the fix"))
        chat = _Chat(tmp_path)
        try:
            chat.send("hi")
            line = chat.wait_for("error: ")
            assert f"cannot reach the model endpoint http://127.0.0.1:{port}" in line
            chat.wait_for("the chat goes on")
            config.write_text(
                f'[model]\nbase_url = "{server.base_url}"\napi_key = "k"\n', encoding="utf-8"
            )
            # The edit is applied by the watcher; until then the old URL answers the same way.
            while True:
                chat.send("hi")
                got = chat.wait_for("bot> ", "error: ")
                if "bot> " in got:
                    break
                assert f"127.0.0.1:{port}" in got
                time.sleep(0.1)  # give the watcher a moment before the next try
            assert got.endswith("bot> hello after the fix")
            assert chat.finish() == 0
        finally:
            chat.close()
        server.assert_consumed()


def test_a_chat_without_tools_says_how_to_get_some(tmp_path: Path) -> None:
    # With a key (a chat asks nothing before the first message); without one it is --offline.
    done = run_cli("chat", cwd=tmp_path, stdin="", env={"OPENAI_API_KEY": "k"})
    assert done.returncode == 0, done.stderr
    assert "note: no tools yet, so the bot can only talk: `--offline` brings the demo's tools" in (
        done.stderr
    )
    with_tools = run_cli("chat", "--offline", cwd=tmp_path, stdin="")
    assert "no tools yet" not in with_tools.stderr
    no_key = run_cli("chat", cwd=tmp_path, stdin="")
    assert "no tools yet" not in no_key.stderr
