"""Known cities for the demo: names (English and Chinese), IANA time zone, coordinates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._data import load_json

__all__ = ["CITIES", "City", "find_city"]


@dataclass(frozen=True, slots=True)
class City:
    """One known city."""

    name: str
    """English name."""
    timezone: str
    """IANA time zone."""
    latitude: float
    """Degrees north."""
    longitude: float
    """Degrees east."""


_TABLE: list[dict[str, Any]] = load_json("places.json")
"""``data/places.json``: name, time zone, latitude, longitude and other spellings."""

CITIES: Mapping[str, City] = {
    alias.casefold(): City(row["name"], row["timezone"], row["latitude"], row["longitude"])
    for row in _TABLE
    for alias in (row["name"], *row["aliases"])
}
"""Every spelling (case-folded) → city."""


def find_city(name: str) -> City | None:
    """The city called ``name`` (any known spelling, case-insensitive), or ``None``."""
    return CITIES.get(name.strip().casefold())
