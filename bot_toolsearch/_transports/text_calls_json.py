"""Text tool calls: shared types and checks, and the JSON envelopes (objects, ``tool_calls``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_JSON_DEPTH",
    "TextToolCall",
    "TextToolCallError",
    "call_from_object",
    "check_arguments",
    "check_depth",
    "check_id",
    "check_name",
    "decode_json",
    "parse_json_objects",
    "raw_decode",
    "shape",
    "skip_ws",
]

MAX_JSON_DEPTH = 64
_NAME_KEYS = frozenset({"name", "function"})
_ARGS_KEYS = frozenset({"arguments", "parameters"})
_ENVELOPE_START = re.compile(r'\{\s*"(?:name|tool|function|tool_calls|arguments|parameters)"\s*:')
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_WS = re.compile(r"\s*")


class TextToolCallError(ValueError):
    """The text is clearly a tool-call envelope, but a malformed one."""


@dataclass(frozen=True, slots=True)
class TextToolCall:
    """One tool call recovered from text."""

    name: str
    """The tool name exactly as the model wrote it (wire or canonical spelling), stripped."""
    arguments: dict[str, Any]
    """The decoded arguments object."""
    id: str | None = None
    """The call id the model gave, if any (``tool_calls`` items and ``id`` attributes)."""


def _no_constants(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


_DECODER = json.JSONDecoder(strict=False, parse_constant=_no_constants)


def check_depth(text: str) -> None:
    """Raise TextToolCallError when JSON-looking text nests deeper than MAX_JSON_DEPTH."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise TextToolCallError(f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
        elif token in "]}":
            depth = max(depth - 1, 0)


