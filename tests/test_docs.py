"""docs/architecture.md names every module of the package under its folder's heading."""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bot_toolsearch"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def documented() -> dict[str, set[str]]:
    """``{folder heading: {module file names in its table}}``."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### `bot_toolsearch/(\w*)/?`", line)
        if heading:
            current = heading.group(1)
            sections[current] = set()
        elif current is not None and (row := re.match(r"\| `(\w+\.py)` \|", line)):
            sections[current].add(row.group(1))
    return sections


def test_every_module_is_named_under_its_folder() -> None:
    sections = documented()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        folder = path.parent.relative_to(PACKAGE).as_posix()
        folder = "" if folder == "." else folder
        if path.name == "__init__.py" and folder:
            continue  # a layer's docstring is the section's introduction
        if path.name not in sections.get(folder, set()):
            missing.append(path.relative_to(REPO).as_posix())
    assert missing == []


def test_no_module_is_named_that_does_not_exist() -> None:
    stale = [
        f"{folder}/{name}"
        for folder, names in documented().items()
        for name in names
        if not (PACKAGE / folder / name).exists()
    ]
    assert stale == []


CONFIGURATION = REPO / "docs" / "configuration.md"
SETTINGS_SOURCE = PACKAGE / "_config" / "settings.py"

CONFIGURATION_INTRO = """\
# Configuration

<!-- Generated from the field docstrings of bot_toolsearch/_config/settings.py by
`.venv/bin/python -m tests.test_docs`; tests/test_docs.py fails when it is stale. -->

Every key is optional, except the few marked *required* inside an optional table
(`[skills.tool_search_embeddings]`, each `[[tools.mcp_servers]]` entry). A key in the file
wins; the environment variable fills a key the file does not set (lists comma-separated); the
default fills the rest. Settings built in code follow the same rule (the table types are in
`bot_toolsearch.config`). Every settings error is a `ConfigError`, in code too. Every key is
hot-reloadable (the next `ask()` sees it) except `[bot] hot_reload` and `[conversations]
store`, read at start. `bot-toolsearch config init` writes a documented `config.toml`;
`config show` prints every value and its source, `config set` edits one key and keeps the
file's comments, `config validate` exits 1 with file:line errors (warnings exit 0, unless
`--strict`).

**On or off: one rule for every door.** With no settings at all (no config file, no
`BotSettings`), tool search is on. Given settings decide with `[skills] tool_search_enabled`,
which defaults to `false`: settings that leave it unset run with tool search off. Every door
(`Bot`, `wrap_openai`, `serve`, `chat`/`ask`, `config validate`) says once at start-up which
mode is in force and why, as a warning when the key is unset. `chat`/`ask` without a key or an
endpoint run exactly as `--offline` (the offline model with its tools).

