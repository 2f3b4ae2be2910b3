"""``bot_toolsearch.config``: the config-file API as the issue spells it."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot_toolsearch
from bot_toolsearch import config


def test_config_module_names_are_not_the_root_exports() -> None:
    assert {"ConfigReloader", "load_settings", "check_config"} <= set(config.__all__)
    assert not set(config.__all__) & set(bot_toolsearch.__all__)


def test_set_value_edits_one_key_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = "# my bot\n[skills]\ntool_search_enabled = true  # on\ntool_search_max_results = 5\n"
    path.write_text(original, encoding="utf-8")
    config.set_value(path, "skills.tool_search_max_results", 8)
    assert path.read_text(encoding="utf-8") == original.replace("= 5", "= 8")
    assert config.get_value(path, "skills.tool_search_max_results") == 8
    assert config.load_settings(path).skills.tool_search_max_results == 8


def test_check_config_lists_errors_without_raising(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[skills]\ntool_search_max_results = 0\n", encoding="utf-8")
    errors = config.check_config(path)
    assert [e.key for e in errors] == ["skills.tool_search_max_results"]
    with pytest.raises(bot_toolsearch.ConfigError, match="tool_search_max_results"):
        config.load_settings(path)
