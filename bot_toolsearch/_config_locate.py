"""Where each key of a TOML text is defined, so a config error can name its line and column.

tomlkit keeps formatting but no positions, so this scans the text line by line: table headers,
array-of-tables headers (counted, so ``[[tools.mcp_servers]]`` number 2 is index 1) and
``key = value`` lines, skipping multi-line strings. It is a best effort for error messages only;
a key it cannot place falls back to its table, and then to no position at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["KeyLocator"]

_PART = r'(?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)'
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_ARRAY_HEADER = re.compile(rf"^\s*\[\[\s*({_DOTTED})\s*\]\]\s*(?:#.*)?$")
_HEADER = re.compile(rf"^\s*\[\s*({_DOTTED})\s*\]\s*(?:#.*)?$")
_KEY = re.compile(rf"^\s*({_DOTTED})\s*=\s*")
_SPLIT = re.compile(_PART)

Position = tuple[int, int, int]
"""1-based line, column of the key, column of the value."""


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in _SPLIT.findall(dotted))


class KeyLocator:
    """Positions of the keys and tables defined in one TOML text."""

    def __init__(self, text: str) -> None:
        self._where: dict[tuple[str | int, ...], Position] = {}
        counts: dict[tuple[str, ...], int] = {}
        table: tuple[str | int, ...] = ()
        in_string: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if in_string is not None:
                if in_string in line:
                    in_string = None
                continue
            if match := _ARRAY_HEADER.match(line):
                name = _parts(match.group(1))
                counts[name] = counts.get(name, -1) + 1
                table = (*name, counts[name])
                self._where.setdefault(table, (number, match.start(1) + 1, match.start(1) + 1))
                continue
            if match := _HEADER.match(line):
                table = _parts(match.group(1))
                self._where.setdefault(table, (number, match.start(1) + 1, match.start(1) + 1))
                continue
            if match := _KEY.match(line):
                key = (*table, *_parts(match.group(1)))
                self._where.setdefault(key, (number, match.start(1) + 1, match.end() + 1))
                rest = line[match.end() :]
                for quote in ('"""', "'''"):
                    if rest.startswith(quote) and rest.count(quote) == 1:
                        in_string = quote

    def find(self, path: Sequence[str | int], *, of_key: bool = False) -> tuple[int, int] | None:
        """Line and column where ``path`` (or the nearest enclosing table) is defined.

        Args:
            path: the key path, e.g. ``("tools", "mcp_servers", 0, "command")``.
            of_key: point at the key itself instead of its value.

        Returns:
            ``(line, column)``, both 1-based, or ``None`` when nothing on the path is found.
        """
        key = tuple(path)
        while key:
            if key in self._where:
                line, key_col, value_col = self._where[key]
                return line, key_col if of_key else value_col
            key = key[:-1]
        return None
