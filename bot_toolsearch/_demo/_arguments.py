"""How the offline demo model reads a tool's arguments from a message, by the tool's JSON Schema.

Quoted text, numbers, dates, clock times, units, time zones, cities and codes are pulled from
the message and handed out to the parameters that fit them; the planner calls a tool only when
few of its required arguments had to be guessed.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._places import CITIES, find_city
from ._reading import CLOCK, DATE, EXPRESSION, QUOTED, content_words
from ._unit_tables import ALIASES, TEMPERATURE_UNITS, UNIT_FACTORS, normalise_unit

__all__ = ["SPECIFIC_GUESS", "extract_arguments", "read_arguments"]

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")
_IANA = re.compile(
    r"\b(?:Africa|America|Asia|Atlantic|Australia|Europe|Pacific|UTC)(?:/[A-Za-z_]+)*"
)
_TICKER = re.compile(r"\b[A-Z]{2,5}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# Parameters naming one specific thing (an id, a flight number, an address): read as a code.
_IDENTIFIER = re.compile(r"(?:^|_)(?:id|number|code|email|url|phone|address)$")
# Free-text parameters take the message's words; a parameter whose description mentions a date
# is still free text when its name says so (``query``, ``note``).
_FREE_TEXT = re.compile(r"query|text|message|body|subject|title|content|note|keyword|topic|q$")
SPECIFIC_GUESS = 4
"""What `read_arguments` counts for one guessed specific parameter: at least this much means
the tool cannot be called without making something up."""
# Parameter names that `_string_for` reads as a place, and as a time.
_PLACE_PARAMS = frozenset({"city", "origin", "destination", "region", "near", "location"})
_TIME_PARAMS = frozenset({"time", "start", "moment"})
# Days named relative to today, in English and Chinese.
_RELATIVE_DAYS = re.compile(
    r"\b(?:day after tomorrow|today|tomorrow|yesterday)\b|今天|明天|后天|昨天"
)
_DAY_OFFSETS = {
    "today": 0,
    "tomorrow": 1,
    "day after tomorrow": 2,
    "yesterday": -1,
    "今天": 0,
    "明天": 1,
    "后天": 2,
    "昨天": -1,
}
# A code such as a flight number or an id: letters and digits in one word (LH400, evt_1001).
_CODE = re.compile(r"\b[A-Za-z][A-Za-z_-]*\d[\w-]*\b")
# Unit spellings that are also ordinary words count only right after a number.
_AMBIGUOUS_UNITS = frozenset(
    {
        "in",
        "min",
        "day",
        "cup",
        "pt",
        "t",
        "s",
        "m",
        "b",
        "h",
        "l",
        "g",
        "j",
        "k",
        "c",
        "f",
        "kn",
        "ha",
        "year",
        "week",
        "qt",
    }
)
_KNOWN_UNITS = frozenset(u for table in UNIT_FACTORS.values() for u in table) | set(
    TEMPERATURE_UNITS
)


def _positions(pattern: re.Pattern[str], text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in pattern.finditer(text)]


# A place the demo's table does not know, as people write one: "in Bergen", "for Le Havre".
_NAMED_PLACE = re.compile(r"\b(?:in|for|at|near)\s+([A-Z][a-z]+(?:[ -][A-Z][a-z]+)?)")


def _cities(text: str) -> list[str]:
    found: list[tuple[int, str]] = []
    folded = text.casefold()
    for alias, city in CITIES.items():
        ascii_alias = alias.isascii()
        pattern = rf"(?<![a-z]){re.escape(alias)}(?![a-z])" if ascii_alias else re.escape(alias)
        found += [(m.start(), city.name) for m in re.finditer(pattern, folded)]
    known = {start for start, _ in found}
    found += [
        (m.start(1), m.group(1)) for m in _NAMED_PLACE.finditer(text) if m.start(1) not in known
    ]
    # Longer aliases first at one position ("new york" beats "york"); then order of appearance.
    return list(dict.fromkeys(name for _, name in sorted(found)))


def _units(text: str, number_end: int | None) -> list[str]:
    found: list[tuple[int, str]] = []
    for m in re.finditer(r"°?[A-Za-z]+(?:/[A-Za-z]+)?|[\u3400-\u9fff]+", text):
        word = m.group(0)
        if word[0] >= "\u3400":
            found += [(m.start() + word.find(a), ALIASES[a]) for a in ALIASES if a in word]
            continue
        unit = normalise_unit(word)
        if unit not in _KNOWN_UNITS:
            continue
        after_number = re.search(r"\d\s*$", text[: m.start()]) is not None
        if word.lower() in _AMBIGUOUS_UNITS and not after_number and len(word) < 3:
            continue
        if word.lower() == "in" and not after_number:
            continue
        found.append((m.start(), unit))
    units = [u for _, u in sorted(found)]
    if number_end is not None:
        # The unit written right after the number is the one being converted from.
        first = [u for pos, u in sorted(found) if pos >= number_end][:1]
        units = first + [u for u in units if u not in first]
    return list(dict.fromkeys(units))


def _timezones(text: str) -> list[str]:
    explicit = [z for _, z in _positions(_IANA, text)]
    zones = [city.timezone for name in _cities(text) if (city := find_city(name))]
    return list(dict.fromkeys(explicit + zones))


def _wanted_order(schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in properties]
    return required + [p for p in properties if p not in required]


def extract_arguments(schema: Mapping[str, Any], message: str) -> dict[str, Any]:
    """Arguments for a tool, read from the message by its JSON Schema (required ones first).

    Optional parameters are filled only when the message clearly supplies them; a required one
    the message does not supply gets a guess (the content words, ``false``, the first enum).
    """
    return read_arguments(schema, message)[0]


def read_arguments(schema: Mapping[str, Any], message: str) -> tuple[dict[str, Any], int]:
    """`extract_arguments` plus how badly it had to guess: 1 per guessed required parameter,
    more for a specific string one (``city``, ``flight_number``) than for free text."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    quoted = [next(g for g in m.groups() if g) for m in QUOTED.finditer(message)]
    bare = QUOTED.sub(" ", message)
    dates = [d for _, d in _positions(DATE, bare)] + _relative_dates(bare)
    clocks = [c.zfill(5) for _, c in _positions(CLOCK, DATE.sub(" ", bare))]
    plain = CLOCK.sub(" ", DATE.sub(" ", bare))
    number_matches = list(_NUMBER.finditer(plain))
    numbers = [_number(m.group(0)) for m in number_matches]
    pools: dict[str, list[Any]] = {
        "quoted": list(quoted),
        "numbers": list(numbers),
        "dates": list(dates),
        "units": _units(plain, number_matches[0].end() if number_matches else None),
        "zones": _timezones(message),
        "cities": _cities(message),
    }
    args: dict[str, Any] = {}
    guessed = 0
    for pname in _wanted_order(schema):
        prop = properties.get(pname)
        if not isinstance(prop, Mapping):
            continue
        value = _value_for(pname, prop, message, pools, clocks)
        if value is None and pname in required:
            specific = _has_a_format(pname, prop)
            guessed += SPECIFIC_GUESS if specific else 1
            value = _fallback(prop, message)
        if value is not None:
            args[pname] = value
    return args, guessed


