"""Small things a newcomer trips over (issue 22): a closed pipe, a bad catalog entry, where
the conversation database goes in git."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests._cli_runner import clean_env, run_cli

REPO = Path(__file__).resolve().parents[2]
DEMO_TOOLS = "bot_toolsearch._demo.catalog:demo_tools"


def test_catalog_list_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``catalog list | head``: the reader leaves early; no BrokenPipeError, no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", "catalog", "list", "--tools", DEMO_TOOLS],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    # The reader goes away before the list is written (it takes the process a while to start
    # and merge the catalog), as `head` does once it has its lines.
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    assert "BrokenPipeError" not in stderr
    assert "Traceback" not in stderr
    assert "Exception ignored" not in stderr
    assert proc.returncode == 141  # 128 + SIGPIPE, as a shell reports a writer cut off


def test_catalog_stats_names_the_bad_entry(tmp_path: Path) -> None:
    good = {"type": "function", "function": {"name": "a.b", "parameters": {"type": "object"}}}
    (tmp_path / "list.json").write_text(json.dumps([good, good, 3]), encoding="utf-8")
    done = run_cli("catalog", "stats", "list.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "error: list.json: expected a JSON list of tool schema objects; entry 3 is a number 3\n"
    )
    (tmp_path / "nameless.json").write_text(json.dumps([good, {"foo": 1}]), encoding="utf-8")
    done = run_cli("catalog", "stats", "nameless.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '  entry 2 ({"foo": 1}): no function name\n' in done.stdout


def test_gitignore_ignores_conversation_databases() -> None:
    lines = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "*.db" in lines


def test_config_show_pads_only_to_a_readable_width(tmp_path: Path) -> None:
    """Issue 40: one long value padded every line to its width (228 columns)."""
    (tmp_path / "config.toml").write_text(
        '[skills]\ntool_search_enabled = true\nprefetch_tools = ["' + "x" * 150 + '"]\n',
        encoding="utf-8",
    )
    done = run_cli("config", "show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    short = [line for line in lines if "x" * 150 not in line]
    assert max(len(line) for line in short) < 120
    assert any(len(line) > 150 for line in lines)  # the long value itself is whole


def test_config_set_echoes_what_it_wrote(tmp_path: Path) -> None:
    """A relative folder is written as given; the echo says so, and what it is read as."""
    (tmp_path / "tools").mkdir()
    done = run_cli("config", "set", "tools.dirs", '["tools"]', cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'tools.dirs = ["tools"] (read as ' in done.stdout
    assert 'dirs = ["tools"]' in (tmp_path / "config.toml").read_text(encoding="utf-8")
    plain = run_cli("config", "set", "skills.tool_search_max_results", "7", cwd=tmp_path)
    assert plain.stdout.strip() == "config.toml: set skills.tool_search_max_results = 7"


def test_ask_names_the_config_file_once(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[skills]\ntool_search_enabled = true\n", "utf-8")
    done = run_cli("ask", "What is 2+2?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "in the config config.toml" not in done.stderr
    assert "in the config file config.toml" in done.stderr


def test_config_validate_warns_of_a_deny_pattern_that_matches_no_tool(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[skills]\ntool_search_enabled = true\n[tools]\ndeny = ["githb.delete_*", "end"]\n',
        encoding="utf-8",
    )
    done = run_cli("config", "validate", cwd=tmp_path)
    assert done.returncode == 0
    out = done.stdout + done.stderr
    assert "tools.deny: pattern 'githb.delete_*' matches no tool" in out
    assert "'end' matches no tool" not in out
    strict = run_cli("config", "validate", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
