"""Markup envelopes of text tool calls: ``<tool_call>``, ``<tool/>``, ``<function=…>`` and kin."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .text_calls_json import (
    TextToolCall,
    TextToolCallError,
    call_from_object,
    check_arguments,
    check_id,
    check_name,
    decode_json,
    shape,
    skip_ws,
)

__all__ = ["parse_markup"]

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
    match = _closer(name).match(body, skip_ws(body, pos))
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
        pos = skip_ws(body, pos)
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
            pos = skip_ws(content, pos)
        return (lambda: [call for thunk in thunks for call in thunk()]), end

    def decode() -> list[TextToolCall]:
        try:
            value = decode_json(content)
        except ValueError as exc:
            raise TextToolCallError(f"<tool_call>: not valid JSON ({exc})") from None
        if not isinstance(value, dict) or shape(value) in (None, "tool_calls"):
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
        pos = skip_ws(body, pos)
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
        pos = skip_ws(body, pos)
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


def parse_markup(body: str) -> list[TextToolCall]:
    """The calls in a body of markup envelopes; ``[]`` when loose text makes it a reply."""
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
        pos = skip_ws(body, pos)
    return [call for thunk in thunks for call in thunk()]
