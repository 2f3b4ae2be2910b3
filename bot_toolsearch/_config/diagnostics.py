"""Config diagnostics: where each key of a TOML text is defined (so an error can name its line
and column), and plain-English messages for pydantic validation errors in config values.

tomlkit keeps formatting but no positions, so this scans the text line by line: table headers,
array-of-tables headers (counted, so ``[[tools.mcp_servers]]`` number 2 is index 1) and
``key = value`` lines, skipping multi-line strings. It is a best effort for error messages only;
a key it cannot place falls back to its table, and then to no position at all.
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Sequence
from typing import Any

import tomlkit
from pydantic import BaseModel
from pydantic_core import ErrorDetails

__all__ = ["KeyLocator", "describe", "show"]

_PART = r'(?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)'
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_ARRAY_HEADER = re.compile(rf"^\s*\[\[\s*({_DOTTED})\s*\]\]\s*(?:#.*)?$")
_HEADER = re.compile(rf"^\s*\[\s*({_DOTTED})\s*\]\s*(?:#.*)?$")
_KEY = re.compile(rf"^\s*({_DOTTED})\s*=\s*")
_SPLIT = re.compile(_PART)

Position = tuple[int, int, int]
"""1-based line, column of the key, column of the value."""


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in _SPLIT.findall(dotted))


class KeyLocator:
    """Positions of the keys and tables defined in one TOML text."""

    def __init__(self, text: str) -> None:
        self._where: dict[tuple[str | int, ...], Position] = {}
        counts: dict[tuple[str, ...], int] = {}
        table: tuple[str | int, ...] = ()
        in_string: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if in_string is not None:
                if in_string in line:
                    in_string = None
                continue
            if match := _ARRAY_HEADER.match(line):
                name = _parts(match.group(1))
                counts[name] = counts.get(name, -1) + 1
                table = (*name, counts[name])
                self._where.setdefault(table, (number, match.start(1) + 1, match.start(1) + 1))
                continue
            if match := _HEADER.match(line):
                table = _parts(match.group(1))
                self._where.setdefault(table, (number, match.start(1) + 1, match.start(1) + 1))
                continue
            if match := _KEY.match(line):
                key = (*table, *_parts(match.group(1)))
                self._where.setdefault(key, (number, match.start(1) + 1, match.end() + 1))
                rest = line[match.end() :]
                for quote in ('"""', "'''"):
                    if rest.startswith(quote) and rest.count(quote) == 1:
                        in_string = quote

    def find(self, path: Sequence[str | int], *, of_key: bool = False) -> tuple[int, int] | None:
        """Line and column where ``path`` (or the nearest enclosing table) is defined.

        Args:
            path: the key path, e.g. ``("tools", "mcp_servers", 0, "command")``.
            of_key: point at the key itself instead of its value.

        Returns:
            ``(line, column)``, both 1-based, or ``None`` when nothing on the path is found.
        """
        key = tuple(path)
        while key:
            if key in self._where:
                line, key_col, value_col = self._where[key]
                return line, key_col if of_key else value_col
            key = key[:-1]
        return None


_TOML_TYPES = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    tuple: "an array",
    dict: "a table",
}

_EXPECTED = {
    "bool_type": "expected true or false",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "tuple_type": "expected an array",
    "list_type": "expected an array",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "mapping_type": "expected a table",
    "path_type": "expected a string (a folder path)",
}

_PATTERNS = {
    "dot_delimiter": "must be 1-16 characters from A-Z a-z 0-9 _ - (no dots or spaces)",
    "name": "must be 1-64 characters from A-Z a-z 0-9 _ - (no dots: it prefixes tool names)",
    "url": "must start with http:// or https://",
}


def show(value: object) -> str:
    """A value as it would be written in TOML, with its type: ``"maybe" (a string)``."""
    kind = next((name for t, name in _TOML_TYPES.items() if isinstance(value, t)), None)
    try:
        text = tomlkit.item(list(value) if isinstance(value, tuple) else value).as_string()
    except Exception:  # not representable in TOML (e.g. a date): fall back to repr
        text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} ({kind})" if kind else text


def _fields_at(loc: tuple[str | int, ...], root: type[BaseModel] | None) -> list[str]:
    """Field names of the table that holds the last part of ``loc``, below model ``root``."""
    model = root
    for part in loc[:-1]:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field is not None else None
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model class an annotation holds (``Table``, ``tuple[Table, ...]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def describe(error: ErrorDetails, root: type[BaseModel] | None = None) -> str:
    """What is wrong, for one pydantic error on a config value (without the key).

    Args:
        error: one of a ``ValidationError``'s errors.
        root: the model that was validated, whose keys an unknown key is compared with.
    """
    kind = error["type"]
    loc = tuple(error["loc"])
    value: object = error.get("input")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    got = f", got {show(value)}"
    if kind == "extra_forbidden":
        name = str(loc[-1])
        fields = _fields_at(loc, root)
        close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(fields)}"
        return f"unknown key {name!r}{hint}"
    if kind == "missing":
        return "is required"
    if kind in _EXPECTED:
        return _EXPECTED[kind] + got
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}{got}"
    if kind == "greater_than":
        return f"must be greater than {ctx['gt']}{got}"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}{got}"
    if kind == "string_pattern_mismatch":
        field = next((str(p) for p in reversed(loc) if isinstance(p, str)), "")
        return _PATTERNS.get(field, f"must match {ctx.get('pattern')}") + got
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return f"{error['msg']}{got}"
