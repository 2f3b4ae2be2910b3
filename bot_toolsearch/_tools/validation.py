"""A model's tool arguments checked (and coerced) against the tool's schema before it runs.

Two checkers, one entry point (`validate_arguments`):

- a ``@tool`` function is checked by the pydantic model of its signature, built once when the
  tool is made; values are coerced in pydantic's lax mode, as ``pydantic.validate_call`` does
  (``"2.5"`` becomes ``2.5`` for a ``float``, a dict becomes a dataclass or model), and an
  argument the function does not take is an error unless it takes ``**kwargs``;
- every other tool (a schema-only `Tool`, a tool folder, an MCP tool, a sub-agent) is checked
  against its JSON Schema with ``jsonschema``, in the draft its ``$schema`` names (Draft
  2020-12 when it names none); values are passed on unchanged.

Both report every problem in one line the model can act on: which argument, what was expected,
what it sent. Two JSON Schema keywords are not enforced, because they run a regular expression
from the catalog over text from the model, and Python's ``re`` can backtrack for exponential
time: ``pattern`` and ``patternProperties`` (and ``additionalProperties`` next to it, whose
meaning depends on it). A schema that cannot be used (not a valid schema, or a ``$ref`` that does
not resolve) is not enforced either: the handler decides, and the problem is logged once per tool.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import pydantic
from jsonschema.protocols import Validator

from .tool import AGENT_PARAMETERS, Agent, Tool

__all__ = ["MAX_PROBLEMS", "validate_arguments"]

log = logging.getLogger("bot_toolsearch")

MAX_PROBLEMS = 5
"""Most problems one error names; the rest are counted."""
_MAX_SHOWN_VALUE = 60

_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def validate_arguments(
    tool: Tool | Agent, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """Check a call's arguments against ``tool``'s schema before its handler runs.

    Args:
        tool: the tool (or sub-agent) the model called.
        arguments: the call's arguments, already parsed as a JSON object.

    Returns:
        ``(arguments, None)`` when they are valid: for a ``@tool`` function the coerced values
        of the arguments the model sent (defaults are left to the function), otherwise a copy
        as sent; or ``({}, problem)``, where ``problem`` says what is wrong, e.g.
        ``"kilos": expected a number, got "lots"``.
    """
    if isinstance(tool, Tool) and tool._signature is not None:
        return _by_signature(tool._signature, arguments)
    checker = _checker(tool)
    if checker is None:
        return dict(arguments), None
    try:
        errors = sorted(checker.iter_errors(dict(arguments)), key=_order)
    except Exception as exc:
        # A reference that does not resolve, or a schema the validator cannot walk.
        _not_enforced(tool, exc)
        return dict(arguments), None
    if not errors:
        return dict(arguments), None
    return {}, _summary([_schema_problem(e) for e in _one_per_value(errors)])


def _by_signature(
    model: type[pydantic.BaseModel], arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    try:
        parsed = model.model_validate(dict(arguments))
    except pydantic.ValidationError as exc:
        allowed = ", ".join(model.model_fields) or "none"
        problems = [_pydantic_problem(e, allowed) for e in exc.errors(include_url=False)]
        return {}, _summary(problems)
    values = {n: parsed.__dict__[n] for n in parsed.model_fields_set if n in parsed.__dict__}
    values.update(parsed.model_extra or {})
    return values, None


def _checker(tool: Tool | Agent) -> Validator | None:
    """The cached JSON Schema checker of ``tool``; None when its schema cannot be used."""
    if isinstance(tool, Agent):
        return _AGENT_CHECKER
    cached = tool._checker
    if cached is None:
        try:
            cached = _build(tool.parameters)
        except jsonschema.exceptions.SchemaError as exc:
            _not_enforced(tool, exc)
            cached = False
        # A benign race: two threads may both build it; either result is the same.
        object.__setattr__(tool, "_checker", cached)
    return cached or None


_classes: dict[type[Validator], type[Validator]] = {}


def _build(schema: Mapping[str, Any]) -> Validator:
    base: type[Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    base.check_schema(dict(schema))
    cls = _classes.get(base)
    if cls is None:
        cls = _classes[base] = _without_regex(base)
    return cls(schema)


def _without_regex(base: type[Validator]) -> type[Validator]:
    """``base`` with the keywords that run a catalog's regex over the model's text turned off."""
    additional = base.VALIDATORS.get("additionalProperties")

    def skip(*_: Any) -> Iterator[jsonschema.ValidationError]:
        return iter(())

    def additional_properties(
        validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterable[jsonschema.ValidationError]:
        if additional is None or "patternProperties" in schema:
            return ()
        return additional(validator, value, instance, schema) or ()

    extended: type[Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        base,
        {
            "pattern": skip,
            "patternProperties": skip,
            "additionalProperties": additional_properties,
        },
    )
    return extended


_AGENT_CHECKER = _build(AGENT_PARAMETERS)

_warned: set[tuple[str, str]] = set()


def _not_enforced(tool: Tool | Agent, exc: Exception) -> None:
    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if (tool.name, reason) in _warned:
        return
    _warned.add((tool.name, reason))
    log.warning(
        "tool %s: its parameter schema cannot be used to check arguments (%s); "
        "its handler gets them unchecked",
        tool.name,
        reason,
    )


def _order(error: jsonschema.ValidationError) -> tuple[list[str], str]:
    return [str(p) for p in error.absolute_path], error.message


_FIRST = {"type": 0, "enum": 1, "const": 1}


def _one_per_value(errors: list[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    """One error per offending value (its type, before its other keywords); every missing or
    unexpected argument still gets its own."""
    best: dict[tuple[str, ...], jsonschema.ValidationError] = {}
    kept: list[jsonschema.ValidationError] = []
    for error in errors:
        if error.validator in ("required", "additionalProperties"):
            kept.append(error)
            continue
        path = tuple(str(p) for p in error.absolute_path)
        rank = _FIRST.get(str(error.validator), 2)
        if path not in best or rank < _FIRST.get(str(best[path].validator), 2):
            best[path] = error
    kept.extend(best.values())
    return sorted(kept, key=_order)


def _field(path: Iterable[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return f'"{text}"' if text else "the arguments"


def _shown(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN_VALUE else text[: _MAX_SHOWN_VALUE - 3] + "..."


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _schema_problem(error: jsonschema.ValidationError) -> str:
    where = _field(error.absolute_path)
    keyword = error.validator
    if keyword == "required":
        names = error.validator_value
        present = error.instance if isinstance(error.instance, dict) else {}
        missing = [n for n in names if n not in present] if isinstance(names, list) else []
        # jsonschema reports each missing name apart; all are named once (see `_summary`).
        fields = ", ".join(_field([*error.absolute_path, n]) for n in missing)
        return f"{fields or where} {'are' if len(missing) > 1 else 'is'} required"
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = sorted(str(k) for k in error.instance if k not in known)
        allowed = ", ".join(sorted(map(str, known))) or "none"
        names = ", ".join(f'"{k}"' for k in extra)
        inside = f"{where}: " if error.absolute_path else ""
        return f"{inside}unexpected argument {names} (allowed: {allowed})"
    if keyword == "type":
        wanted = error.validator_value
        kinds = wanted if isinstance(wanted, list) else [wanted]
        expected = " or ".join(_JSON_TYPES.get(str(k), str(k)) for k in kinds)
        return f"{where}: expected {expected}, got {_kind(error.instance)} {_shown(error.instance)}"
    if keyword in ("enum", "const"):
        value: Any = error.validator_value
        options = value if keyword == "enum" and isinstance(value, list) else [value]
        listed = ", ".join(_shown(o) for o in options)
        return f"{where}: expected one of {listed}, got {_shown(error.instance)}"
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{where}: {message}"


def _pydantic_problem(error: Any, allowed: str) -> str:
    loc = tuple(error["loc"])
    where = _field(loc)
    kind = error["type"]
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        return f"unexpected argument {where} (allowed: {allowed})"
    got = error.get("input")
    message = str(error["msg"])
    if message.startswith("Input should be "):
        message = "expected " + message.removeprefix("Input should be ")
    return f"{where}: {message}, got {_kind(got)} {_shown(got)}"


def _summary(problems: list[str]) -> str:
    unique = list(dict.fromkeys(problems))
    shown = "; ".join(unique[:MAX_PROBLEMS])
    more = len(unique) - MAX_PROBLEMS
    return f"{shown}; and {more} more" if more > 0 else shown
