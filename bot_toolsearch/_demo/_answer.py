"""The offline planner's short answer built from a tool result."""

from __future__ import annotations

import json
from typing import Any

from ._history import Step

__all__ = ["compose_answer"]

_HIDDEN = frozenset({"sample_data", "note", "tool", "arguments"})
_MAX = 240


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _summary(result: Any) -> str:
    if isinstance(result, dict):
        pairs = [f"{k}: {_short(v)}" for k, v in result.items() if k not in _HIDDEN]
        return "; ".join(pairs[:5]) or "done"
    if isinstance(result, list):
        head = ", ".join(_short(v) for v in result[:5])
        return head + (f" … ({len(result)} in all)" if len(result) > 5 else "")
    return _short(result)


def compose_answer(step: Step, user_text: str) -> str:
    """A one-line answer naming the tool, its result, and whether that result is sample data."""
    raw = step.output or ""
    try:
        result: Any = json.loads(raw)
    except ValueError:
        result = raw
    sample = isinstance(result, dict) and result.get("sample_data") is True
    body = _summary(result).replace("\n", " ")
    body = body if len(body) <= _MAX else body[: _MAX - 1] + "…"
    chinese = any("\u3400" <= c <= "\u9fff" for c in user_text)
    if chinese:
        return f"{step.name} 的结果{'（示例数据）' if sample else ''}：{body}"  # noqa: RUF001
    return f"{step.name}{' (sample data)' if sample else ''}: {body}"
