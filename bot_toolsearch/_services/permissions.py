"""``[tools] allow``/``deny``: the fnmatch patterns every door applies to the names it offers."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Sequence

__all__ = ["matches", "pattern_filter", "permits"]


def pattern_filter(
    names: frozenset[str],
    allow: Sequence[str],
    deny: Sequence[str],
    *,
    keep: Collection[str] = (),
) -> frozenset[str]:
    """The ``names`` that ``[tools] allow``/``deny`` (fnmatch, case-sensitive) leave.

    A non-empty ``allow`` keeps only matching names, and the ``keep`` names (the host's
    built-ins); ``deny`` then removes every match. Empty patterns return ``names`` itself.

    >>> sorted(pattern_filter(frozenset({"admin.wipe", "weather.now"}), [], ["admin.*"]))
    ['weather.now']
    """
    if allow:
        names = frozenset(n for n in names if n in keep or matches(n, allow))
    if deny:
        names = frozenset(n for n in names if not matches(n, deny))
    return names


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``name`` matches one of ``patterns`` (case-sensitive on every platform: tool
    names are case-sensitive)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def permits(name: str, allow: Sequence[str], deny: Sequence[str]) -> bool:
    """Whether ``[tools] allow``/``deny`` leave the one tool ``name``.

    >>> permits("admin.wipe", [], ["admin.*"]), permits("weather.now", ["weather.*"], [])
    (False, True)
    """
    return (not allow or matches(name, allow)) and not (deny and matches(name, deny))
