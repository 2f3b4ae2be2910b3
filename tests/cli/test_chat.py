"""``bot-toolsearch chat`` and ``ask`` on the embedded offline model.

Run in-process (`run_cli`) unless the process itself is the point (Ctrl-C, a terminal).
"""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._cli.chat import load_tools
from bot_toolsearch._config.file import NOT_FOUND
from bot_toolsearch.testing import ScriptedOpenAIServer, error, text
from tests._cli_runner import clean_env, run_cli

DEMO_TOOLS = "bot_toolsearch._demo.catalog:demo_tools"
CONFIG = "[skills]\ntool_search_enabled = true\n\n[bot]\nhot_reload = false\n"
TIMEOUT = 120


def run(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, stdin=stdin, env=env)


def one_error_line(done: subprocess.CompletedProcess[str], command: str = "ask") -> str:
    """The single ``error:`` line of a failed run (no traceback); a chat's start-up line and
    the offline model's label may precede it. A chat goes on after an endpoint error (issue
    22): it says so, and ends normally at end of input."""
    assert done.returncode == (0 if command == "chat" else 1), (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    # chat's start-up lines (and the conversation it keeps, issue 15) come before the error.
    lines = [
        line
        for line in done.stderr.splitlines()
        if not line.startswith(
            ("chat: ", "model: ", "note: ", "conversation: ", "the chat goes on")
        )
    ]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    return tmp_path


def test_ask_prints_the_reply_and_exits_0(folder: Path) -> None:
    done = run("ask", "Convert 10 km to miles", "--tools", DEMO_TOOLS, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["10 km is 6.21371 mi."]
    assert "EMBEDDED OFFLINE MODEL" in done.stderr  # labelled, and kept off stdout
    assert "Traceback" not in done.stderr


def test_config_may_follow_the_text_and_defaults_to_cwd(folder: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    explicit = run(
        "ask", "--tools", DEMO_TOOLS, "Convert 10 km to miles", "--config",
        str(folder / "config.toml"), cwd=elsewhere,
    )  # fmt: skip
    assert explicit.returncode == 0, explicit.stderr
    assert "6.21371" in explicit.stdout
    # No ./config.toml: the defaults and the environment, said in one line.
    on_defaults = run("ask", "Convert 10 km to miles", "--tools", DEMO_TOOLS, cwd=elsewhere)
    assert on_defaults.returncode == 0, on_defaults.stderr
    assert "6.21371" in on_defaults.stdout
    notes = [line for line in on_defaults.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: no ./config.toml here: running on the defaults and the environment "
        "(`bot-toolsearch config init` writes one)"
    ]


def test_trace_shows_the_tool_search_round_and_the_loaded_tools_round(folder: Path) -> None:
    done = run("ask", "Convert 10 km to miles", "--trace", "--tools", DEMO_TOOLS, cwd=folder)
    assert done.returncode == 0, done.stderr
    # The trace goes to stderr (after the offline model's label); stdout is the reply alone.
    lines = done.stderr.splitlines()[1:]
    assert lines[0] == "  round 1: sent 3 tools: send_message, end, tool_search"
    assert lines[1] == '    call tool_search({"query":"convert km miles"}) -> answered'
    assert lines[2].startswith('      result: {"loaded":["units.convert_speed"')
    assert len(lines[2]) <= len("      result: ") + 100  # truncated
    round_2 = lines[3]
    assert round_2.startswith("  round 2: sent 8 tools: send_message, end, tool_search, ")
    assert "units.convert_length" in round_2
    assert lines[4].startswith("    call units.convert_length(")
    assert lines[4].endswith("-> ran")
    assert '"result": 6.213712' in lines[5]
    assert done.stdout == "10 km is 6.21371 mi.\n"
    assert done.stdout.count("\n") == 1


def test_without_a_key_ask_is_offline_with_the_demo_tools_and_tool_search(folder: Path) -> None:
    # Issue 29: no key used to mean the offline model without its tools ("Sorry…", exit 0).
    done = run("ask", "Convert 10 km to miles", "--trace", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["10 km is 6.21371 mi."]
    head = done.stderr.splitlines()[0]
    assert head.startswith("model: the EMBEDDED OFFLINE MODEL")
    assert "; tool search on ([skills] tool_search_enabled = true in the config " in head
    assert done.stderr.splitlines()[1] == (
        "  round 1: sent 3 tools: send_message, end, tool_search"
    )
    offline = run("ask", "Convert 10 km to miles", "--offline", cwd=folder)
    assert (offline.returncode, offline.stdout) == (0, done.stdout)


def test_without_tools_the_bot_has_only_the_built_ins(folder: Path) -> None:
    with ScriptedOpenAIServer() as server:
        server.script(text("I have no tools."))
        done = run(
            "ask", "Convert 10 km to miles", "--trace", cwd=folder,
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Nothing is deferred, so tool_search is not even offered.
    assert done.stderr.splitlines()[1] == "  round 1: sent 2 tools: send_message, end"
    assert done.stdout == "I have no tools.\n"


def test_a_long_tool_list_is_shortened_in_the_trace(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[bot]\nhot_reload = false\n", encoding="utf-8")
    done = run("ask", "Convert 10 km to miles", "--trace", "--tools", DEMO_TOOLS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[1]
    assert first.startswith("  round 1: sent 180 tools: send_message, end, ")
    assert first.endswith(", … (+172 more)")


def test_offline_flag_wins_over_a_configured_endpoint(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'{CONFIG}\n[model]\nbase_url = "http://127.0.0.1:{closed_port()}/v1"\napi_key = "k"\n',
        encoding="utf-8",
    )
    done = run("ask", "Convert 10 km to miles", "--offline", "--tools", DEMO_TOOLS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "6.21371" in done.stdout


def test_chat_answers_each_line_and_exits_0_at_eof(folder: Path) -> None:
    lines = "Convert 10 km to miles\n\nWhat is the current local time in Tokyo?\n"
    done = run("chat", "--tools", DEMO_TOOLS, cwd=folder, stdin=lines)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    replies = [part for part in done.stdout.split("you> ") if part.strip()]
    assert len(replies) == 2
    assert replies[0].startswith("bot> 10 km is 6.21371 mi.")
    assert "6.21371" in replies[0]
    assert replies[1].startswith("bot> Here is what I found: timezone: Asia/Tokyo")
    assert done.stdout.endswith("you> \n")  # EOF ends the prompt line


PROBE = """
import sys
from bot_toolsearch import tool

@tool(name="probe.trace_rounds")
def trace_rounds(note: str = "") -> str:
    \"\"\"Trace probe: which rounds of the trace were printed before this tool ran.\"\"\"
    printed = [line.split(":")[0].strip() for line in sys.stderr.getvalue().splitlines()
               if line.startswith("  round ")]
    return "printed before me: " + ", ".join(printed)

TOOLS = [trace_rounds]
"""


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_the_trace_is_printed_on_stderr_as_each_round_ends(folder: Path, command: str) -> None:
    (folder / "probe.py").write_text(PROBE, encoding="utf-8")
    question = "Run the trace probe for rounds"
    args = ("ask", question) if command == "ask" else ("chat",)
    done = run(*args, "--trace", "--tools", "probe.py:TOOLS", cwd=folder, stdin=question + "\n")
    assert done.returncode == 0, done.stderr
    # Round 1 (the search) was on stderr while round 2's tool ran, and round 2 was not yet.
    assert "printed before me: round 1" in done.stdout
    assert "round 2" not in done.stdout.split("printed before me:")[1]
    assert "  round 2: sent 4 tools: " in done.stderr
    assert "call probe.trace_rounds(" in done.stderr
    assert "round " not in done.stdout.replace("rounds", "").split("printed before me:")[0]


def test_missing_config_file(tmp_path: Path) -> None:
    line = one_error_line(run("ask", "hi", "--config", "nope.toml", cwd=tmp_path))
    # A --config named explicitly must exist: a mistyped path is not silently ignored.
    assert line == f"error: nope.toml: {NOT_FOUND}"
    chat = run("chat", "--config", "nope.toml", cwd=tmp_path, stdin="hi\n")
    assert "config file not found" in one_error_line(chat)


def test_invalid_config_names_file_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[skills]\ntool_search_max_results = 'many'\n", encoding="utf-8"
    )
    line = one_error_line(run("ask", "hi", cwd=tmp_path))
    assert "config.toml:2:" in line
    assert "skills.tool_search_max_results" in line


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_unreachable_endpoint(tmp_path: Path, command: str) -> None:
    port = closed_port()
    (tmp_path / "config.toml").write_text(
        f'[model]\nbase_url = "http://127.0.0.1:{port}/v1"\napi_key = "k"\n', encoding="utf-8"
    )
    args = ("ask", "hi") if command == "ask" else ("chat",)
    line = one_error_line(run(*args, cwd=tmp_path, stdin="hi\n"), command)
    assert f"cannot reach the model endpoint http://127.0.0.1:{port}" in line


@pytest.mark.parametrize("command", ["ask", "chat"])
def test_bad_api_key(tmp_path: Path, command: str) -> None:
    with ScriptedOpenAIServer() as server:
        server.script(
            error(
                401,
                "Incorrect API key provided",
                code="invalid_api_key",
                type="invalid_request_error",
            )
        )
        (tmp_path / "config.toml").write_text(
            f'[model]\nbase_url = "{server.base_url}"\napi_key = "sk-wrong"\n', encoding="utf-8"
        )
        args = ("ask", "hi") if command == "ask" else ("chat",)
        line = one_error_line(run(*args, cwd=tmp_path, stdin="hi\n"), command)
        server.assert_consumed()  # one request: a 401 is not retried
    assert "rejected the API key (HTTP 401: Incorrect API key provided)" in line
    assert server.base_url.removesuffix("/v1") in line


def test_chat_reports_other_http_errors_and_goes_on(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        server.script(error(400, "Something about the request"), text("hello again"))
        (tmp_path / "config.toml").write_text(
            f'[model]\nbase_url = "{server.base_url}"\napi_key = "k"\n', encoding="utf-8"
        )
        done = run("chat", cwd=tmp_path, stdin="first\nsecond\n")
        server.assert_consumed()
    assert done.returncode == 0, done.stderr
    assert "answered HTTP 400: Something about the request" in done.stderr
    assert "bot> hello again" in done.stdout
    # ask has no later turn to go on to: the same error is fatal there.
    with ScriptedOpenAIServer() as server:
        server.script(error(400, "Something about the request"))
        (tmp_path / "config.toml").write_text(
            f'[model]\nbase_url = "{server.base_url}"\napi_key = "k"\n', encoding="utf-8"
        )
        assert "HTTP 400" in one_error_line(run("ask", "first", cwd=tmp_path))


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("no_such_module_xyz:tools", "cannot import 'no_such_module_xyz': ModuleNotFoundError"),
        ("bot_toolsearch._demo.catalog:nope", "has no attribute 'nope'"),
        ("bot_toolsearch._demo.run:QUESTIONS", "not a Tool or Agent: str"),
        ("bot_toolsearch._demo.run:INSTRUCTIONS", "expected a sequence of Tool, got str"),
        ("just_a_module", "expected MODULE:ATTR"),
        ("missing/file.py:tools", "no such file: missing/file.py"),
    ],
)
def test_unknown_tools_target(folder: Path, target: str, expected: str) -> None:
    line = one_error_line(run("ask", "hi", "--tools", target, cwd=folder))
    assert expected in line


def test_ctrl_c_at_the_prompt_exits_cleanly(folder: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", "chat", "--tools", DEMO_TOOLS],
        cwd=folder,
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    chunks: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(
        target=lambda: chunks.put(proc.stdout.read(5) if proc.stdout else b"")
    )
    reader.start()
    try:
        assert chunks.get(timeout=TIMEOUT) == b"you> "  # waiting at the prompt
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130  # Ctrl-C at the prompt: docs/cli.md's status for an interrupt
    assert b"Traceback" not in stderr


def test_load_tools_takes_callables_sequences_single_tools_and_files(tmp_path: Path) -> None:
    tools, agents = load_tools(DEMO_TOOLS)
    assert len(tools) >= 150
    assert all(isinstance(t, Tool) for t in tools)
    assert agents == ()
    module = tmp_path / "my_tools.py"
    module.write_text(
        "from bot_toolsearch import tool\n"
        "@tool(name='x.ping')\n"
        "def ping() -> str:\n"
        "    '''Ping.'''\n"
        "    return 'pong'\n"
        "TOOLS = [ping]\n",
        encoding="utf-8",
    )
    from_file, _ = load_tools(f"{module}:TOOLS")
    assert [t.name for t in from_file] == ["x.ping"]
    one, _ = load_tools(f"{module}:ping")
    assert [t.name for t in one] == ["x.ping"]
    module.write_text("raise RuntimeError('broken on import')\n", encoding="utf-8")
    with pytest.raises(ValueError, match="RuntimeError: broken on import"):
        load_tools(f"{module}:TOOLS")


def test_duplicate_tool_names_are_one_line(folder: Path) -> None:
    module = folder / "twice.py"
    module.write_text(
        "from bot_toolsearch import Tool\n"
        "TOOLS = [Tool('x.ping', 'Ping.', None, str), Tool('x.ping', 'Again.', None, str)]\n",
        encoding="utf-8",
    )
    line = one_error_line(run("ask", "hi", "--tools", f"{module}:TOOLS", cwd=folder))
    assert "x.ping" in line


SLOW = """
import asyncio, pathlib, time
from bot_toolsearch import tool

@tool(name="probe.slow_sleep")
def slow_sleep(note: str = "") -> str:
    \"\"\"Slow sleep probe: blocks a worker thread for ten minutes.\"\"\"
    pathlib.Path("started").write_text("yes")
    time.sleep(600)
    return "woke up"

@tool(name="probe.stubborn_sleep")
async def stubborn_sleep(note: str = "") -> str:
    \"\"\"Stubborn sleep probe: ignores the first cancellation.\"\"\"
    pathlib.Path("started").write_text("yes")
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        pathlib.Path("cancelled").write_text("yes")
        await asyncio.sleep(600)
    return "woke up"

TOOLS = [slow_sleep, stubborn_sleep]
"""


def _start_slow_ask(folder: Path, question: str) -> subprocess.Popen[str]:
    (folder / "slow.py").write_text(SLOW, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", "ask", question, "--tools", "slow.py:TOOLS"],
        cwd=folder,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(folder / "started", proc)
    return proc


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        # The tools sleep ten minutes: only a prompt cancellation ends the process in time.
        return proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_during_a_slow_tool_cancels_the_ask_and_exits_130(folder: Path) -> None:
    proc = _start_slow_ask(folder, "Run the slow sleep probe")
    proc.send_signal(signal.SIGINT)
    out, err = _finish(proc)
    assert proc.returncode == 130, err
    assert out == ""  # no reply: the ask did not finish
    assert "stopping the answer (Ctrl-C again quits at once)" in err
    assert "interrupted: the answer was cancelled" in err
    assert "Traceback" not in err


def test_a_second_ctrl_c_exits_at_once(folder: Path) -> None:
    proc = _start_slow_ask(folder, "Run the stubborn sleep probe")
    proc.send_signal(signal.SIGINT)
    _wait_for(folder / "cancelled", proc)  # the tool swallowed the first cancellation
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    _, err = _finish(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err


# -- issue 29: tool search is never silently off ------------------------------------------


def test_chat_offline_without_a_config_says_tool_search_on_and_runs_it(tmp_path: Path) -> None:
    done = run("chat", "--offline", "--trace", cwd=tmp_path, stdin="Convert 10 km to miles\n")
    assert done.returncode == 0, done.stderr
    [banner] = [line for line in done.stderr.splitlines() if line.startswith("chat: ")]
    assert "; tool search on (no config file: the defaults, with tool search on); " in banner
    assert "call tool_search(" in done.stderr
    assert "6.21371" in done.stdout


def test_a_config_that_leaves_tool_search_unset_is_said_at_start(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[skills]\ntool_search_max_results = 3\n\n[bot]\nhot_reload = false\n", encoding="utf-8"
    )
    done = run("ask", "Convert 10 km to miles", "--trace", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    head, first_round = done.stderr.splitlines()[:2]
    assert head.endswith(
        "; tool search off ([skills] tool_search_enabled is not set in the config file config.toml "
        "and defaults to false; set it to true to turn tool search on (or to false to say so))"
    )
    assert "tool_search" not in first_round  # off, as said
    chat = run("chat", cwd=tmp_path, stdin="")
    assert "; tool search off ([skills] tool_search_enabled is not set" in chat.stderr
    assert chat.stderr.count("tool_search_enabled is not set") == 1  # said once


def test_a_reload_made_while_typing_is_announced_before_the_answer_that_uses_it(
    tmp_path: Path,
) -> None:
    """Issue 40: the notice came after the answer whose trace already used the new settings."""
    config = tmp_path / "config.toml"
    config.write_text("[skills]\ntool_search_enabled = true\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", "chat", "--trace", "--tools", DEMO_TOOLS],
        cwd=tmp_path,
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write("Convert 10 km to miles\n")
        proc.stdin.flush()
        while "bot> " not in proc.stdout.readline():  # the first answer is out
            assert proc.poll() is None
        # Edited while the user types the next message: the watcher applies it meanwhile.
        config.write_text(
            "[skills]\ntool_search_enabled = true\ntool_search_max_results = 2\n", "utf-8"
        )
        time.sleep(4)  # the watcher's debounce and settle time, with room for a busy machine
        _, stderr = proc.communicate("Convert 5 km to miles\n", timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = stderr.splitlines()
    notice = next(i for i, line in enumerate(lines) if "reloaded; the next message uses it" in line)
    second_ask = [i for i, line in enumerate(lines) if line.startswith("  round 1:")][1]
    assert notice < second_ask, stderr
