"""Recovering tool calls that a model wrote as plain text instead of native tool calls.

The whole text (optionally inside one Markdown code fence) must be one envelope: JSON objects,
``{"tool_calls": [...]}``, ``<tool_call>``, ``<tool .../>``, ``<tool_execution>``,
``<function_calls>`` or ``<function=NAME>``. Anything else is a reply: loose text around an
envelope means the model was talking *about* a call, so it is not one. Only text that is clearly
an envelope but broken raises :class:`TextToolCallError`. Every scan is linear (plain ``str``
searches and regexes without nested quantifiers) and JSON nesting is bounded, so hostile text
can neither hang the parser nor blow the stack.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TEXT_TOOL_CALLS", "TextToolCall", "TextToolCallError", "parse_text_tool_calls"]

MAX_TEXT_TOOL_CALLS = 128
"""More recovered calls than this in one text is treated as malformed, not executed."""
MAX_JSON_DEPTH = 64
_NAME_KEYS = frozenset({"name", "function"})
_ARGS_KEYS = frozenset({"arguments", "parameters"})
_ENVELOPE_START = re.compile(r'\{\s*"(?:name|tool|function|tool_calls|arguments|parameters)"\s*:')
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_WS = re.compile(r"\s*")
# Markup: every quantifier runs over a class disjoint from what follows it, so no backtracking.
_TAG_NAME = re.compile(r"<([A-Za-z_][A-Za-z0-9_:-]*)")
_ATTR = re.compile(
    r"""\s+([A-Za-z_][A-Za-z0-9_:-]*)\s*=\s*"""
    r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s"'<>=/`]+))""",
    re.DOTALL,
)
_TAG_END = re.compile(r"\s*(/?)>")
_EQ_TAG = re.compile(r"<(function|parameter)=([^<>\n]*)>", re.IGNORECASE)
_BACKSLASH_ESCAPE = re.compile(r"""\\(["'\\])""")
_ARGS_ATTRS = ("arguments", "params", "parameters")
_CALL_ATTRS = frozenset({"name", "id", *_ARGS_ATTRS})
_TOP_TAGS = frozenset({"tool_call", "tool", "tool_execution", "function_calls"})
_closers: dict[str, re.Pattern[str]] = {}


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
    value, end = raw_decode(text, _skip_ws(text, 0))
    if _skip_ws(text, end) != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def _skip_ws(text: str, pos: int) -> int:
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


def _shape(obj: dict[str, Any]) -> str | None:
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
    shape = _shape(obj)
    if shape == "tool_calls":
        return _tool_calls_list(obj, where)
    if shape == "tool":
        name = check_name(obj["tool"], where)
        rest = {k: v for k, v in obj.items() if k != "tool"}
        if "arguments" in rest:
            if len(rest) > 1:
                raise TextToolCallError(f"{where}: do not mix 'arguments' with flat fields")
            return [TextToolCall(name, check_arguments(rest["arguments"], where))]
        return [TextToolCall(name, rest)]
    if shape == "openai":
        return [_openai_item(obj, where)]
    if shape == "named":
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


def _parse_json_objects(body: str) -> list[TextToolCall]:
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
        pos = _skip_ws(body, end)
    shapes = [_shape(obj) for obj in objects]
    if all(shape is None for shape in shapes):
        return []  # JSON data, e.g. a reply the user asked to get as JSON
    if "tool_calls" in shapes and len(objects) > 1:
        raise TextToolCallError("a tool_calls object cannot be mixed with other JSON objects")
    calls: list[TextToolCall] = []
    for i, obj in enumerate(objects):
        calls.extend(call_from_object(obj, f"JSON object {i + 1}"))
    return calls


# --- markup envelopes -------------------------------------------------------------------------

_Thunk = Callable[[], list[TextToolCall]]


@dataclass(frozen=True, slots=True)
class _Tag:
    name: str
    attrs: dict[str, str]
    self_closing: bool
    end: int


