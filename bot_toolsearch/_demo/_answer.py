"""The offline planner's short answer built from a tool result, worded as a model would.

A conversion reads "10 km is 6.213712 mi.", a computed number "The result is 25.6667.", a
record its fields in plain words; results marked ``sample_data`` say so. Tool names stay out of
the answer (a model tells the user what it found, not which function it called).
"""

from __future__ import annotations

import json
from typing import Any

from ._history import Step

__all__ = ["compose_answer"]

_HIDDEN = frozenset({"sample_data", "note", "tool", "arguments"})
_MAX = 240
_FIELDS = 5


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"


def _short(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{_words(k)} {_short(v)}" for k, v in list(value.items())[:_FIELDS])
    if isinstance(value, list):
        if not value:
            return "none"  # "alerts: none", not "alerts: ."
        head = "; ".join(_short(v) for v in value[:_FIELDS])
        return head + (f"; … ({len(value)} in all)" if len(value) > _FIELDS else "")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _words(key: str) -> str:
    return key.replace("_", " ")


def _english(result: Any, sample: bool) -> str:
    note = " (sample data)" if sample else ""
    if isinstance(result, dict):
        shown = {k: v for k, v in result.items() if k not in _HIDDEN}
        if {"value", "from_unit", "to_unit", "result"} <= shown.keys():
            value, result_ = _short(shown["value"]), _short(shown["result"])
            return f"{value} {shown['from_unit']} is {result_} {shown['to_unit']}{note}."
        if set(shown) == {"result"}:
            return f"The result is {_short(shown['result'])}{note}."
        fields = "; ".join(f"{_words(k)}: {_short(v)}" for k, v in list(shown.items())[:_FIELDS])
        return f"Here is what I found{note}: {fields or 'done'}."
    if isinstance(result, int | float) and not isinstance(result, bool):
        return f"The result is {_number(result)}{note}."
    if isinstance(result, list):
        return f"Here is what I found{note}: {_short(result) or 'nothing'}."
    return f"{_short(result)}{note}"


def _chinese(result: Any, sample: bool) -> str:
    note = "（示例数据）" if sample else ""  # noqa: RUF001 (Chinese punctuation)
    if isinstance(result, dict):
        shown = {k: v for k, v in result.items() if k not in _HIDDEN}
        fields = "；".join(f"{_words(k)}：{_short(v)}" for k, v in list(shown.items())[:_FIELDS])  # noqa: RUF001
        return f"查到了{note}：{fields or '完成'}。"  # noqa: RUF001
    return f"结果{note}：{_short(result)}。"  # noqa: RUF001


def compose_answer(step: Step, user_text: str) -> str:
    """A one-line answer from the tool's result, saying when that result is sample data."""
    raw = step.output or ""
    try:
        result: Any = json.loads(raw)
    except ValueError:
        result = raw
    sample = isinstance(result, dict) and result.get("sample_data") is True
    chinese = any("\u3400" <= c <= "\u9fff" for c in user_text)
    body = (_chinese if chinese else _english)(result, sample).replace("\n", " ")
    return body if len(body) <= _MAX else body[: _MAX - 1] + "…"
