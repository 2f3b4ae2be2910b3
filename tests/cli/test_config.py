"""``bot-toolsearch config ...``, run in-process (`run_cli`) against real files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot_toolsearch._cli.config import example_config
from bot_toolsearch._config.file import NOT_FOUND
from tests._cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]

ORIGINAL = "# mine\n[skills]\ntool_search_enabled = true  # on\n\n[tools]\ndot_delimiter = '__'\n"


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=env)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "config.toml").write_text(ORIGINAL, encoding="utf-8")
    return tmp_path


def test_show_lists_every_value_with_its_source(folder: Path) -> None:
    result = run("config", "show", cwd=folder, env={"TOOL_SEARCH_MAX_RESULTS": "9"})
    assert result.returncode == 0, result.stderr
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines()}
    assert lines["skills.tool_search_enabled"].endswith("# file")
    assert "= true" in lines["skills.tool_search_enabled"]
    assert lines["skills.tool_search_max_results"].endswith("# env TOOL_SEARCH_MAX_RESULTS")
    assert "= 9" in lines["skills.tool_search_max_results"]
    assert lines["model.max_rounds"].endswith("# default")
    assert '= "__"' in lines["tools.dot_delimiter"]
    assert len(lines) == _key_count()  # every key of every table
    assert "environment" not in result.stderr  # an env fallback is supported: no warning


def test_show_and_get_without_a_file_say_tool_search_is_on(tmp_path: Path) -> None:
    """No file: every command runs with tool search on, and ``show``/``get`` say so (one
    rule, `load_cli_config`); the environment still decides when it sets the key."""
    shown = run("config", "show", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = {line.split(" = ")[0]: line for line in shown.stdout.splitlines()}
    assert "= true" in lines["skills.tool_search_enabled"]
    assert lines["skills.tool_search_enabled"].endswith(
        "# no config file: the defaults, with tool search on"
    )
    assert run("config", "get", "skills.tool_search_enabled", cwd=tmp_path).stdout == "true\n"
    env = {"TOOL_SEARCH_ENABLED": "false"}
    got = run("config", "get", "skills.tool_search_enabled", cwd=tmp_path, env=env)
    assert got.stdout == "false\n"
    shown = run("config", "show", cwd=tmp_path, env=env)
    line = next(x for x in shown.stdout.splitlines() if x.startswith("skills.tool_search_enabled"))
    assert line.endswith("# env TOOL_SEARCH_ENABLED")
    assert "= false" in line


def test_show_masks_the_api_key(folder: Path) -> None:
    (folder / "config.toml").write_text('[model]\napi_key = "sk-secret"\n', encoding="utf-8")
    result = run("config", "show", cwd=folder)
    assert "sk-secret" not in result.stdout
    assert 'model.api_key = "********"' in result.stdout


def test_get_prints_toml(folder: Path) -> None:
    assert run("config", "get", "skills.tool_search_enabled", cwd=folder).stdout == "true\n"
    result = run("config", "get", "skills.tool_search_always_loaded", cwd=folder)
    assert result.stdout == '["send_message", "end"]\n'


def test_get_unset_and_unknown_keys(folder: Path) -> None:
    result = run("config", "get", "model.base_url", cwd=folder)
    assert (result.returncode, result.stdout) == (1, "")
    assert "model.base_url is not set" in result.stderr
    result = run("config", "get", "skills.tool_search_enabeld", cwd=folder)
    assert result.returncode == 1
    assert "did you mean 'tool_search_enabled'?" in result.stderr


@pytest.mark.parametrize(
    ("value", "shown", "written"),
    [
        ("8", "8", "tool_search_max_results = 8"),
        ('["a", "b"]', '["a", "b"]', 'tool_search_always_loaded = ["a", "b"]'),
        ("load", '"load"', 'tool_search_blind_call = "load"'),
        ('"load"', '"load"', 'tool_search_blind_call = "load"'),
    ],
)
def test_set_parses_toml_or_takes_a_bare_word(
    folder: Path, value: str, shown: str, written: str
) -> None:
    key = "skills." + written.split(" = ", maxsplit=1)[0]
    result = run("config", "set", key, value, cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"config.toml: set {key} = {shown}\n"
    text = (folder / "config.toml").read_text(encoding="utf-8")
    assert written in text
    assert text.startswith("# mine\n[skills]\ntool_search_enabled = true  # on\n")
    assert text.endswith("\n\n[tools]\ndot_delimiter = '__'\n")


def test_set_refuses_an_invalid_value_without_touching_the_file(folder: Path) -> None:
    result = run("config", "set", "skills.tool_search_max_results", "0", cwd=folder)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "config.toml:4:27: skills.tool_search_max_results: must be at least 1" in result.stderr
    assert "Traceback" not in result.stderr
    assert (folder / "config.toml").read_text(encoding="utf-8") == ORIGINAL


def test_a_value_with_a_newline_cannot_smuggle_a_second_key(folder: Path) -> None:
    result = run("config", "set", "model.name", "x\n[bot]\nhot_reload = false", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert run("config", "get", "bot.hot_reload", cwd=folder).stdout == "true\n"


def test_config_option_before_or_after_the_action(folder: Path) -> None:
    other = folder / "other.toml"
    other.write_text("[model]\nmax_rounds = 3\n", encoding="utf-8")
    after = run("config", "get", "model.max_rounds", "--config", str(other), cwd=folder)
    before = run("config", "--config", str(other), "get", "model.max_rounds", cwd=folder)
    assert after.stdout == before.stdout == "3\n"
    assert run("config", "set", "--config", "other.toml", "model.max_rounds", "4", cwd=folder)
    assert "max_rounds = 4" in other.read_text(encoding="utf-8")


def test_without_a_file_show_and_get_use_the_defaults_and_validate_fails(tmp_path: Path) -> None:
    show = run("config", "show", cwd=tmp_path, env={"TOOL_SEARCH_MAX_RESULTS": "9"})
    assert show.returncode == 0, show.stderr
    assert "skills.tool_search_max_results = 9" in show.stdout
    assert "model.max_rounds = 16" in show.stdout
    notes = [line for line in show.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: no ./config.toml here: running on the defaults and the environment "
        "(`bot-toolsearch config init` writes one)"
    ]
    got = run("config", "get", "model.name", cwd=tmp_path)
    assert (got.returncode, got.stdout) == (0, '"gpt-4o-mini"\n')
    validate = run("config", "validate", cwd=tmp_path)
    assert validate.returncode == 1
    assert validate.stderr == f"error: config.toml: {NOT_FOUND}\n"
    named = run("config", "show", "--config", "nope.toml", cwd=tmp_path)
    assert (named.returncode, named.stderr) == (1, f"error: nope.toml: {NOT_FOUND}\n")
    assert not (tmp_path / "config.toml").exists()


def test_set_creates_a_missing_file_and_leaves_none_on_a_bad_value(tmp_path: Path) -> None:
    bad = run("config", "set", "skills.tool_search_max_results", "0", cwd=tmp_path)
    assert bad.returncode == 1
    assert "must be at least 1" in bad.stderr
    assert not (tmp_path / "config.toml").exists()
    made = run("config", "set", "skills.tool_search_enabled", "true", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "config.toml: created with skills.tool_search_enabled = true\n"
    text = (tmp_path / "config.toml").read_text(encoding="utf-8")
    assert text == "[skills]\ntool_search_enabled = true\n"


def test_init_writes_the_documented_example_once(tmp_path: Path) -> None:
    done = run("config", "init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "config.toml").read_text(encoding="utf-8")
    assert written == (REPO / "config.example.toml").read_text(encoding="utf-8")
    assert run("config", "validate", cwd=tmp_path).returncode == 0
    (tmp_path / "config.toml").write_text("# mine\n", encoding="utf-8")
    again = run("config", "init", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr == "error: config.toml already exists; keeping it (--force overwrites it)\n"
    assert (tmp_path / "config.toml").read_text(encoding="utf-8") == "# mine\n"
    forced = run("config", "init", "--force", "--config", "other.toml", cwd=tmp_path)
    assert forced.returncode == 0
    assert (tmp_path / "other.toml").read_text(encoding="utf-8") == written


def test_the_package_ships_the_repository_example() -> None:
    # bot_toolsearch/config.example.toml is the copy in the wheel; the repository's root file is
    # the one people read and edit. After editing it: cp config.example.toml bot_toolsearch/
    assert example_config() == (REPO / "config.example.toml").read_text(encoding="utf-8")


def test_validate(folder: Path) -> None:
    ok = run("config", "validate", cwd=folder)
    assert (ok.returncode, ok.stdout) == (0, "config.toml: OK\n")
    bad = folder / "bad.toml"
    bad.write_text('[skills]\ntool_search_enabled = "maybe"\nmax_results = 0\n', encoding="utf-8")
    result = run("config", "validate", str(bad), cwd=folder)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:2:23: skills.tool_search_enabled: expected true or false")
    assert lines[1].startswith(f"{bad}:3:1: skills.max_results: unknown key 'max_results'")
    assert lines[-1] == f"error: {bad}: 2 errors"


def test_validate_reports_a_bad_environment_variable(folder: Path) -> None:
    result = run("config", "validate", cwd=folder, env={"TOOLS_DOT_DELIMITER": "."})
    assert result.returncode == 0  # the file sets dot_delimiter, so the env is not used
    result = run("config", "validate", cwd=folder, env={"TOOL_SEARCH_MAX_RESULTS": "many"})
    assert result.returncode == 1
    assert "from environment variable TOOL_SEARCH_MAX_RESULTS" in result.stderr


def test_usage_errors(tmp_path: Path) -> None:
    assert run(cwd=tmp_path).returncode == 2
    missing_action = run("config", cwd=tmp_path)
    assert missing_action.returncode == 2
    assert "Traceback" not in missing_action.stderr
    assert missing_action.stderr.splitlines()[-1].startswith("error: bot-toolsearch config: ")


def _key_count() -> int:
    """How many keys the settings model has, over every table ``config show`` lists."""
    from bot_toolsearch import BotSettings
    from bot_toolsearch._config.file import TABLES

    return sum(len(type(getattr(BotSettings(), t)).model_fields) for t in TABLES)


def test_set_in_an_empty_folder_keeps_tool_search_on(tmp_path: Path) -> None:
    # Issue 29: the new file used to turn tool search off (the key's default) with no word.
    made = run("config", "set", "model.name", "gpt-4.1", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (
        "config.toml: created with skills.tool_search_enabled = true (tool search on, as "
        'without a file) and model.name = "gpt-4.1"\n'
    )
    text = (tmp_path / "config.toml").read_text(encoding="utf-8")
    assert text == '[skills]\ntool_search_enabled = true\n\n[model]\nname = "gpt-4.1"\n'
    again = run("config", "set", "model.name", "gpt-4o", cwd=tmp_path)
    assert again.stdout == 'config.toml: set model.name = "gpt-4o"\n'


def test_validate_warns_when_tool_search_enabled_is_not_set(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[skills]\ntool_search_max_results = 3\n")
    done = run("config", "validate", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "config.toml: OK (1 warning)\n")
    assert done.stderr.startswith(
        "config.toml: warning: skills.tool_search_enabled: not set, so tool search is off"
    )