def _open_tag(body: str, pos: int, allowed: frozenset[str]) -> _Tag | None:
    """The tag at ``pos`` when its (case-insensitive) name is allowed; None otherwise."""
    match = _TAG_NAME.match(body, pos)
    if match is None or match.group(1).lower() not in allowed:
        return None
    name, pos = match.group(1).lower(), match.end()
    attrs: dict[str, str] = {}
    while (attr := _ATTR.match(body, pos)) is not None:
        key = attr.group(1).lower()
        if key in attrs:
            raise TextToolCallError(f"<{name}>: attribute {key!r} is repeated")
        quoted = attr.group(2) if attr.group(2) is not None else attr.group(3)
        attrs[key] = html.unescape(quoted if quoted is not None else attr.group(4))
        pos = attr.end()
    end = _TAG_END.match(body, pos)
    if end is None:
        raise TextToolCallError(f"<{name}>: malformed tag or attribute")
    return _Tag(name, attrs, end.group(1) == "/", end.end())


def _closer(name: str) -> re.Pattern[str]:
    pattern = _closers.get(name)
    if pattern is None:
        pattern = _closers[name] = re.compile(rf"</{name}\s*>", re.IGNORECASE)
    return pattern


def _expect_close(body: str, pos: int, name: str) -> int:
    match = _closer(name).match(body, _skip_ws(body, pos))
    if match is None:
        raise TextToolCallError(f"<{name}> is not closed by </{name}>")
    return match.end()


def _raw_until_close(body: str, pos: int, name: str) -> tuple[str, int]:
    match = _closer(name).search(body, pos)
    if match is None:
        raise TextToolCallError(f"<{name}> is not closed by </{name}>")
    return body[pos : match.start()], match.end()


def _attr_arguments(text: str, where: str) -> dict[str, Any]:
    try:
        return check_arguments(text, where)
    except TextToolCallError:
        # Models often backslash-escape the quotes of JSON inside an attribute.
        unescaped = _BACKSLASH_ESCAPE.sub(r"\1", text)
        if unescaped == text:
            raise
        return check_arguments(unescaped, where)


def _attr_call(body: str, tag: _Tag) -> tuple[_Thunk, int]:
    """``<tool name=… arguments=…/>``, self-closing or with an empty closing tag."""
    where = f"<{tag.name}>"
    end = tag.end if tag.self_closing else _expect_close(body, tag.end, tag.name)
    unknown = set(tag.attrs) - _CALL_ATTRS
    given = [key for key in _ARGS_ATTRS if key in tag.attrs]
    if unknown:
        raise TextToolCallError(f"{where}: unexpected attributes {sorted(unknown)}")
    if len(given) > 1:
        raise TextToolCallError(f"{where}: give only one of {', '.join(_ARGS_ATTRS)}")
    attrs = tag.attrs

    def decode() -> list[TextToolCall]:
        name = check_name(attrs.get("name"), where)
        arguments = _attr_arguments(attrs[given[0]], where) if given else {}
        return [TextToolCall(name, arguments, check_id(attrs.get("id"), where))]

    return decode, end


def _param_value(raw: str, where: str) -> Any:
    """A parameter body: JSON when it decodes, else the text; broken JSON-looking text fails."""
    raw = raw.removeprefix("\n").removesuffix("\n")
    stripped = raw.strip()
    try:
        return decode_json(stripped)
    except ValueError:
        if stripped.startswith(('"', "[", "{")):
            raise TextToolCallError(f"{where}: value looks like JSON but is not") from None
        return raw


def _add_param(params: dict[str, Any], key: str, raw: str, where: str) -> None:
    key = key.strip().strip("\"'")
    if not key:
        raise TextToolCallError(f"{where}: a parameter has no name")
    if key in params:
        raise TextToolCallError(f"{where}: parameter {key!r} is repeated")
    params[key] = _param_value(raw, f"{where} parameter {key!r}")


