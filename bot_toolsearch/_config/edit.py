"""Style-preserving, validated, atomic edits of one key in ``config.toml`` (tomlkit)."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AoT, Item, Table

from bot_toolsearch._errors import ConfigError

from .diagnostics import show
from .file import TABLES, load_config, parse_config, read_config_text, suggest
from .settings import BotSettings

__all__ = ["get_value", "set_value", "split_key"]


def split_key(key: str) -> tuple[str, str]:
    """``"skills.tool_search_max_results"`` → ``("skills", "tool_search_max_results")``.

    Raises:
        ConfigError: not a known ``table.key``, with a suggestion when one is close.
    """
    table, dot, name = key.partition(".")
    if not dot or not name or "." in name:
        raise ConfigError(f"{key!r}: expected TABLE.KEY, e.g. skills.tool_search_max_results")
    if table not in TABLES:
        raise ConfigError(f"{key}: unknown table {table!r}{suggest(table, TABLES)}", key=key)
    fields = tuple(type(getattr(BotSettings.model_construct(), table)).model_fields)
    if name not in fields:
        raise ConfigError(f"{key}: unknown key {name!r}{suggest(name, fields)}", key=key)
    return table, name


def get_value(path: str | os.PathLike[str], key: str) -> Any:
    """The effective value of ``key`` (file, else environment, else default).

    Args:
        path: the config file.
        key: ``TABLE.KEY``, e.g. ``"skills.tool_search_max_results"``.

    Raises:
        ConfigError: unknown key, or the file is missing or invalid.
    """
    table, name = split_key(key)
    return getattr(getattr(load_config(path).settings, table), name)


def set_value(path: str | os.PathLike[str], key: str, value: object) -> None:
    """Set one key in a config file, keeping everything else byte-identical.

    The whole new document is validated first; an invalid result is refused and the file is
    left untouched. The write is atomic (temporary file in the same folder, fsync,
    ``os.replace``) and keeps the file's permissions, so a watcher never sees half a file. A
    symlinked file is written through: the link's target changes and the link stays.

    Args:
        path: the config file; it must exist.
        key: ``TABLE.KEY``, e.g. ``"skills.tool_search_max_results"``.
        value: a Python value (tuples are written as arrays) or a tomlkit item.

    Raises:
        ConfigError: unknown key, invalid value (naming line and column), or the file is
            missing, unreadable or not valid TOML.
    """
    path = Path(path)
    table, name = split_key(key)
    text = read_config_text(path)
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(
            f"invalid TOML: {str(exc).split(' at line ')[0]}",
            path=str(path),
            line=exc.line,
            column=exc.col,
        ) from None
    try:
        # A fresh item, even for a tomlkit one: an item parsed elsewhere carries its old
        # whitespace trivia, which can swallow the blank line after it here.
        plain = value.unwrap() if isinstance(value, Item) else _plain(value)
        item = tomlkit.item(plain)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot write {show(value)} as TOML: {exc}", key=key) from None
    section = document.get(table)
    if section is None:
        section = tomlkit.table()
        document[table] = section
    if not isinstance(section, Table | dict):
        raise ConfigError(f"{table}: must be a table to set {key}", path=str(path), key=key)
    _put(section, name, item)
    new_text = document.as_string()
    if "\r\n" in text and "\n" not in text.replace("\r\n", ""):
        # tomlkit writes new lines with LF; keep a CRLF file CRLF throughout.
        new_text = re.sub(r"(?<!\r)\n", "\r\n", new_text)
    # The file's own validity is what is checked: an invalid environment variable is not the
    # edit's fault and is reported when the settings are loaded.
    _, errors = parse_config(new_text, path=path, env={})
    if errors:
        raise errors[0]
    _atomic_write(path, new_text)


def _put(section: Table | dict[str, Any], name: str, item: Item) -> None:
    """Set ``name``; a new key goes right after the table's last key.

    Plain assignment would append it after any comment or blank lines at the end of the
    table, and those belong to whatever follows (``# wire names`` above ``[tools]``).
    """
    if name in section or not isinstance(section, Table):
        section[name] = item
        return
    body = section.value.body
    last = max(
        (
            i
            for i, (key, value) in enumerate(body)
            if key is not None and not isinstance(value, Table | AoT)
        ),
        default=-1,
    )
    # ``_insert_at`` has no public equivalent (tomlkit 0.13 to 0.15 at least); without it, or
    # when the last key ends the table, plain assignment puts the key in the same place.
    insert_at = getattr(section.value, "_insert_at", None)
    if 0 <= last < len(body) - 1 and insert_at is not None:
        insert_at(last + 1, name, item)
    else:
        section[name] = item


def _plain(value: object) -> object:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step, keeping its permission bits.

    A symlink is written through: its target is replaced and the link stays a link.
    """
    path = Path(os.path.realpath(path))
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Make the rename itself durable (not possible on every platform, hence best effort).
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
