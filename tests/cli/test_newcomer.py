"""A newcomer's small stumbles (issue 32): ``/help`` in chat, ``serve --help`` defaults, where
``ask --conversation`` keeps the turn, ``config show`` of the SDK's environment fallbacks,
``config validate`` warnings, and the claims the README and pyproject.toml make about them."""

from __future__ import annotations

import inspect
import re
import sys
import tomllib
from pathlib import Path

from bot_toolsearch._config.reload import ConfigReloader
from tests._cli_runner import run_cli
from tests.cli.test_chat import DEMO_TOOLS, run

REPO = Path(__file__).resolve().parents[2]
MCP_SERVER = REPO / "tests" / "tools" / "data" / "registry" / "mcp_test_server.py"


def test_help_in_chat_lists_the_commands(tmp_path: Path) -> None:
    done = run("chat", "--offline", "--tools", DEMO_TOOLS, cwd=tmp_path, stdin="/help\n")
    assert done.returncode == 0, done.stderr
    assert "unknown command" not in done.stdout
    for command in ("/reset", "/history", "/tools", "/help"):
        assert command in done.stdout.split("you>")[1], done.stdout


def test_serve_help_shows_a_default_only_where_there_is_one() -> None:
    done = run_cli("serve", "--help")
    text = " ".join(done.stdout.split())
    assert "(default: None)" not in text
    options = text[text.index("options:") :]
    timeout = options[options.index("--timeout TIMEOUT") : options.index("--max-body MAX_BODY")]
    assert timeout.count("default") == 1, timeout
    assert "(default: 8787)" in text  # the real defaults are still shown


def test_ask_with_a_conversation_says_where_it_is_kept(tmp_path: Path) -> None:
    done = run("ask", "Convert 10 km to miles", "--offline", "--conversation", "c1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bot.db").exists()
    assert "conversation: c1 (kept in bot.db)" in done.stderr
    assert done.stdout.strip() == "10 km is 6.21371 mi."  # stdout holds only the answer
    alone = run("ask", "Convert 10 km to miles", "--offline", cwd=tmp_path)
    assert "kept in" not in alone.stderr


def test_config_show_gives_the_sdk_fallbacks_redacted_with_their_source(tmp_path: Path) -> None:
    secret = "sk-test-do-not-print-1234"
    env = {"OPENAI_API_KEY": secret, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    done = run_cli("config", "show", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    lines = {line.split(" = ")[0]: line for line in done.stdout.splitlines()}
    assert re.fullmatch(
        r'model\.api_key = "\*+"\s+# env OPENAI_API_KEY \(the SDK\'s fallback\)',
        lines["model.api_key"],
    )
    assert re.fullmatch(
        r'model\.base_url = "http://127\.0\.0\.1:9/v1"\s+# env OPENAI_BASE_URL .*',
        lines["model.base_url"],
    )
    unset = run_cli("config", "show", cwd=tmp_path)
    assert "model.api_key = (not set)" in unset.stdout


def test_config_show_masks_mcp_header_values_written_in_full(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[[tools.mcp_servers]]\nname = "docs"\nurl = "http://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer ${env:DOCS_TOKEN}", X-Key = "literal-secret-99" }\n',
        encoding="utf-8",
    )
    done = run_cli("config", "show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "literal-secret-99" not in done.stdout
    assert 'Authorization = "Bearer ${env:DOCS_TOKEN}"' in done.stdout
    assert 'X-Key = "********"' in done.stdout


def test_config_validate_prints_warnings_exits_0_and_fails_only_when_strict(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text(
        '[skills]\ntool_search_enabled = true\nprefetch_tools = ["time.nwo"]\n'
        f'[[tools.mcp_servers]]\nname = "quits"\ncommand = "{sys.executable}"\n'
        'args = ["-c", "pass"]\n',
        encoding="utf-8",
    )
    done = run_cli("config", "validate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "config.toml: OK (2 warnings)\n"
    warnings = [line for line in done.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 2, done.stderr
    strict = run_cli("config", "validate", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
    assert strict.stderr.splitlines()[-1] == "error: config.toml: 2 warnings (--strict)"
    assert "--strict" in run_cli("config", "validate", "--help").stdout


def test_the_docs_state_the_reload_delay_of_the_watcher() -> None:
    """docs/configuration.md (the README's hot-reload text moved there in issue 40)."""
    debounce = inspect.signature(ConfigReloader).parameters["debounce"].default
    readme = " ".join((REPO / "docs" / "configuration.md").read_text(encoding="utf-8").split())
    assert f"{debounce:g} s after the file's last write" in readme
    assert "a valid edit changes the next `ask()`," not in readme


def test_the_pyproject_comment_on_xdist_says_what_make_test_runs() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    workers = re.search(r"\$\(BIN\)/pytest -n (\S+)", makefile)
    assert workers is not None
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    dev = tomllib.loads(text)["project"]["optional-dependencies"]["dev"]
    assert any(d.startswith("pytest-xdist") for d in dev)
    comment = text[: text.index('"pytest-xdist')].rsplit("\n", 2)[-2]
    assert f"-n {workers.group(1)}" in comment, comment
    assert "-n auto" not in text