**Hot reload.** `config.toml` is hot-reloaded: a valid edit changes every `ask()` that starts
once the watcher has reloaded it, 0.2 s after the file's last write (the watcher's debounce),
once the file has then stayed unchanged for half a second (so a file written in several steps
is never live half-written), plus the reload itself; an `ask()` already running keeps the
settings it started with. A broken edit is refused and the last good settings stay.
"""


def field_docs() -> dict[str, dict[str, str]]:
    """``{class name: {field: its docstring}}`` read from the settings module's source."""
    import ast

    docs: dict[str, dict[str, str]] = {}
    for node in ast.parse(SETTINGS_SOURCE.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = docs.setdefault(node.name, {})
        for stmt, after in zip(node.body, [*node.body[1:], None], strict=True):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                text = ""
                if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                    text = " ".join(str(after.value.value).split())
                fields[stmt.target.id] = text
    return docs


def nested_tables(annotation: object) -> tuple[type[Any], bool] | None:
    """``(model, is_array)`` when a field holds a settings table (``X | None``) or an array of
    them (``tuple[X, ...]``); ``None`` for a plain value."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    for arg in typing.get_args(annotation):
        found = nested_tables(arg)
        if found is not None:
            return found[0], found[1] or origin is tuple
    return None


def _rows(prefix: str, model: type[Any], env: dict[tuple[str, str], str]) -> list[str]:
    import json

    docs = field_docs()
    table = prefix.split(".", maxsplit=1)[0]
    out = []
    for key, field in model.model_fields.items():
        if field.is_required():
            shown = "required"
        else:
            default = field.get_default(call_default_factory=True)
            if isinstance(default, tuple):
                default = list(default)
            if isinstance(default, Mapping):
                default = dict(default)
            shown = f"`{json.dumps(default, ensure_ascii=False, default=str)}`"
        var = f"`{env[table, key]}`" if prefix == table and (table, key) in env else ""
        meaning = docs[model.__name__].get(key, "").replace("|", "\\|").replace("``", "`")
        out.append(f"| `{prefix}.{key}` | {shown} | {var} | {meaning} |\n")
    return out


def _doc(model: type[Any]) -> str:
    return " ".join((model.__doc__ or "").split()).replace("``", "`")


HEADER = "\n| key | default | env var | meaning |\n|---|---|---|---|\n"


def render_configuration() -> str:
    """docs/configuration.md: one table per config table, from the settings models, then one
    per nested table (``[skills.tool_search_embeddings]``, ``[[tools.mcp_servers]]``)."""
    from bot_toolsearch import BotSettings
    from bot_toolsearch._config.env import ENV_FALLBACKS

    env = {(table, key): var for var, (table, key, _kind) in ENV_FALLBACKS.items()}
    out = [CONFIGURATION_INTRO]
    for table, info in BotSettings.model_fields.items():
        model = info.annotation
        fields = getattr(model, "model_fields", None)
        if not fields or model is None:
            continue
        out.append(f"\n## `[{table}]`\n\n{_doc(model)}\n")
        out.append(HEADER)
        out += _rows(table, model, env)
        for key, field in fields.items():
            nested = nested_tables(field.annotation)
            if nested is None:
                continue
            sub, array = nested
            name = f"[[{table}.{key}]]" if array else f"[{table}.{key}]"
            how = (
                "An array of tables: one `" + name + "` block per entry."
                if array
                else "A table (or an inline table, `" + key + " = { ... }`)."
            )
            out.append(
                f"\n### `{name}`\n\n`{sub.__name__}` (`bot_toolsearch.config`): {_doc(sub)} {how}\n"
            )
            out.append(HEADER)
            out += _rows(f"{table}.{key}", sub, env)
    return "".join(out)


def test_the_configuration_reference_is_generated_from_the_settings() -> None:
    assert CONFIGURATION.read_text(encoding="utf-8") == render_configuration(), (
        "docs/configuration.md is stale: run `.venv/bin/python -m tests.test_docs`"
    )


def settings_tables() -> dict[str, type[Any]]:
    """``{dotted table: model}`` of every table a user writes, nested ones included."""
    from bot_toolsearch import BotSettings

    tables: dict[str, type[Any]] = {}
    for table, info in BotSettings.model_fields.items():
        model = info.annotation
        if not isinstance(model, type) or not getattr(model, "model_fields", None):
            continue
        tables[table] = model
        for key, field in model.model_fields.items():
            nested = nested_tables(field.annotation)
            if nested is not None:
                tables[f"{table}.{key}"] = nested[0]
    return tables


def test_every_setting_has_a_documented_meaning() -> None:
    docs = field_docs()
    for model in settings_tables().values():
        for key in model.model_fields:
            assert docs[model.__name__].get(key), f"{model.__name__}.{key} has no docstring"


def test_every_key_of_every_table_is_in_the_reference() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    tables = settings_tables()
    assert {"skills.tool_search_embeddings", "tools.mcp_servers"} <= set(tables)
    missing = [
        f"{table}.{key}"
        for table, model in tables.items()
        for key in model.model_fields
        if f"| `{table}.{key}` |" not in page
    ]
    assert missing == []


def test_every_settings_type_the_reference_names_is_exported_from_the_config_door() -> None:
    import bot_toolsearch
    import bot_toolsearch.config

    page = CONFIGURATION.read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Z][A-Za-z]+(?:Settings|Section|Loading))`", page))
    named |= {model.__name__ for model in settings_tables().values()}
    doors = set(bot_toolsearch.config.__all__) | set(bot_toolsearch.__all__)
    assert "EmbeddingsSettings" in named
    assert sorted(named - doors) == []


if __name__ == "__main__":
    CONFIGURATION.write_text(render_configuration(), encoding="utf-8")


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO).as_posix()}: {target}")
    assert broken == []


def test_the_readme_links_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in (REPO / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert missing == []


def test_the_mcp_pages_start_servers_one_way_by_the_venvs_absolute_paths() -> None:
    """docs/mcp.md and docs/tools.md run mcp-server-time the same way (its console script in the
    venv `pip install mcp-server-time` installed into: docs/tools.md's block is run by
    tests/tools/test_mcp_headers.py), and the client snippets start the door by absolute path."""
    mcp = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    tools = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    command = 'command = "/absolute/path/to/.venv/bin/mcp-server-time"'
    assert command in mcp
    assert command in tools
    for text in (mcp, tools):
        assert "uvx" not in text
        assert "-m mcp_server_time" not in text.replace('"', "").replace(",", "")
    assert '"command": "/absolute/path/to/.venv/bin/bot-toolsearch"' in mcp
    assert 'command = "/absolute/path/to/.venv/bin/bot-toolsearch"' in mcp
    assert '"command": "bot-toolsearch"' not in mcp


def test_the_cli_table_names_every_option_of_serve_eval_and_search() -> None:
    """docs/cli.md's table lists each option the parsers define (issue 40: some were missing)."""
    import argparse

    from bot_toolsearch._cli.main import build_parser

    table = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").split("\n\n")[1]
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    for command in ("serve", "eval", "search"):
        (row,) = [
            line for line in table.splitlines() if line.startswith(f"| `bot-toolsearch {command} ")
        ]
        for action in subparsers.choices[command]._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in ("--help", "--tools", "--config"):
                    assert flag in row, (command, flag)
