"""``units.*`` demo tools: real unit conversions from factor tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot_toolsearch._tools.tool import Tool

from ._unit_tables import TEMPERATURE_UNITS, UNIT_FACTORS, normalise_unit

__all__ = ["UNIT_FACTORS", "UNIT_TOOLS", "convert_units"]


def _category_of(unit: str) -> str:
    if unit in TEMPERATURE_UNITS:
        return "temperature"
    for category, table in UNIT_FACTORS.items():
        if unit in table:
            return category
    raise ValueError(f"unknown unit {unit!r}")


def _temperature(value: float, source: str, target: str) -> float:
    kelvin = {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[source]
    return {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[target]


def convert_units(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    """Convert ``value`` between two units of the same category.

    >>> convert_units(10, "km", "miles")["result"]
    6.213712

    Raises:
        ValueError: an unknown unit, or units of different categories.
    """
    source, target = normalise_unit(from_unit), normalise_unit(to_unit)
    category = _category_of(source)
    if _category_of(target) != category:
        raise ValueError(f"cannot convert {category} unit {from_unit!r} to {to_unit!r}")
    if category == "temperature":
        result = _temperature(float(value), source, target)
    else:
        table = UNIT_FACTORS[category]
        result = float(value) * table[source] / table[target]
    return {
        "value": value,
        "from_unit": source,
        "to_unit": target,
        "result": round(result, 6),
        "category": category,
    }


def _units_of(category: str) -> list[str]:
    return list(TEMPERATURE_UNITS) if category == "temperature" else list(UNIT_FACTORS[category])


def _converter(category: str, noun: str) -> Tool:
    units = _units_of(category)
    parameters = {
        "type": "object",
        "properties": {
            "value": {"type": "number", "description": f"The {noun} to convert."},
            "from_unit": {"type": "string", "enum": units, "description": "Unit of the value."},
            "to_unit": {"type": "string", "enum": units, "description": "Unit to convert into."},
        },
        "required": ["value", "from_unit", "to_unit"],
        "additionalProperties": False,
    }
    handler: Callable[..., dict[str, Any]] = convert_units
    return Tool(
        f"units.convert_{category}",
        f"Convert a {noun} between units ({', '.join(units)}).",
        parameters,
        handler,
    )


def list_units(category: str) -> list[str]:
    """The unit keys of one category."""
    return _units_of(category)


_CATEGORY_NOUNS = {
    "length": "length or distance",
    "mass": "mass or weight",
    "volume": "volume or capacity",
    "speed": "speed",
    "area": "area",
    "data": "data size (bytes, KB, MB, GB)",
    "duration": "duration of time",
    "pressure": "pressure",
    "energy": "energy",
    "temperature": "temperature (Celsius, Fahrenheit, Kelvin)",
}

UNIT_TOOLS: tuple[Tool, ...] = (
    *(_converter(category, noun) for category, noun in _CATEGORY_NOUNS.items()),
    Tool(
        "units.convert",
        "Convert any value between two units, detecting the category (length, mass, volume, "
        "speed, area, data, duration, pressure, energy, temperature).",
        {
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "The quantity to convert."},
                "from_unit": {"type": "string", "description": "Source unit, e.g. km, lb, °F."},
                "to_unit": {"type": "string", "description": "Target unit, e.g. mi, kg, °C."},
            },
            "required": ["value", "from_unit", "to_unit"],
        },
        convert_units,
    ),
    Tool(
        "units.list_units",
        "List the supported units of a measurement category.",
        {
            "type": "object",
            "properties": {"category": {"type": "string", "enum": list(_CATEGORY_NOUNS)}},
            "required": ["category"],
        },
        list_units,
    ),
)
