"""``bot-toolsearch catalog list`` and `catalog_list`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from bot_toolsearch import Tool
from bot_toolsearch._cli.catalog import add_catalog_list_command, catalog_list
from bot_toolsearch._tools.source import ToolSetSnapshot


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    groups = parser.add_subparsers(dest="command", required=True)
    catalog = groups.add_parser("catalog")
    add_catalog_list_command(catalog.add_subparsers(dest="action", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


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
    assert run(["catalog", "list", "--config", str(config), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0] == {
        "source": "folder:tools/music/search_songs",
        "canonical": "music.search_songs",
        "wire": "music-_-search_songs",
    }
    assert {
        "source": "mcp:time",
        "canonical": "time.convert_time",
        "wire": "time-_-convert_time",
    } in rows

    assert run(["catalog", "list", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["SOURCE", "CANONICAL", "WIRE"]
    assert lines[1].split() == [
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
    assert run(["catalog", "list", "--config", str(config)]) == 1
    assert "config.toml" in capsys.readouterr().err