def raw_decode(text: str, pos: int) -> tuple[Any, int]:
    """Decode one JSON value at ``pos``; ValueError (never anything else) when it is not JSON."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError as exc:  # defence in depth: check_depth runs first
        raise ValueError("JSON nests too deeply") from exc


def decode_json(text: str) -> Any:
    """Decode a whole string as one JSON value, bounded in depth; ValueError when it is not."""
    check_depth(text)
    value, end = raw_decode(text, skip_ws(text, 0))
    if skip_ws(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def skip_ws(text: str, pos: int) -> int:
    """The position after any whitespace at ``pos``."""
    match = _WS.match(text, pos)
    return match.end() if match is not None else pos


def check_name(name: object, where: str) -> str:
    """A tool name must be a non-blank string; returned stripped."""
    if not isinstance(name, str) or not name.strip():
        raise TextToolCallError(f"{where}: the tool name must be a non-empty string")
    return name.strip()


def check_arguments(value: object, where: str) -> dict[str, Any]:
    """Arguments are an object, or a JSON string of one; a missing or empty value means ``{}``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            value = decode_json(value)
        except ValueError as exc:
            raise TextToolCallError(f"{where}: arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise TextToolCallError(f"{where}: arguments must be a JSON object")
    return value


def check_id(value: object, where: str) -> str | None:
    """An id, when given, is a non-empty string without surrounding spaces."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or value.strip() != value:
        raise TextToolCallError(f"{where}: id must be a non-empty string without spaces around it")
    return value


def _openai_item(obj: dict[str, Any], where: str) -> TextToolCall:
    extra = set(obj) - {"id", "type", "function"}
    if extra:
        raise TextToolCallError(f"{where}: unexpected keys {sorted(extra)}")
    if obj.get("type", "function") != "function":
        raise TextToolCallError(f"{where}: type must be 'function'")
    fn = obj["function"]
    if not isinstance(fn, dict) or not {"name"} <= set(fn) <= {"name", "arguments"}:
        raise TextToolCallError(f"{where}: function must be an object with name and arguments")
    return TextToolCall(
        check_name(fn["name"], where),
        check_arguments(fn.get("arguments"), where),
        check_id(obj.get("id"), where),
    )


def shape(obj: dict[str, Any]) -> str | None:
    """Which envelope an object is shaped like, or None for plain JSON data."""
    keys = set(obj)
    if "tool_calls" in keys:
        return "tool_calls"
    if isinstance(obj.get("tool"), str):
        return "tool"
    if isinstance(obj.get("function"), dict) and keys <= {"id", "type", "function"}:
        return "openai"
    if (
        len(keys) == 2
        and len(keys & _NAME_KEYS) == 1
        and len(keys & _ARGS_KEYS) == 1
        and isinstance(obj[next(iter(keys & _NAME_KEYS))], str)
    ):
        return "named"
    return None


def call_from_object(obj: dict[str, Any], where: str) -> list[TextToolCall]:
    """The calls one envelope-shaped JSON object holds; raises for any other object."""
    kind = shape(obj)
    if kind == "tool_calls":
        return _tool_calls_list(obj, where)
    if kind == "tool":
        name = check_name(obj["tool"], where)
        rest = {k: v for k, v in obj.items() if k != "tool"}
        if "arguments" in rest:
            if len(rest) > 1:
                raise TextToolCallError(f"{where}: do not mix 'arguments' with flat fields")
            return [TextToolCall(name, check_arguments(rest["arguments"], where))]
        return [TextToolCall(name, rest)]
    if kind == "openai":
        return [_openai_item(obj, where)]
    if kind == "named":
        name_key = "name" if "name" in obj else "function"
        args_key = "arguments" if "arguments" in obj else "parameters"
        name = check_name(obj[name_key], where)
        return [TextToolCall(name, check_arguments(obj[args_key], where))]
    raise TextToolCallError(f"{where}: not a tool call object")


def _tool_calls_list(obj: dict[str, Any], where: str) -> list[TextToolCall]:
    if set(obj) != {"tool_calls"}:
        raise TextToolCallError(f"{where}: 'tool_calls' must be the only key")
    items = obj["tool_calls"]
    if not isinstance(items, list) or not items:
        raise TextToolCallError(f"{where}: 'tool_calls' must be a non-empty array")
    calls = []
    for i, item in enumerate(items):
        at = f"{where} tool_calls[{i}]"
        if not isinstance(item, dict):
            raise TextToolCallError(f"{at}: each call must be an object")
        if "function" in item and isinstance(item["function"], dict):
            calls.append(_openai_item(item, at))
            continue
        if not {"name"} <= set(item) <= {"name", "arguments", "id"}:
            raise TextToolCallError(f"{at}: expected the keys name, arguments and optional id")
        calls.append(
            TextToolCall(
                check_name(item["name"], at),
                check_arguments(item.get("arguments"), at),
                check_id(item.get("id"), at),
            )
        )
    return calls


def parse_json_objects(body: str) -> list[TextToolCall]:
    """The calls in a body of one or more JSON objects; ``[]`` when it is data or a reply."""
    try:
        check_depth(body)
    except TextToolCallError:
        if _ENVELOPE_START.match(body):
            raise
        return []
    objects: list[dict[str, Any]] = []
    pos = 0
    while pos < len(body):
        try:
            value, end = raw_decode(body, pos)
        except ValueError as exc:
            if objects and body[pos] != "{":
                return []  # loose text after the objects: a reply
            if objects or _ENVELOPE_START.match(body):
                raise TextToolCallError(f"malformed JSON tool call: {exc}") from None
            return []
        if not isinstance(value, dict):
            return []
        objects.append(value)
        pos = skip_ws(body, end)
    shapes = [shape(obj) for obj in objects]
    if all(kind is None for kind in shapes):
        return []  # JSON data, e.g. a reply the user asked to get as JSON
    if "tool_calls" in shapes and len(objects) > 1:
        raise TextToolCallError("a tool_calls object cannot be mixed with other JSON objects")
    calls: list[TextToolCall] = []
    for i, obj in enumerate(objects):
        calls.extend(call_from_object(obj, f"JSON object {i + 1}"))
    return calls