def _has_a_format(pname: str, prop: Mapping[str, Any]) -> bool:
    """Whether a value for this parameter is one specific thing the message must state (a
    number, a city, a date or time, a time zone, an id or code), so no guess can be right.
    A name or free text (``product``, ``query``) can be read from the message's words."""
    kind = prop.get("type")
    if kind in ("number", "integer"):
        return True
    if kind != "string" or prop.get("enum"):
        return False
    lname = pname.lower()
    desc = str(prop.get("description", "")).lower()
    return bool(
        lname in _PLACE_PARAMS
        or lname in _TIME_PARAMS
        or lname in {"expression", "symbol", "day", "tz"}
        or "date" in lname
        or "zone" in lname
        or _IDENTIFIER.search(lname)
        or ("date" in desc and not _FREE_TEXT.search(lname))
    )


def _relative_dates(message: str) -> list[str]:
    """ISO dates for "today", "明天" and the like, in the order the message names them."""
    today = datetime.date.today()
    return [
        (today + datetime.timedelta(days=_DAY_OFFSETS[m.group(0)])).isoformat()
        for m in _RELATIVE_DAYS.finditer(message.lower())
    ]


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _take(pool: list[Any]) -> Any:
    return pool.pop(0) if pool else None


def _value_for(
    pname: str,
    prop: Mapping[str, Any],
    message: str,
    pools: dict[str, list[Any]],
    clocks: Sequence[str],
) -> Any:
    kind = prop.get("type")
    lname = pname.lower()
    desc = str(prop.get("description", "")).lower()
    if "unit" in lname and kind == "string":
        options = prop.get("enum")
        units = pools["units"]
        if not isinstance(options, list):
            return _take(units)
        if any(u in options for u in units):
            return units.pop(next(i for i, u in enumerate(units) if u in options))
    if "zone" in lname or lname in {"tz", "from_tz", "to_tz"}:
        return _take(pools["zones"])
    if isinstance(prop.get("enum"), list):
        folded = message.casefold()
        for option in prop["enum"]:
            if isinstance(option, str) and re.search(
                rf"(?<![a-z]){re.escape(option.casefold())}(?![a-z])", folded
            ):
                return option
        return None
    if kind in ("number", "integer"):
        number = _take(pools["numbers"])
        return None if number is None else (int(number) if kind == "integer" else number)
    if kind == "array":
        items = prop.get("items") or {}
        if items.get("type") in ("number", "integer"):
            values, pools["numbers"] = pools["numbers"], []
            return values or None
        emails = _EMAIL.findall(message)
        return emails or (list(pools["quoted"]) or None)
    if kind == "boolean":
        return None
    return _string_for(lname, desc, message, pools, clocks)


def _string_for(
    lname: str, desc: str, message: str, pools: dict[str, list[Any]], clocks: Sequence[str]
) -> Any:
    if lname == "expression":
        candidates = [m.group(0).strip() for m in EXPRESSION.finditer(message)]
        maths = [c for c in candidates if re.search(r"\d", c) and re.search(r"[-+*/^%(]", c)]
        return max(maths, key=len) if maths else None
    if lname in _PLACE_PARAMS:
        return _take(pools["cities"])
    if "date" in lname or lname == "day" or ("date" in desc and "time" not in desc):
        return _take(pools["dates"])
    if lname in _TIME_PARAMS or "date-time" in desc:
        return _take(pools["dates"]) or (clocks[0] if clocks else None)
    if lname == "symbol":
        tickers = _TICKER.findall(message)
        return tickers[0] if tickers else None
    if _IDENTIFIER.search(lname) and not pools["quoted"]:
        codes = _EMAIL.findall(message) if "email" in lname else _CODE.findall(message)
        return codes[0] if codes else None
    return _take(pools["quoted"])


def _fallback(prop: Mapping[str, Any], message: str) -> Any:
    kind = prop.get("type")
    if kind == "boolean":
        return False
    if kind == "string" and not prop.get("enum"):
        # "Add a note: buy milk" -> "buy milk", as a model would pass it.
        after = message.rpartition(":")[2].strip()
        if after and after != message.strip():
            return after
        words = content_words(message)
        return " ".join(words) if words else message.strip()
    if kind == "string":
        return prop["enum"][0]
    return None
