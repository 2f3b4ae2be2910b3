"""``math.*`` demo tools: safe arithmetic, statistics and number theory, really computed."""

from __future__ import annotations

import math
import statistics
from typing import Literal

from bot_toolsearch._tools.tool import Tool, tool

from ._safe_math import evaluate

__all__ = ["MATH_TOOLS"]

_MAX_N = 10_000


def _bounded(n: int, limit: int = _MAX_N) -> int:
    if not 0 <= n <= limit:
        raise ValueError(f"n must be between 0 and {limit}")
    return n


@tool(name="math.evaluate")
def evaluate_expression(expression: str) -> float | int:
    """Calculate an arithmetic expression: + - * / ^ %, parentheses, sqrt, log, sin, pi.

    Args:
        expression: the expression, e.g. (12.5 * 4) / 3 + sqrt(81).
    """
    return evaluate(expression)


@tool(name="math.statistics")
def describe_numbers(numbers: list[float]) -> dict[str, float]:
    """Compute summary statistics of a list of numbers: count, sum, mean, median, min, max, stdev.

    Args:
        numbers: the data values.
    """
    if not numbers:
        raise ValueError("numbers must not be empty")
    return {
        "count": len(numbers),
        "sum": math.fsum(numbers),
        "mean": statistics.fmean(numbers),
        "median": statistics.median(numbers),
        "min": min(numbers),
        "max": max(numbers),
        "stdev": statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
    }


@tool(name="math.average")
def average(numbers: list[float]) -> float:
    """Calculate the arithmetic mean (average) of numbers.

    Args:
        numbers: the values to average.
    """
    return statistics.fmean(numbers)


@tool(name="math.median")
def median(numbers: list[float]) -> float:
    """Find the median (middle value) of numbers.

    Args:
        numbers: the values.
    """
    return float(statistics.median(numbers))


@tool(name="math.percentage")
def percentage(part: float, whole: float) -> float:
    """Calculate what percentage one number is of another.

    Args:
        part: the part, e.g. 45.
        whole: the whole, e.g. 180.
    """
    return round(part / whole * 100, 6)


@tool(name="math.percent_change")
def percent_change(old_value: float, new_value: float) -> float:
    """Calculate the percentage increase or decrease from an old value to a new value.

    Args:
        old_value: the starting value.
        new_value: the final value.
    """
    return round((new_value - old_value) / old_value * 100, 6)


@tool(name="math.gcd")
def gcd(a: int, b: int) -> int:
    """Greatest common divisor of two integers.

    Args:
        a: first integer.
        b: second integer.
    """
    return math.gcd(a, b)


@tool(name="math.lcm")
def lcm(a: int, b: int) -> int:
    """Least common multiple of two integers.

    Args:
        a: first integer.
        b: second integer.
    """
    return math.lcm(a, b)


@tool(name="math.factorial")
def factorial(n: int) -> str:
    """Compute n factorial (n!), returned as a decimal string.

    Args:
        n: a whole number from 0 to 1000.
    """
    return str(math.factorial(_bounded(n, 1000)))


@tool(name="math.is_prime")
def is_prime(n: int) -> bool:
    """Check whether an integer is a prime number.

    Args:
        n: the integer to test.
    """
    if n < 2:
        return False
    return all(n % d for d in range(2, math.isqrt(n) + 1))


@tool(name="math.prime_factors")
def prime_factors(n: int) -> list[int]:
    """Factorise an integer into its prime factors.

    Args:
        n: an integer from 2 to 10^12.
    """
    if not 2 <= n <= 10**12:
        raise ValueError("n must be between 2 and 10^12")
    factors, d = [], 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    return [*factors, n] if n > 1 else factors


@tool(name="math.round_number")
def round_number(value: float, digits: int = 0) -> float:
    """Round a number to a given number of decimal places.

    Args:
        value: the number.
        digits: decimal places to keep.
    """
    return round(value, digits)


@tool(name="math.solve_quadratic")
def solve_quadratic(a: float, b: float, c: float) -> list[str]:
    """Solve the quadratic equation a*x^2 + b*x + c = 0 (real or complex roots).

    Args:
        a: coefficient of x^2 (not zero).
        b: coefficient of x.
        c: constant term.
    """
    if a == 0:
        raise ValueError("a must not be 0")
    disc = complex(b * b - 4 * a * c) ** 0.5
    roots = ((-b + disc) / (2 * a), (-b - disc) / (2 * a))
    return [f"{r.real:g}" if abs(r.imag) < 1e-12 else f"{r.real:g}{r.imag:+g}i" for r in roots]


@tool(name="math.fibonacci")
def fibonacci(count: int) -> list[int]:
    """List the first numbers of the Fibonacci sequence.

    Args:
        count: how many numbers, up to 200.
    """
    out, a, b = [], 0, 1
    for _ in range(_bounded(count, 200)):
        out.append(a)
        a, b = b, a + b
    return out


@tool(name="math.convert_base")
def convert_base(number: str, from_base: int = 10, to_base: int = 2) -> str:
    """Convert an integer between number bases (binary, octal, decimal, hexadecimal, up to 36).

    Args:
        number: the integer written in from_base, e.g. ff or 1010.
        from_base: base of the input, 2 to 36.
        to_base: base of the output, 2 to 36.
    """
    value = int(number.strip(), from_base)
    if not 2 <= to_base <= 36:
        raise ValueError("to_base must be between 2 and 36")
    digits, sign, value = "", "-" if value < 0 else "", abs(value)
    while True:
        value, rem = divmod(value, to_base)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rem] + digits
        if not value:
            return sign + digits


@tool(name="math.trig")
def trig(
    function: Literal["sin", "cos", "tan"], angle: float, unit: Literal["deg", "rad"] = "deg"
) -> float:
    """Compute a trigonometric function of an angle in degrees or radians.

    Args:
        function: sin, cos or tan.
        angle: the angle.
        unit: deg for degrees, rad for radians.
    """
    radians = math.radians(angle) if unit == "deg" else angle
    return round({"sin": math.sin, "cos": math.cos, "tan": math.tan}[function](radians), 12)


MATH_TOOLS: tuple[Tool, ...] = (
    evaluate_expression,
    describe_numbers,
    average,
    median,
    percentage,
    percent_change,
    gcd,
    lcm,
    factorial,
    is_prime,
    prime_factors,
    round_number,
    solve_quadratic,
    fibonacci,
    convert_base,
    trig,
)
