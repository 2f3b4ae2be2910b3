"""Plain-English messages for pydantic validation errors in config values."""

from __future__ import annotations

import difflib
from typing import Any

import tomlkit
from pydantic_core import ErrorDetails

from ._settings import BotSettings, McpServerSettings

__all__ = ["describe", "show"]

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


def _fields_at(loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the table that holds the last part of ``loc``."""
    parent = [part for part in loc[:-1] if isinstance(part, str)]
    if parent[:2] == ["tools", "mcp_servers"]:
        return list(McpServerSettings.model_fields)
    if len(parent) == 1 and parent[0] in BotSettings.model_fields:
        annotation: Any = BotSettings.model_fields[parent[0]].annotation
        return list(annotation.model_fields)
    return []


def describe(error: ErrorDetails) -> str:
    """What is wrong, for one pydantic error on a config value (without the key)."""
    kind = error["type"]
    loc = tuple(error["loc"])
    value: object = error.get("input")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    got = f", got {show(value)}"
    if kind == "extra_forbidden":
        name = str(loc[-1])
        fields = _fields_at(loc)
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