def _function_block(body: str, match: re.Match[str]) -> tuple[_Thunk, int]:
    """``<function=NAME><parameter=K>v</parameter>…</function>`` (Qwen3-Coder style)."""
    name = check_name(match.group(2).strip().strip("\"'"), "<function=…>")
    where = f"<function={name}>"
    params: dict[str, Any] = {}
    pos = match.end()
    while True:
        pos = _skip_ws(body, pos)
        close = _closer("function").match(body, pos)
        if close is not None:
            break
        param = _EQ_TAG.match(body, pos)
        if param is None or param.group(1).lower() != "parameter":
            raise TextToolCallError(f"{where}: expected <parameter=…> or </function>")
        raw, pos = _raw_until_close(body, param.end(), "parameter")
        _add_param(params, param.group(2), raw, where)
    call = TextToolCall(name, params)
    return (lambda: [call]), close.end()


def _tool_call_block(body: str, tag: _Tag) -> tuple[_Thunk, int]:
    """``<tool_call>{json}</tool_call>`` (Hermes/Qwen), ``<function=…>`` inside, or attributes."""
    if tag.attrs or tag.self_closing:
        return _attr_call(body, tag)
    content, end = _raw_until_close(body, tag.end, "tool_call")
    content = content.strip()
    if content.startswith("<"):
        thunks, pos = [], 0
        while pos < len(content):
            match = _EQ_TAG.match(content, pos)
            if match is None or match.group(1).lower() != "function":
                raise TextToolCallError("<tool_call>: expected JSON or <function=…> inside")
            thunk, pos = _function_block(content, match)
            thunks.append(thunk)
            pos = _skip_ws(content, pos)
        return (lambda: [call for thunk in thunks for call in thunk()]), end

    def decode() -> list[TextToolCall]:
        try:
            value = decode_json(content)
        except ValueError as exc:
            raise TextToolCallError(f"<tool_call>: not valid JSON ({exc})") from None
        if not isinstance(value, dict) or _shape(value) in (None, "tool_calls"):
            raise TextToolCallError("<tool_call>: expected one tool call object")
        return call_from_object(value, "<tool_call>")

    return decode, end


def _container(
    body: str, tag: _Tag, child: str, parse_child: Callable[[str, _Tag], tuple[_Thunk, int]]
) -> tuple[_Thunk, int]:
    """``<tool_execution>`` / ``<function_calls>``: one or more children, then the close."""
    where = f"<{tag.name}>"
    if tag.self_closing:
        raise TextToolCallError(f"{where} holds no calls")
    thunks: list[_Thunk] = []
    pos = tag.end
    while True:
        pos = _skip_ws(body, pos)
        close = _closer(tag.name).match(body, pos)
        if close is not None:
            break
        inner = _open_tag(body, pos, frozenset({child}))
        if inner is None:
            raise TextToolCallError(f"{where}: expected <{child}> or </{tag.name}>")
        thunk, pos = parse_child(body, inner)
        thunks.append(thunk)
    if not thunks:
        raise TextToolCallError(f"{where} holds no calls")
    return (lambda: [call for thunk in thunks for call in thunk()]), close.end()


def _invoke(body: str, tag: _Tag) -> tuple[_Thunk, int]:
    """``<invoke name=…>`` with ``<arguments>{json}</arguments>`` or ``<parameter name=…>``."""
    where = "<invoke>"
    if set(tag.attrs) != {"name"}:
        raise TextToolCallError(f"{where}: expected exactly the attribute name")
    name = check_name(tag.attrs["name"], where)
    if tag.self_closing:
        return (lambda: [TextToolCall(name, {})]), tag.end
    params: dict[str, Any] = {}
    arguments: str | None = None
    pos = tag.end
    allowed = frozenset({"arguments", "parameter"})
    while True:
        pos = _skip_ws(body, pos)
        close = _closer("invoke").match(body, pos)
        if close is not None:
            break
        inner = _open_tag(body, pos, allowed)
        if inner is None or inner.self_closing or arguments is not None:
            raise TextToolCallError(f"{where}: expected one <arguments> or <parameter> blocks")
        raw, pos = _raw_until_close(body, inner.end, inner.name)
        if inner.name == "arguments":
            if params or inner.attrs:
                raise TextToolCallError(f"{where}: do not mix <arguments> and <parameter>")
            arguments = raw
        else:
            if set(inner.attrs) != {"name"}:
                raise TextToolCallError(f"{where}: <parameter> needs exactly a name attribute")
            _add_param(params, inner.attrs["name"], raw, where)

    def decode() -> list[TextToolCall]:
        args = params if arguments is None else check_arguments(arguments.strip(), where)
        return [TextToolCall(name, args)]

    return decode, close.end()


