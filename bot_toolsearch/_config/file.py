"""Load and validate ``config.toml`` into a `BotSettings`, or raise a precise `ConfigError`.

Where a value comes from: a key present in the file wins; the environment fills keys the file
does not set (lists comma-separated, an empty value counts as unset; each variable's first use
is logged once); the built-in default fills the rest. Validation is strict: a wrong type, a
value out of range, an unknown key or table, or an unknown plugin is an error naming the file,
the key, the line and column, and the value.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import ParseError

from bot_toolsearch._errors import ConfigError

from .diagnostics import KeyLocator, describe, show
from .env import ENV_FALLBACKS, apply_env, env_error
from .settings import BotSettings

__all__ = [
    "ENV_FALLBACKS",
    "NOT_FOUND",
    "PLUGIN_GROUP",
    "TABLES",
    "LoadedConfig",
    "available_plugins",
    "check_config",
    "decode_config",
    "load_config",
    "load_settings",
    "parse_config",
    "read_config_text",
    "suggest",
]

NOT_FOUND = "config file not found (`bot-toolsearch config init` writes one)"
"""The message for a missing config file: what is wrong and the command that fixes it."""


PLUGIN_GROUP = "bot_toolsearch.plugins"
TABLES = (
    "model",
    "plugins",
    "skills",
    "tools",
    "easter_egg",
    "bot",
    "conversations",
    "proxy",
)

Source = str
"""``default``, ``file`` or ``env NAME``."""


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config and where each effective value came from."""

    settings: BotSettings
    """The snapshot (``generation`` 0; the reloader stamps its own)."""
    sources: Mapping[str, Source]
    """Dotted key (``skills.tool_search_max_results``) → ``default``, ``file`` or ``env NAME``."""
    path: Path | None
    """The file it was read from."""


def available_plugins() -> tuple[str, ...]:
    """Names registered in the ``bot_toolsearch.plugins`` entry-point group, sorted."""
    return tuple(sorted({ep.name for ep in entry_points(group=PLUGIN_GROUP)}))


