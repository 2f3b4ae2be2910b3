"""``bot-toolsearch chat`` and ``ask`` as real subprocesses, on the embedded offline model."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._cli.chat import load_tools
from bot_toolsearch._config.env import ENV_FALLBACKS
from bot_toolsearch.testing import ScriptedOpenAIServer, error, text

DEMO_TOOLS = "bot_toolsearch._demo.catalog:demo_tools"
CONFIG = "[skills]\ntool_search_enabled = true\n\n[bot]\nhot_reload = false\n"
TIMEOUT = 120


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without OpenAI endpoint variables or config fallbacks."""
    drop = {"OPENAI_API_KEY", "OPENAI_BASE_URL", *ENV_FALLBACKS}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **(extra or {})}


def run(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", *args],
        cwd=cwd,
        env=clean_env(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def one_error_line(done: subprocess.CompletedProcess[str], command: str = "ask") -> str:
    """The single stderr line of a failed run (no traceback)."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    # chat names its conversation first (issue 15); the error is the one line after it.
    lines = [line for line in done.stderr.splitlines() if not line.startswith("conversation: ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"bot-toolsearch {command}: error: ")
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
    assert done.stdout.strip().splitlines() == [
        "units.convert_length: value: 10; from_unit: km; to_unit: mi; result: 6.213712; "
        "category: length"
    ]
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
    assert "6.213712" in explicit.stdout
    missing_default = run("ask", "hi", cwd=elsewhere)
    assert "config.toml: config file not found" in one_error_line(missing_default)


def test_trace_shows_the_tool_search_round_and_the_loaded_tools_round(folder: Path) -> None:
    done = run("ask", "Convert 10 km to miles", "--trace", "--tools", DEMO_TOOLS, cwd=folder)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
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
    assert lines[-1].startswith("units.convert_length: value: 10")  # the reply comes last


def test_without_tools_the_bot_has_only_the_built_ins(folder: Path) -> None:
    done = run("ask", "Convert 10 km to miles", "--trace", cwd=folder)
    assert done.returncode == 0, done.stderr
    # Nothing is deferred, so tool_search is not even offered.
    assert done.stdout.splitlines()[0] == "  round 1: sent 2 tools: send_message, end"
    assert "units.convert_length" not in done.stdout


def test_a_long_tool_list_is_shortened_in_the_trace(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[bot]\nhot_reload = false\n", encoding="utf-8")
    done = run("ask", "Convert 10 km to miles", "--trace", "--tools", DEMO_TOOLS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
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
    assert "6.213712" in done.stdout


def test_chat_answers_each_line_and_exits_0_at_eof(folder: Path) -> None:
    lines = "Convert 10 km to miles\n\nWhat is the current local time in Tokyo?\n"
    done = run("chat", "--tools", DEMO_TOOLS, cwd=folder, stdin=lines)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    replies = [part for part in done.stdout.split("you> ") if part.strip()]
    assert len(replies) == 2
    assert replies[0].startswith("bot> units.convert_length:")
    assert "6.213712" in replies[0]
    assert replies[1].startswith("bot> time.now: timezone: Asia/Tokyo")
    assert done.stdout.endswith("you> \n")  # EOF ends the prompt line


def test_chat_trace_precedes_each_reply(folder: Path) -> None:
    done = run(
        "chat", "--trace", "--tools", DEMO_TOOLS, cwd=folder, stdin="Convert 10 km to miles\n"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("call tool_search(") < out.index("call units.convert_length(")
    assert out.index("call units.convert_length(") < out.index("bot> units.convert_length")


def test_missing_config_file(tmp_path: Path) -> None:
    line = one_error_line(run("ask", "hi", "--config", "nope.toml", cwd=tmp_path))
    assert line.endswith("nope.toml: config file not found (pass --config PATH)")
    chat = run("chat", "--config", "nope.toml", cwd=tmp_path, stdin="hi\n")
    assert "config file not found" in one_error_line(chat, "chat")


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
        line = one_error_line(run(*args, cwd=tmp_path, stdin="hi\nagain\n"), command)
        server.assert_consumed()  # one request: a 401 is neither retried nor followed by more
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
        ("bot_toolsearch._demo.run:QUESTIONS", "not a Tool: str"),
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
    assert proc.returncode == 0  # leaving a chat with Ctrl-C is normal
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