def _function_calls(body: str, tag: _Tag) -> tuple[_Thunk, int]:
    return _container(body, tag, "invoke", _invoke)


def _tool_execution(body: str, tag: _Tag) -> tuple[_Thunk, int]:
    return _container(body, tag, "tool_call", _attr_call)


_TOP_PARSERS: dict[str, Callable[[str, _Tag], tuple[_Thunk, int]]] = {
    "tool_call": _tool_call_block,
    "tool": _attr_call,
    "tool_execution": _tool_execution,
    "function_calls": _function_calls,
}


def _parse_markup(body: str) -> list[TextToolCall]:
    # Structure first, content later: loose text anywhere makes the whole text a reply, even
    # when an earlier block's JSON is broken.
    thunks: list[_Thunk] = []
    pos = 0
    while pos < len(body):
        eq_tag = _EQ_TAG.match(body, pos)
        if eq_tag is not None and eq_tag.group(1).lower() == "function":
            thunk, pos = _function_block(body, eq_tag)
        else:
            tag = _open_tag(body, pos, _TOP_TAGS)
            if tag is None:
                return []
            thunk, pos = _TOP_PARSERS[tag.name](body, tag)
        thunks.append(thunk)
        pos = _skip_ws(body, pos)
    return [call for thunk in thunks for call in thunk()]


def _unfence(text: str) -> str | None:
    """The body of a text that is exactly one Markdown code fence; None when it is not one."""
    fence = text[:3]
    newline = text.find("\n")
    if newline < 0 or "`" in text[3:newline] or not text.endswith(fence) or len(text) < 7:
        return None
    body = text[newline + 1 : -3]
    if fence in body:
        return None  # several fences, or a fence inside: prose with code, not an envelope
    return body.strip()


def _finish(calls: list[TextToolCall]) -> list[TextToolCall]:
    if len(calls) > MAX_TEXT_TOOL_CALLS:
        raise TextToolCallError(f"more than {MAX_TEXT_TOOL_CALLS} tool calls in one text")
    ids = [call.id for call in calls if call.id is not None]
    if len(ids) != len(set(ids)):
        raise TextToolCallError("duplicate tool call ids")
    return calls


def parse_text_tool_calls(text: str) -> list[TextToolCall]:
    """Recover the tool calls a model wrote as text.

    >>> parse_text_tool_calls('{"name": "end", "arguments": {}}')
    [TextToolCall(name='end', arguments={}, id=None)]
    >>> parse_text_tool_calls("Call the end tool when done.")
    []

    Args:
        text: the model's whole text content.

    Returns:
        The calls in order, or ``[]`` for plain prose (a reply, not an error), for JSON that
        is not shaped like a call, and for an envelope with loose text around it.

    Raises:
        TextToolCallError: the text is clearly an envelope but malformed (bad JSON, wrong
            keys, an unclosed tag, a repeated parameter, duplicate ids, too many calls).
    """
    if not isinstance(text, str):
        raise TextToolCallError(f"expected text, got {type(text).__name__}")
    body = text.strip()
    if body.startswith(("```", "~~~")):
        unfenced = _unfence(body)
        if unfenced is None:
            return []
        body = unfenced
    parser: Callable[[str], list[TextToolCall]]
    if body.startswith("{"):
        parser = _parse_json_objects
    elif body.startswith("<"):
        parser = _parse_markup
    else:
        return []
    return _finish(parser(body))