def load_settings(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> BotSettings:
    """Read and validate a ``config.toml``.

    Args:
        path: the config file.
        env: environment for the fallbacks; ``os.environ`` when omitted.

    Returns:
        The settings snapshot, with ``generation`` 0.

    Raises:
        ConfigError: the file is missing, unreadable, not TOML, or holds an invalid value
            (the first problem; `check_config` lists them all).
    """
    return load_config(path, env=env).settings


def load_config(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> LoadedConfig:
    """Like `load_settings`, also returning where each value came from."""
    path = Path(path)
    loaded, errors = parse_config(read_config_text(path), path=path, env=env)
    if loaded is None:
        raise errors[0]
    return loaded


def check_config(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> list[ConfigError]:
    """Every problem in a config file and the environment fallbacks; empty when it is valid."""
    path = Path(path)
    try:
        text = read_config_text(path)
    except ConfigError as err:
        return [err]
    return parse_config(text, path=path, env=env)[1]


def read_config_text(path: Path) -> str:
    """The file's text, or a `ConfigError` saying why it cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(NOT_FOUND, path=str(path)) from None
    except IsADirectoryError:
        raise ConfigError("config path is a directory, not a file", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file: {exc.strerror}", path=str(path)) from None
    return decode_config(data, path)


def decode_config(data: bytes, path: Path | None) -> str:
    """UTF-8 text of a config file's bytes, or a `ConfigError` pointing at the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        where = str(path) if path is not None else None
        raise ConfigError(
            "config file is not valid UTF-8", path=where, line=line, column=column
        ) from None


def parse_config(
    text: str, *, path: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[LoadedConfig | None, list[ConfigError]]:
    """Validate config text; returns the loaded config (``None`` on errors) and every error.

    Args:
        text: the TOML text.
        path: the file it came from, for messages and for resolving relative ``[tools] dirs``.
        env: environment for the fallbacks; ``os.environ`` when omitted, ``{}`` for none.
    """
    where = str(path) if path is not None else None
    try:
        data: dict[str, Any] = tomlkit.parse(text).unwrap()
    except ParseError as exc:
        reason = str(exc).split(" at line ")[0]
        return None, [
            ConfigError(f"invalid TOML: {reason}", path=where, line=exc.line, column=exc.col)
        ]
    report = _Reporter(KeyLocator(text), where)
    errors: list[ConfigError] = []
    for name, value in list(data.items()):
        if name not in TABLES:
            errors.append(report.at((name,), _unknown(name, TABLES), value, of_key=True))
            del data[name]
        elif not isinstance(value, dict):
            errors.append(
                report.at((name,), f"must be a table ([{name}]), got {show(value)}", value)
            )
            del data[name]

    env_vars = apply_env(data, os.environ if env is None else env, errors)
    enabled = data.get("plugins", {}).get("enabled")
    known = available_plugins()
    listed = ", ".join(known) or "(none installed)"
    for name in enabled if isinstance(enabled, list) else ():
        if isinstance(name, str) and name and name not in known:
            message = f"unknown plugin {name!r}{suggest(name, known)}; available plugins: {listed}"
            errors.append(report.at(("plugins", "enabled"), message, name))
    _resolve_dirs(data, path)
    try:
        # The raw validator: the environment is already applied (from ``env``), and its
        # ValidationError carries the locations turned into file:line errors below.
        settings = BotSettings.__pydantic_validator__.validate_python(data)
    except ValidationError as exc:
        for item in exc.errors(include_url=False):
            loc = tuple(item["loc"])
            var = env_vars.get((str(loc[0]), str(loc[1]))) if len(loc) >= 2 else None
            value = item.get("input")
            if var is not None:
                errors.append(env_error(_dotted(loc), var, describe(item, BotSettings), value))
            else:
                of_key = item["type"] == "extra_forbidden"
                errors.append(report.at(loc, describe(item, BotSettings), value, of_key=of_key))
    if errors:
        # File order reads best; errors from the environment have no line and come last.
        errors.sort(key=lambda e: (e.line is None, e.line or 0, e.column or 0))
        return None, errors

    sources: dict[str, Source] = {f"{t}.{k}": f"env {var}" for (t, k), var in env_vars.items()}
    for table in TABLES:
        for key in type(getattr(settings, table)).model_fields:
            dotted = f"{table}.{key}"
            sources.setdefault(dotted, "file" if key in data.get(table, {}) else "default")
    return LoadedConfig(settings=settings, sources=sources, path=path), []


class _Reporter:
    """Builds `ConfigError`s that point into one file."""

    def __init__(self, locator: KeyLocator, where: str | None) -> None:
        self._locator = locator
        self._where = where

    def at(
        self, loc: tuple[str | int, ...], message: str, value: object, *, of_key: bool = False
    ) -> ConfigError:
        key = _dotted(loc)
        position = self._locator.find(loc, of_key=of_key)
        line, column = position if position else (None, None)
        return ConfigError(
            f"{key}: {message}", path=self._where, key=key, line=line, column=column, value=value
        )


def _dotted(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def suggest(name: str, choices: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown(name: str, choices: tuple[str, ...]) -> str:
    hint = suggest(name, choices)
    return f"unknown table {name!r}{hint or '; known tables: ' + ', '.join(choices)}"


def _resolve_dirs(data: dict[str, Any], path: Path | None) -> None:
    """Make ``[tools] dirs`` absolute: relative entries are relative to the config's folder."""
    dirs = data.get("tools", {}).get("dirs")
    if not isinstance(dirs, list):
        return
    base = path.resolve().parent if path is not None else Path.cwd()
    data["tools"]["dirs"] = [
        str(base / Path(item).expanduser()) if isinstance(item, str) and item else item
        for item in dirs
    ]
