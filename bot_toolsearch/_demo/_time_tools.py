"""``time.*`` demo tools: real computations with ``zoneinfo`` and ``datetime``."""

from __future__ import annotations

import calendar as _calendar
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

from bot_toolsearch._tools.tool import Tool, tool

__all__ = ["TIME_TOOLS"]


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"unknown IANA time zone {name!r} (e.g. 'Asia/Tokyo')") from exc


def _parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.strip().replace("Z", "+00:00"))


@tool(name="time.now")
def now(timezone: str = "UTC") -> dict[str, str]:
    """Get the current date and local time in an IANA time zone.

    Args:
        timezone: IANA time zone name, e.g. Asia/Tokyo, Europe/London, America/New_York.
    """
    current = datetime.now(_zone(timezone))
    return {
        "timezone": timezone,
        "local_time": current.isoformat(timespec="seconds"),
        "utc_offset": current.strftime("%z"),
        "weekday": current.strftime("%A"),
    }


@tool(name="time.convert_timezone")
def convert_timezone(time: str, from_timezone: str, to_timezone: str) -> dict[str, str]:
    """Convert a date and time from one time zone to another.

    Args:
        time: local date-time in ISO format, e.g. 2025-03-01T09:30, or a clock time like 09:30.
        from_timezone: IANA time zone of the given time, e.g. Europe/Berlin.
        to_timezone: IANA time zone to convert into, e.g. Asia/Shanghai.
    """
    if len(time.strip()) <= 5:
        time = f"{date.today().isoformat()}T{time.strip().zfill(5)}"
    source = _parse(time).replace(tzinfo=_zone(from_timezone))
    target = source.astimezone(_zone(to_timezone))
    return {
        "from": source.isoformat(timespec="minutes"),
        "to": target.isoformat(timespec="minutes"),
        "to_timezone": to_timezone,
    }


@tool(name="time.timezone_offset")
def timezone_offset(timezone: str) -> dict[str, str | float]:
    """Get the current UTC offset of a time zone in hours, including daylight saving time.

    Args:
        timezone: IANA time zone name, e.g. America/Los_Angeles.
    """
    offset = datetime.now(_zone(timezone)).utcoffset() or timedelta()
    return {"timezone": timezone, "utc_offset_hours": offset.total_seconds() / 3600}


@tool(name="time.list_timezones")
def list_timezones(region: str = "Asia") -> list[str]:
    """List the IANA time zone names of a region.

    Args:
        region: region prefix such as Asia, Europe, America, Africa, Australia, Pacific.
    """
    prefix = region.strip().rstrip("/") + "/"
    return sorted(z for z in available_timezones() if z.startswith(prefix))[:50]


@tool(name="time.unix_to_datetime")
def unix_to_datetime(timestamp: float, timezone: str = "UTC") -> str:
    """Convert a Unix timestamp (seconds since 1970) to a readable ISO date-time.

    Args:
        timestamp: seconds since the Unix epoch.
        timezone: IANA time zone for the result.
    """
    return datetime.fromtimestamp(timestamp, _zone(timezone)).isoformat(timespec="seconds")


@tool(name="time.datetime_to_unix")
def datetime_to_unix(datetime_text: str, timezone: str = "UTC") -> int:
    """Convert an ISO date-time to a Unix timestamp in seconds.

    Args:
        datetime_text: ISO date-time, e.g. 2024-02-29T12:00:00.
        timezone: IANA time zone used when the date-time has no offset.
    """
    moment = _parse(datetime_text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_zone(timezone))
    return int(moment.timestamp())


@tool(name="time.add_duration")
def add_duration(start: str, days: int = 0, hours: int = 0, minutes: int = 0) -> str:
    """Add (or subtract, with negative values) days, hours and minutes to a date-time.

    Args:
        start: ISO date or date-time to start from.
        days: days to add.
        hours: hours to add.
        minutes: minutes to add.
    """
    result = _parse(start) + timedelta(days=days, hours=hours, minutes=minutes)
    return result.isoformat(timespec="minutes")


@tool(name="time.day_of_week")
def day_of_week(day: str) -> str:
    """Tell which weekday a calendar date falls on.

    Args:
        day: ISO date, e.g. 2025-12-25.
    """
    return date.fromisoformat(day.strip()).strftime("%A")


@tool(name="time.days_between")
def days_between(start: str, end: str) -> int:
    """Count the days between two dates (negative when end is before start).

    Args:
        start: first ISO date, e.g. 2025-01-01.
        end: second ISO date.
    """
    return (date.fromisoformat(end.strip()) - date.fromisoformat(start.strip())).days


@tool(name="time.is_leap_year")
def is_leap_year(year: int) -> bool:
    """Check whether a year is a leap year in the Gregorian calendar.

    Args:
        year: the year, e.g. 2024.
    """
    return _calendar.isleap(year)


@tool(name="time.week_number")
def week_number(day: str) -> dict[str, int]:
    """Get the ISO 8601 week number and ISO year of a date.

    Args:
        day: ISO date, e.g. 2025-06-15.
    """
    iso = date.fromisoformat(day.strip()).isocalendar()
    return {"iso_year": iso.year, "week": iso.week, "weekday": iso.weekday}


@tool(name="time.month_calendar")
def month_calendar(year: int, month: int) -> str:
    """Print the calendar grid of one month as plain text.

    Args:
        year: the year, e.g. 2025.
        month: the month number, 1 to 12.
    """
    return _calendar.month(year, month)


@tool(name="time.utc_now")
def utc_now() -> str:
    """Get the current Coordinated Universal Time (UTC) as an ISO timestamp."""
    return datetime.now(UTC).isoformat(timespec="seconds")


TIME_TOOLS: tuple[Tool, ...] = (
    now,
    convert_timezone,
    timezone_offset,
    list_timezones,
    unix_to_datetime,
    datetime_to_unix,
    add_duration,
    day_of_week,
    days_between,
    is_leap_year,
    week_number,
    month_calendar,
    utc_now,
)
