"""The demo's unit tables (``data/units.json``): factors per category, and unit spellings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._data import load_json

__all__ = ["ALIASES", "TEMPERATURE_UNITS", "UNIT_FACTORS", "normalise_unit"]

_TABLES: dict[str, Any] = load_json("units.json")

UNIT_FACTORS: Mapping[str, Mapping[str, float]] = _TABLES["factors"]
"""Factor of each unit in the category's base unit (metre, kilogram, litre, ...)."""

ALIASES: Mapping[str, str] = _TABLES["aliases"]
"""Spellings people use, mapped to the table keys (temperature is handled apart)."""

TEMPERATURE_UNITS: tuple[str, ...] = tuple(_TABLES["temperature_units"])
_TEMPERATURE_ALIASES: Mapping[str, str] = _TABLES["temperature_aliases"]


def normalise_unit(unit: str) -> str:
    """The table key for a unit spelling (``"Miles"`` → ``"mi"``); unknown spellings unchanged."""
    key = unit.strip().lower()
    return ALIASES.get(key, _TEMPERATURE_ALIASES.get(key, key))
