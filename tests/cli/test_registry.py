"""``bot-toolsearch catalog list`` and `catalog_list`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._cli.catalog import catalog_list
from bot_toolsearch._tools.source import ToolSetSnapshot
from tests._cli_runner import run_cli


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    done = run_cli(*argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


def test_catalog_list_gives_source_canonical_and_wire() -> None:
    snap = ToolSetSnapshot.build(
        [
            (Tool("end", "", None, print), "code"),
            (Tool("music.search_songs", "", None, print), "folder:tools/music/search_songs"),
        ]
    )
    assert catalog_list(snap, dot_delimiter="__") == [
        ("code", "end", "end"),
        ("folder:tools/music/search_songs", "music.search_songs", "music__search_songs"),
    ]


def test_catalog_list_command_merges_folders_and_mcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tools" / "music" / "search_songs"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"description": "Find songs."}))
    (folder / "handler.py").write_text("raise SystemExit('must not be imported')\n")
    config = tmp_path / "config.toml"
    config.write_text(
        '[tools]\ndirs = ["tools"]\ndot_delimiter = "-_-"\n\n'
        '[[tools.mcp_servers]]\nname = "time"\n'
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n',
        encoding="utf-8",
    )
    assert run(["catalog", "list", "--config", str(config), "--json"], capsys) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["source"] for r in rows[:2]] == ["built-in", "built-in"]
    assert rows[2] == {
        "source": "folder:tools/music/search_songs",
        "canonical": "music.search_songs",
        "wire": "music-_-search_songs",
    }
    assert {
        "source": "mcp:time",
        "canonical": "time.convert_time",
        "wire": "time-_-convert_time",
    } in rows

    assert run(["catalog", "list", "--config", str(config)], capsys) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["SOURCE", "CANONICAL", "WIRE"]
    assert lines[3].split() == [
        "folder:tools/music/search_songs",
        "music.search_songs",
        "music-_-search_songs",
    ]
    assert lines[-1] == f"{len(rows)} tools"


def test_catalog_list_command_reports_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[tools\n", encoding="utf-8")
    assert run(["catalog", "list", "--config", str(config)], capsys) == 1
    assert "config.toml" in capsys.readouterr().err


def test_catalog_list_shows_code_tools_and_the_built_ins(tmp_path: Path) -> None:
    tools = "bot_toolsearch._demo.catalog:demo_tools"
    done = run_cli("catalog", "list", "--tools", tools, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows[:3] == [
        {"source": "built-in", "canonical": "send_message", "wire": "send_message"},
        {"source": "built-in", "canonical": "end", "wire": "end"},
        {"source": "code", "canonical": "time.now", "wire": "time-_-now"},
    ]
    table = run_cli("catalog", "list", cwd=tmp_path)
    assert table.stdout.splitlines()[-1] == "2 tools"


def test_an_unavailable_mcp_server_fails_catalog_list_with_one_message(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[[tools.mcp_servers]]\nname = "gone"\ncommand = "/nonexistent/mcp-server"\n',
        encoding="utf-8",
    )
    done = run_cli("catalog", "list", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == "2 tools"  # what is reachable is still listed
    errors = done.stderr.splitlines()
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(
        "error: MCP server unavailable, tools missing from the list: 'gone'"
    )
