"""``units.*`` demo tools: real unit conversions from factor tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot_toolsearch._tools import Tool

__all__ = ["UNIT_FACTORS", "UNIT_TOOLS", "convert_units"]

# Factor of each unit in the category's base unit (metre, kilogram, litre, ...).
UNIT_FACTORS: Mapping[str, Mapping[str, float]] = {
    "length": {
        "mm": 0.001,
        "cm": 0.01,
        "m": 1.0,
        "km": 1000.0,
        "in": 0.0254,
        "ft": 0.3048,
        "yd": 0.9144,
        "mi": 1609.344,
        "nmi": 1852.0,
    },
    "mass": {
        "mg": 1e-6,
        "g": 0.001,
        "kg": 1.0,
        "t": 1000.0,
        "oz": 0.028349523125,
        "lb": 0.45359237,
        "jin": 0.5,
    },
    "volume": {
        "ml": 0.001,
        "l": 1.0,
        "m3": 1000.0,
        "tsp": 0.00492892159375,
        "tbsp": 0.01478676478125,
        "cup": 0.2365882365,
        "pt": 0.473176473,
        "qt": 0.946352946,
        "gal": 3.785411784,
    },
    "speed": {"m/s": 1.0, "km/h": 1 / 3.6, "mph": 0.44704, "kn": 1852 / 3600, "ft/s": 0.3048},
    "area": {
        "m2": 1.0,
        "km2": 1e6,
        "cm2": 1e-4,
        "ha": 1e4,
        "acre": 4046.8564224,
        "ft2": 0.09290304,
        "mi2": 2589988.110336,
    },
    "data": {
        "b": 1.0,
        "kb": 1e3,
        "mb": 1e6,
        "gb": 1e9,
        "tb": 1e12,
        "kib": 1024.0,
        "mib": 1024.0**2,
        "gib": 1024.0**3,
        "tib": 1024.0**4,
    },
    "duration": {
        "ms": 0.001,
        "s": 1.0,
        "min": 60.0,
        "h": 3600.0,
        "day": 86400.0,
        "week": 604800.0,
        "year": 31557600.0,
    },
    "pressure": {
        "pa": 1.0,
        "kpa": 1e3,
        "bar": 1e5,
        "atm": 101325.0,
        "psi": 6894.757293168,
        "mmhg": 133.322387415,
    },
    "energy": {
        "j": 1.0,
        "kj": 1e3,
        "cal": 4.184,
        "kcal": 4184.0,
        "wh": 3600.0,
        "kwh": 3.6e6,
        "btu": 1055.05585262,
    },
}

# Spellings people use, mapped to the table keys (temperature is handled apart).
ALIASES: Mapping[str, str] = {
    "meter": "m",
    "meters": "m",
    "metre": "m",
    "metres": "m",
    "kilometer": "km",
    "kilometers": "km",
    "kilometre": "km",
    "centimeter": "cm",
    "centimeters": "cm",
    "millimeter": "mm",
    "inch": "in",
    "inches": "in",
    "foot": "ft",
    "feet": "ft",
    "yard": "yd",
    "yards": "yd",
    "mile": "mi",
    "miles": "mi",
    "gram": "g",
    "grams": "g",
    "kilogram": "kg",
    "kilograms": "kg",
    "kilo": "kg",
    "kilos": "kg",
    "pound": "lb",
    "pounds": "lb",
    "lbs": "lb",
    "ounce": "oz",
    "ounces": "oz",
    "tonne": "t",
    "ton": "t",
    "liter": "l",
    "liters": "l",
    "litre": "l",
    "litres": "l",
    "milliliter": "ml",
    "gallon": "gal",
    "gallons": "gal",
    "cups": "cup",
    "kph": "km/h",
    "kmh": "km/h",
    "knot": "kn",
    "knots": "kn",
    "acres": "acre",
    "hectare": "ha",
    "hectares": "ha",
    "byte": "b",
    "bytes": "b",
    "kilobyte": "kb",
    "megabyte": "mb",
    "megabytes": "mb",
    "gigabyte": "gb",
    "gigabytes": "gb",
    "terabyte": "tb",
    "second": "s",
    "seconds": "s",
    "minute": "min",
    "minutes": "min",
    "hour": "h",
    "hours": "h",
    "days": "day",
    "weeks": "week",
    "years": "year",
    "calorie": "cal",
    "calories": "cal",
    "kilocalorie": "kcal",
    "kilocalories": "kcal",
    "joule": "j",
    "joules": "j",
    "公里": "km",
    "千米": "km",
    "米": "m",
    "厘米": "cm",
    "英里": "mi",
    "公斤": "kg",
    "千克": "kg",
    "斤": "jin",
    "克": "g",
    "磅": "lb",
    "升": "l",
    "毫升": "ml",
}
TEMPERATURE_UNITS = ("c", "f", "k")
_TEMPERATURE_ALIASES = {
    "celsius": "c",
    "°c": "c",
    "摄氏度": "c",
    "fahrenheit": "f",
    "°f": "f",
    "华氏度": "f",
    "kelvin": "k",
}


def normalise_unit(unit: str) -> str:
    """The table key for a unit spelling (``"Miles"`` → ``"mi"``); unknown spellings unchanged."""
    key = unit.strip().lower()
    return ALIASES.get(key, _TEMPERATURE_ALIASES.get(key, key))


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
