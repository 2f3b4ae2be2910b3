"""Tool schemas: the function-tool envelope, and JSON Schema derived from a typed signature."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import pydantic

__all__ = ["function_schema", "schema_from_signature", "signature_model"]


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions function tool schema around ``parameters`` (used as given)."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _describe(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions from a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    summary_lines: list[str] = []
    arg_docs: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for raw in doc.splitlines():
        line = raw.strip()
        if line in {"Args:", "Arguments:", "Parameters:"}:
            section = "args"
            continue
        if line.endswith(":") and line[:-1] in {"Returns", "Raises", "Yields", "Examples"}:
            section = "other"
            continue
        if section is None:
            summary_lines.append(line)
        elif section == "args" and line:
            match = re.match(r"^(\w+)\s*(?:\([^)]*\)\s*)?:\s*(.*)$", line)
            if match and raw.startswith((" ", "\t")) and match.group(1) in _params(fn):
                current = match.group(1)
                arg_docs[current] = match.group(2)
            elif current:
                arg_docs[current] = f"{arg_docs[current]} {line}".strip()
    summary = " ".join(" ".join(summary_lines).split())
    return summary, arg_docs


def _params(fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(fn).parameters


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def signature_model(fn: Callable[..., Any]) -> tuple[str, dict[str, Any], type[pydantic.BaseModel]]:
    """Description, JSON Schema parameters and the arguments model of a typed signature.

    The model validates (and coerces, in pydantic's lax mode, as ``pydantic.validate_call``
    does) a call's arguments; it forbids unknown arguments unless the function takes
    ``**kwargs``. The schema is the one the model reads, without ``additionalProperties``.
    """
    summary, arg_docs = _describe(fn)
    hints = inspect.get_annotations(fn, eval_str=True)
    fields: dict[str, Any] = {}
    extra: Literal["forbid", "allow"] = "forbid"
    for pname, param in _params(fn).items():
        if param.kind is param.VAR_KEYWORD:
            extra = "allow"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is param.empty else param.default
        fields[pname] = (annotation, pydantic.Field(default, description=arg_docs.get(pname)))
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{fn.__name__}_arguments", __config__=pydantic.ConfigDict(extra=extra), **fields
    )
    schema = _strip_titles(model.model_json_schema())
    # The schema the model reads stays as it was before arguments were validated.
    schema.pop("additionalProperties", None)
    schema.setdefault("properties", {})
    return summary, schema, model


def schema_from_signature(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """Description and JSON Schema parameters derived from a typed function signature."""
    summary, schema, _model = signature_model(fn)
    return summary, schema
