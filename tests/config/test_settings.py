"""The settings models: defaults, frozen snapshots, strict types, cross-field rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot_toolsearch import BotSettings, ConfigError
from bot_toolsearch._config.settings import McpServerSettings, PluginSettings
from bot_toolsearch.config import EasterEggSettings, SkillsSettings, ToolsSettings


def test_defaults_match_the_issue() -> None:
    settings = BotSettings()
    assert settings.skills.tool_search_enabled is False
    assert settings.skills.tool_search_always_loaded == ("send_message", "end")
    assert settings.skills.tool_search_max_results == 5
    assert settings.skills.tool_search_blind_call == "reject"
    assert settings.skills.prefetch_tools == ()
    assert settings.skills.prefetch_tools_hide is False
    assert settings.tools.dot_delimiter == "-_-"
    assert (settings.tools.allow, settings.tools.deny, settings.tools.dirs) == ((), (), ())
    assert settings.tools.mcp_servers == ()
    assert settings.easter_egg.agent_call_message_enabled == "none"
    assert settings.plugins.enabled == ("tool_search",)
    assert settings.bot.hot_reload is True
    assert settings.model.api == "chat_completions"
    assert settings.generation == 0


def test_settings_built_in_code_read_the_environment_as_the_file_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ENABLED", "true")
    monkeypatch.setenv("TOOL_SEARCH_MAX_RESULTS", "7")
    assert BotSettings().skills.tool_search_enabled is True
    assert BotSettings.model_validate({}).skills.tool_search_max_results == 7
    # A key given in code wins, as a key in the file does; the environment fills the rest.
    given = BotSettings(skills={"tool_search_enabled": False})
    assert given.skills.tool_search_enabled is False
    assert given.skills.tool_search_max_results == 7
    as_model = BotSettings(skills=SkillsSettings(tool_search_max_results=2))
    assert (as_model.skills.tool_search_enabled, as_model.skills.tool_search_max_results) == (
        True,
        2,
    )


def test_a_bad_environment_value_in_code_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOL_SEARCH_ENABLED", "maybe")
    with pytest.raises(ConfigError) as raised:
        BotSettings()
    assert str(raised.value) == (
        "skills.tool_search_enabled (from environment variable TOOL_SEARCH_ENABLED): "
        "expected true or false (1/0, yes/no, on/off), got 'maybe'"
    )
    assert raised.value.key == "skills.tool_search_enabled"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: BotSettings(skils={}),
            "skils: unknown key 'skils' (did you mean 'skills'?)",
            id="table",
        ),
        pytest.param(
            lambda: SkillsSettings(tool_search_enable=True),
            "skills.tool_search_enable: unknown key 'tool_search_enable' "
            "(did you mean 'tool_search_enabled'?)",
            id="key-of-a-table-alone",
        ),
        pytest.param(
            lambda: BotSettings(skills={"tool_search_max_result": 3}),
            "skills.tool_search_max_result: unknown key 'tool_search_max_result' "
            "(did you mean 'tool_search_max_results'?)",
            id="key-in-a-dict",
        ),
        pytest.param(
            lambda: BotSettings.model_validate({"skills": {"tool_search_max_results": 0}}),
            "skills.tool_search_max_results: must be at least 1, got 0 (an integer)",
            id="model-validate",
        ),
    ],
)
def test_every_settings_error_in_code_is_a_config_error_with_did_you_mean(
    build: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        build()
    assert not isinstance(raised.value, ValidationError)
    assert str(raised.value) == message


def test_snapshots_are_frozen() -> None:
    settings = BotSettings()
    with pytest.raises(ValidationError):  # assignment, not a settings value: pydantic's own
        settings.skills.tool_search_max_results = 9
    with pytest.raises(ValidationError):
        settings.generation = 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tool_search_enabled", "maybe"),
        ("tool_search_enabled", 1),
        ("tool_search_max_results", 0),
        ("tool_search_max_results", True),
        ("tool_search_max_results", "7"),
        ("tool_search_blind_call", "sometimes"),
        ("tool_search_always_loaded", [1]),
        ("tool_search_always_loaded", [""]),
    ],
    ids=repr,
)
def test_no_silent_coercion_in_code_either(field: str, value: object) -> None:
    with pytest.raises(ConfigError):
        SkillsSettings.model_validate({field: value})


def test_lists_become_tuples() -> None:
    skills = SkillsSettings.model_validate({"tool_search_always_loaded": ["a", "b"]})
    assert skills.tool_search_always_loaded == ("a", "b")


@pytest.mark.parametrize("delimiter", [".", "a.b", "", "x" * 17, "a b", "-/-"])
def test_bad_delimiters_are_refused(delimiter: str) -> None:
    with pytest.raises(ConfigError):
        ToolsSettings(dot_delimiter=delimiter)


@pytest.mark.parametrize("delimiter", ["-_-", "__", "X9", "-"])
def test_good_delimiters(delimiter: str) -> None:
    assert ToolsSettings(dot_delimiter=delimiter).dot_delimiter == delimiter


@pytest.mark.parametrize(("legacy", "mode"), [(True, "agent"), (False, "none")])
def test_legacy_easter_egg_booleans(legacy: bool, mode: str) -> None:
    assert EasterEggSettings.model_validate({"agent_call_message_enabled": legacy}) == (
        EasterEggSettings(agent_call_message_enabled=mode)  # type: ignore[arg-type]
    )


def test_duplicate_plugins_are_refused() -> None:
    with pytest.raises(ConfigError, match="more than once"):
        PluginSettings(enabled=("tool_search", "tool_search"))


def test_mcp_server_needs_exactly_one_transport() -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        McpServerSettings(name="x")
    with pytest.raises(ConfigError, match="exactly one"):
        McpServerSettings(name="x", command="c", url="http://127.0.0.1:1/mcp")
    with pytest.raises(ConfigError, match="only to a 'command'"):
        McpServerSettings(name="x", url="http://127.0.0.1:1/mcp", args=("a",))


def test_mcp_server_env_is_read_only_and_dumps_plainly() -> None:
    server = McpServerSettings(name="time", command="mcp-server-time", env={"A": "1"})
    with pytest.raises(TypeError):
        server.env["B"] = "2"  # type: ignore[index]
    assert server.model_dump()["env"] == {"A": "1"}


def test_mcp_server_names_are_unique_and_dotless() -> None:
    one = {"name": "a", "command": "x"}
    with pytest.raises(ConfigError, match="more than once"):
        ToolsSettings.model_validate({"mcp_servers": [one, one]})
    with pytest.raises(ConfigError):
        McpServerSettings(name="a.b", command="x")


def test_dirs_are_paths_and_empty_entries_are_refused() -> None:
    assert ToolsSettings.model_validate({"dirs": ["tools"]}).dirs == (Path("tools"),)
    with pytest.raises(ConfigError, match="non-empty folder paths"):
        ToolsSettings.model_validate({"dirs": [""]})


def test_the_proxy_table_reads_native_tool_search_from_a_file(tmp_path: Path) -> None:
    from bot_toolsearch._config.file import load_settings

    path = tmp_path / "config.toml"
    path.write_text('[proxy]\nnative_tool_search = "pass"\n', encoding="utf-8")
    assert load_settings(path).proxy.native_tool_search == "pass"
    assert BotSettings().proxy.native_tool_search == "emulate"
    path.write_text('[proxy]\nnative_tool_search = "forward"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    assert raised.value.key == "proxy.native_tool_search"
    assert "config.toml:2" in str(raised.value)
