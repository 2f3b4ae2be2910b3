"""Short constructors for the JSON Schema fragments of the sample-data tool specs."""

from __future__ import annotations

from typing import Any

__all__ = ["SampleSpec", "arr", "boolean", "enum", "integer", "number", "string"]

SampleSpec = tuple[str, str, dict[str, Any], tuple[str, ...], dict[str, Any]]
"""``(name, description, properties, required, sample result fields)``."""


def string(description: str) -> dict[str, Any]:
    """A string property."""
    return {"type": "string", "description": description}


def number(description: str) -> dict[str, Any]:
    """A number property."""
    return {"type": "number", "description": description}


def integer(description: str, minimum: int | None = None) -> dict[str, Any]:
    """An integer property."""
    schema: dict[str, Any] = {"type": "integer", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


def boolean(description: str) -> dict[str, Any]:
    """A boolean property."""
    return {"type": "boolean", "description": description}


def enum(description: str, *values: str) -> dict[str, Any]:
    """A string property restricted to ``values``."""
    return {"type": "string", "enum": list(values), "description": description}


def arr(description: str, items: dict[str, Any]) -> dict[str, Any]:
    """An array property."""
    return {"type": "array", "items": items, "description": description}
