"""Demo tools in otherwise sample-data namespaces whose answers are real formulas."""

from __future__ import annotations

import math
import mimetypes
import re

from bot_toolsearch._tools.tool import Tool, tool

from ._places import find_city

__all__ = ["FORMULA_TOOLS"]


@tool(name="finance.compound_interest")
def compound_interest(
    principal: float, annual_rate_percent: float, years: float, compounds_per_year: int = 12
) -> dict[str, float]:
    """Calculate the future value of savings with compound interest.

    Args:
        principal: starting amount.
        annual_rate_percent: yearly interest rate in percent, e.g. 4.5.
        years: number of years.
        compounds_per_year: compounding periods per year (12 = monthly).
    """
    rate = annual_rate_percent / 100 / compounds_per_year
    value = principal * (1 + rate) ** (compounds_per_year * years)
    return {"future_value": round(value, 2), "interest": round(value - principal, 2)}


@tool(name="finance.loan_payment")
def loan_payment(principal: float, annual_rate_percent: float, years: float) -> dict[str, float]:
    """Calculate the monthly payment of a fixed-rate loan or mortgage (amortization).

    Args:
        principal: amount borrowed.
        annual_rate_percent: yearly interest rate in percent.
        years: loan term in years.
    """
    months = round(years * 12)
    rate = annual_rate_percent / 100 / 12
    payment = principal / months if rate == 0 else principal * rate / (1 - (1 + rate) ** -months)
    return {
        "monthly_payment": round(payment, 2),
        "total_paid": round(payment * months, 2),
        "total_interest": round(payment * months - principal, 2),
    }


@tool(name="finance.tip_calculator")
def tip_calculator(bill: float, tip_percent: float = 15, people: int = 1) -> dict[str, float]:
    """Calculate the tip and split a restaurant bill between people.

    Args:
        bill: bill amount before tip.
        tip_percent: tip in percent.
        people: number of people sharing the bill.
    """
    tip = bill * tip_percent / 100
    return {
        "tip": round(tip, 2),
        "total": round(bill + tip, 2),
        "per_person": round((bill + tip) / max(people, 1), 2),
    }


@tool(name="finance.sales_tax")
def sales_tax(amount: float, tax_rate_percent: float, included: bool = False) -> dict[str, float]:
    """Add sales tax or VAT to a price, or extract it from a tax-inclusive price.

    Args:
        amount: the price.
        tax_rate_percent: tax or VAT rate in percent, e.g. 20.
        included: true when the amount already includes the tax.
    """
    rate = tax_rate_percent / 100
    net = amount / (1 + rate) if included else amount
    return {"net": round(net, 2), "tax": round(net * rate, 2), "gross": round(net * (1 + rate), 2)}


@tool(name="weather.heat_index")
def heat_index(temperature_c: float, humidity_percent: float) -> dict[str, float]:
    """Calculate the heat index (felt temperature) from air temperature and relative humidity.

    Args:
        temperature_c: air temperature in degrees Celsius.
        humidity_percent: relative humidity in percent.
    """
    t, r = temperature_c * 9 / 5 + 32, humidity_percent
    hi = (
        (
            -42.379
            + 2.04901523 * t
            + 10.14333127 * r
            - 0.22475541 * t * r
            - 6.83783e-3 * t * t
            - 5.481717e-2 * r * r
            + 1.22874e-3 * t * t * r
            + 8.5282e-4 * t * r * r
            - 1.99e-6 * t * t * r * r
        )
        if t >= 80
        else t
    )
    return {"heat_index_c": round((hi - 32) * 5 / 9, 1)}


@tool(name="weather.wind_chill")
def wind_chill(temperature_c: float, wind_speed_kmh: float) -> dict[str, float]:
    """Calculate the wind chill (felt temperature in cold wind).

    Args:
        temperature_c: air temperature in degrees Celsius.
        wind_speed_kmh: wind speed in km/h.
    """
    v = wind_speed_kmh**0.16
    felt = 13.12 + 0.6215 * temperature_c - 11.37 * v + 0.3965 * temperature_c * v
    return {"wind_chill_c": round(felt, 1)}


@tool(name="weather.dew_point")
def dew_point(temperature_c: float, humidity_percent: float) -> dict[str, float]:
    """Calculate the dew point from temperature and relative humidity (Magnus formula).

    Args:
        temperature_c: air temperature in degrees Celsius.
        humidity_percent: relative humidity in percent.
    """
    gamma = math.log(humidity_percent / 100) + 17.62 * temperature_c / (243.12 + temperature_c)
    return {"dew_point_c": round(243.12 * gamma / (17.62 - gamma), 1)}


@tool(name="maps.distance")
def distance(origin: str, destination: str) -> dict[str, float | str]:
    """Great-circle distance between two cities (straight line, as the crow flies).

    Args:
        origin: starting city, e.g. Paris.
        destination: destination city, e.g. Berlin.
    """
    a, b = find_city(origin), find_city(destination)
    if a is None or b is None:
        raise ValueError(f"unknown city: {origin if a is None else destination!r}")
    p1, p2 = math.radians(a.latitude), math.radians(b.latitude)
    dp, dl = p2 - p1, math.radians(b.longitude - a.longitude)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    km = 2 * 6371.0088 * math.asin(math.sqrt(h))
    return {
        "origin": a.name,
        "destination": b.name,
        "km": round(km, 1),
        "miles": round(km / 1.609344, 1),
    }


@tool(name="maps.coordinates")
def coordinates(city: str) -> dict[str, float | str]:
    """Look up the latitude, longitude and time zone of a major city.

    Args:
        city: the city name, e.g. Tokyo or 上海.
    """
    found = find_city(city)
    if found is None:
        raise ValueError(f"unknown city {city!r}")
    return {
        "city": found.name,
        "latitude": found.latitude,
        "longitude": found.longitude,
        "timezone": found.timezone,
    }


@tool(name="files.mime_type")
def mime_type(filename: str) -> dict[str, str | None]:
    """Guess the MIME content type of a file from its name or extension.

    Args:
        filename: file name, e.g. report.pdf.
    """
    kind, encoding = mimetypes.guess_type(filename, strict=False)
    return {"filename": filename, "mime_type": kind, "encoding": encoding}


@tool(name="files.human_size")
def human_size(size_bytes: int) -> str:
    """Format a file size in bytes as a human-readable string (KiB, MiB, GiB).

    Args:
        size_bytes: size in bytes.
    """
    size, unit = float(size_bytes), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"


@tool(name="files.safe_filename")
def safe_filename(name: str) -> str:
    """Make a string safe to use as a file name on Windows, macOS and Linux.

    Args:
        name: the desired file name.
    """
    cleaned = re.sub(r'[<>:"/\\|?*\x00-\x1f]', "_", name).strip(" .")
    return cleaned[:255] or "untitled"


@tool(name="email.validate_address")
def validate_address(address: str) -> dict[str, bool | str]:
    """Check whether an email address is syntactically valid.

    Args:
        address: the email address.
    """
    valid = bool(re.fullmatch(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}", address.strip()))
    return {"address": address, "valid": valid}


FORMULA_TOOLS: tuple[Tool, ...] = (
    compound_interest,
    loan_payment,
    tip_calculator,
    sales_tax,
    heat_index,
    wind_chill,
    dew_point,
    distance,
    coordinates,
    mime_type,
    human_size,
    safe_filename,
    validate_address,
)
