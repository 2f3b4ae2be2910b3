"""``config validate`` checks what the config points at (issue 22): tool folder handlers are
imported, MCP commands resolved, MCP servers started once (unless ``--no-connect``); and a
handler's syntax error costs an ``ask`` one error line, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests._cli_runner import clean_env, run_cli

MCP_SERVER = Path(__file__).parents[1] / "tools" / "data" / "registry" / "mcp_test_server.py"


def folder_tool(root: Path, name: str, handler: str) -> None:
    folder = root / "tools" / "ns" / name
    folder.mkdir(parents=True)
    config = {"description": f"The {name} tool.", "parameters": {"type": "object"}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "handler.py").write_text(handler, encoding="utf-8")


def server_entry(name: str, command: str, *args: str) -> str:
    return (
        f'[[tools.mcp_servers]]\nname = "{name}"\ncommand = {json.dumps(command)}\n'
        f"args = {json.dumps(list(args))}\n"
    )


def test_validate_imports_folder_handlers_and_resolves_commands(tmp_path: Path) -> None:
    folder_tool(tmp_path, "broken", "def execute(:\n    pass\n")
    folder_tool(tmp_path, "noexec", "VALUE = 1\n")
    folder_tool(tmp_path, "fine", "def execute() -> str:\n    return 'ok'\n")
    (tmp_path / "config.toml").write_text(
        '[tools]\ndirs = ["tools"]\n' + server_entry("ghost", "no-such-mcp-server-here"),
        encoding="utf-8",
    )
    for extra in ((), ("--no-connect",)):
        done = run_cli("config", "validate", *extra, cwd=tmp_path)
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert len(lines) == 4, done.stderr
        assert lines[0].startswith("config.toml: tools.dirs: tool 'ns.broken': cannot import")
        assert "SyntaxError" in lines[0]
        assert "line 1" in lines[0]
        assert lines[1].startswith("config.toml: tools.dirs: tool 'ns.noexec': cannot import")
        assert "defines no callable 'execute'" in lines[1]
        assert lines[2] == (
            "config.toml: tools.mcp_servers: server 'ghost': command 'no-such-mcp-server-here' "
            "not found (not on PATH, nor an executable file)"
        )
        assert lines[3] == "error: config.toml: 3 errors"
        assert "OK" not in done.stdout


def test_validate_starts_mcp_servers_unless_no_connect(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        server_entry("quits", sys.executable, "-c", "pass")
        + server_entry("works", sys.executable, str(MCP_SERVER)),
        encoding="utf-8",
    )
    # A server it cannot reach now is what a running bot warns about (and retries): a warning,
    # exit 0, unless --strict.
    done = run_cli("config", "validate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "config.toml: OK (1 warning)\n"
    problems = [line for line in done.stderr.splitlines() if "tools.mcp_servers" in line]
    assert len(problems) == 1, done.stderr
    assert problems[0].startswith("config.toml: warning: tools.mcp_servers: server 'quits': ")
    strict = run_cli("config", "validate", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
    assert strict.stderr.splitlines()[-1] == "error: config.toml: 1 warning (--strict)"
    skipped = run_cli("config", "validate", "--no-connect", cwd=tmp_path)
    assert (skipped.returncode, skipped.stdout) == (0, "config.toml: OK\n")
    config.write_text(server_entry("works", sys.executable, str(MCP_SERVER)), encoding="utf-8")
    ok = run_cli("config", "validate", cwd=tmp_path)
    assert (ok.returncode, ok.stdout) == (0, "config.toml: OK\n"), ok.stderr


def test_validate_help_says_it_connects_by_default() -> None:
    done = run_cli("config", "validate", "--help")
    assert "--no-connect" in done.stdout
    assert "default: start each one and list its tools" in " ".join(done.stdout.split())


def test_a_handler_syntax_error_is_one_error_line_in_ask(tmp_path: Path) -> None:
    folder_tool(tmp_path, "broken", "def execute(:\n    pass\n")
    with ScriptedOpenAIServer() as server:
        server.script(call("ns-_-broken"), text("the tool is broken"))
        (tmp_path / "config.toml").write_text(
            f'[model]\nbase_url = "{server.base_url}"\napi_key = "k"\n'
            '[tools]\ndirs = ["tools"]\n[bot]\nhot_reload = false\n',
            encoding="utf-8",
        )
        done = subprocess.run(
            [sys.executable, "-m", "bot_toolsearch", "ask", "use it"],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        server.assert_consumed()
    assert (done.returncode, done.stdout) == (0, "the tool is broken\n"), done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "ERROR: tool folder handler failed to import: tool 'ns.broken': cannot import"
    )
    assert "SyntaxError" in lines[0]
