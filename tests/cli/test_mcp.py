"""``bot-toolsearch mcp``: its options, one ``error:`` line for a bad start, and code tools
served with tool search on when there is no config file."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests._cli_runner import clean_env, run_cli
from tests.mcp.test_door import names, text

TOOLS = '''
from bot_toolsearch import tool


@tool
def reverse(text: str) -> str:
    """Reverse a piece of text."""
    return text[::-1]


@tool
def vowels(text: str) -> int:
    """Count the vowels of a text."""
    return sum(c in "aeiou" for c in text)


TOOLS = [reverse, vowels]
'''


def test_help_names_the_transports() -> None:
    done = run_cli("mcp", "--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert "--http" in help_text
    assert "streamable HTTP" in help_text
    assert "--tools MODULE:ATTR" in help_text


def test_a_missing_config_is_one_error_line(tmp_path: Path) -> None:
    done = run_cli("mcp", "--config", str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")
    assert "nope.toml" in done.stderr
    assert done.stdout == ""  # stdout is the protocol's


def test_bad_tools_are_one_error_line(tmp_path: Path) -> None:
    done = run_cli("mcp", "--tools", "no_such_module:TOOLS", cwd=tmp_path)
    assert done.returncode == 1
    assert "cannot import 'no_such_module'" in done.stderr
    assert done.stdout == ""


def test_a_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = run_cli("mcp", "--http", "--port", str(port), cwd=tmp_path)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert done.stdout == ""


def test_a_public_host_without_a_key_is_refused(tmp_path: Path) -> None:
    """``--host`` beyond loopback without ``--api-key`` would hand every tool to anyone who
    reaches the port (the SDK's Host/Origin checks are off there): refused at start-up."""
    done = run_cli("mcp", "--http", "--host", "0.0.0.0", "--port", "9", cwd=tmp_path)
    assert done.returncode == 1
    assert "error: --host 0.0.0.0 is not a loopback address" in done.stderr
    assert "--api-key" in done.stderr
    done = run_cli("mcp", "--api-key", "k1", cwd=tmp_path)  # stdio: no HTTP to guard
    assert done.returncode == 1
    assert "keys are for --http" in done.stderr


async def test_code_tools_without_a_config_get_tool_search(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(TOOLS)
    env = clean_env({"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot_toolsearch", "mcp", "--tools", "mytools.py:TOOLS"],
        env=env,
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.list_tools()
            assert names(first) == ["tool_search"]
            found = await session.call_tool("tool_search", {"query": "reverse text"})
            assert json.loads(text(found))["loaded"][0] == "reverse"
            ran = await session.call_tool("reverse", {"text": "door"})
            assert (text(ran), ran.is_error) == ("rood", False)
    # The start-up line says which mode is in force, and why (issue 29).
    (serving,) = [
        line
        for line in (tmp_path / "stderr.txt").read_text().splitlines()
        if line.startswith("mcp: serving")
    ]
    assert serving.endswith("; tool search on (no config: the defaults, with tool search on)")


def test_a_config_that_leaves_tool_search_unset_is_said_at_start_up(tmp_path: Path) -> None:
    # Issue 29: never silently off. Over stdio with no client (stdin closed) the door stops.
    (tmp_path / "config.toml").write_text("[skills]\ntool_search_max_results = 3\n")
    env = clean_env({"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    done = subprocess.run(
        [sys.executable, "-m", "bot_toolsearch", "mcp", "--config", "config.toml"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    (serving,) = [line for line in done.stderr.splitlines() if line.startswith("mcp: serving")]
    assert "tool search off ([skills] tool_search_enabled is not set in the config file" in (
        serving
    )
    assert done.stdout == ""  # stdout is the protocol's
