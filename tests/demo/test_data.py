"""The demo's data files: shipped inside the package, loaded with importlib.resources."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from bot_toolsearch._demo._data import SAMPLE_GROUPS, load_json
from bot_toolsearch._demo.catalog import demo_tools, is_sample_tool

REPO = Path(__file__).resolve().parents[2]


def test_every_data_file_is_used_and_inside_the_package() -> None:
    data = resources.files("bot_toolsearch._demo") / "data"
    names = sorted(entry.name for entry in data.iterdir() if entry.name.endswith(".json"))
    used = sorted([*(f"samples_{g}.json" for g in SAMPLE_GROUPS), "units.json"])
    assert set(used) <= set(names)
    assert {"places.json", "glossary.json"} <= set(names)
    for name in names:
        assert load_json(name), name


def test_the_sample_files_make_the_sample_tools() -> None:
    specs = [spec for group in SAMPLE_GROUPS for spec in load_json(f"samples_{group}.json")]
    names = [spec["name"] for spec in specs]
    assert len(names) == len(set(names))
    tools = {tool.name: tool for tool in demo_tools()}
    assert len(tools) == 178
    assert all(is_sample_tool(name) and name in tools for name in names)
    first = specs[0]
    assert tools[first["name"]].description == first["description"]


def test_the_wheel_ships_the_whole_package_folder() -> None:
    """Hatch puts every file of the listed package in the wheel, JSON included."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["bot_toolsearch"]
    assert not wheel.get("exclude")
    assert not wheel.get("only-include")
