"""`check_setup` and ``config validate``: setups that validate key by key but do not fit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot_toolsearch._cli.main import main
from bot_toolsearch._runtime.setup_check import check_setup
from bot_toolsearch.config import load_settings


def config(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "tools" / "notes" / "add"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"description": "Add a note."}))
    (folder / "handler.py").write_text("def execute(**kw):\n    return 'ok'\n")
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


BROKEN = """\
[plugins]
enabled = []

[skills]
tool_search_enabled = true
tool_search_always_loaded = ["send_message", "end", "notes.ad"]
prefetch_tools = ["weather.now", "time.now", "Notes.Add"]

[tools]
dirs = ["tools", "missing"]

[[tools.mcp_servers]]
name = "time"
command = "mcp-server-time"
"""


def test_each_problem_is_one_warning_with_a_did_you_mean(tmp_path: Path) -> None:
    path = config(tmp_path, BROKEN)
    warnings = [str(w) for w in check_setup(load_settings(path, env={}))]
    assert warnings == [
        "plugins.enabled: skills.tool_search_enabled is true, but 'tool_search' is not enabled "
        "here, so tool search never runs and every tool is sent on every request",
        f"tools.dirs: folder {tmp_path / 'missing'} does not exist",
        "skills.tool_search_always_loaded: 'notes.ad' matches no tool (did you mean "
        "'notes.add'?); it is ignored (checked: the built-ins and the tools in [tools] dirs)",
        "skills.prefetch_tools: 'weather.now' matches no tool; it is ignored (checked: the "
        "built-ins and the tools in [tools] dirs)",
    ]


def test_a_fitting_setup_and_code_tools_give_no_warning(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        '[skills]\ntool_search_enabled = true\nprefetch_tools = ["notes.add", "clock.now"]\n'
        '[tools]\ndirs = ["tools"]\n',
    )
    settings = load_settings(path, env={})
    assert [w.key for w in check_setup(settings)] == ["skills.prefetch_tools"]
    assert check_setup(settings, tool_names=["clock.now"]) == []


def test_config_validate_prints_the_warnings_and_still_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An MCP server that is there (validate checks its command, issue 22), not started here.
    text = BROKEN.replace('"mcp-server-time"', json.dumps(sys.executable))
    path = config(tmp_path, text)
    assert main(["config", "validate", "--no-connect", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"{path}: OK (4 warnings)"
    lines = err.strip().splitlines()
    assert len(lines) == 4
    assert all(line.startswith(f"{path}: warning: ") for line in lines)
    assert "did you mean 'notes.add'?" in err
