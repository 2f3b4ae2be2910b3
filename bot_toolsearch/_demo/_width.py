"""Terminal column widths: CJK and other wide characters take two columns, combining marks none."""

from __future__ import annotations

import unicodedata

__all__ = ["display_width", "fit"]


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """How many terminal columns ``text`` takes."""
    return sum(_char_width(ch) for ch in text)


def fit(text: str, width: int) -> str:
    """``text`` cut (with ``…``) and padded with spaces to exactly ``width`` columns."""
    if display_width(text) > width:
        kept: list[str] = []
        used = 0
        for ch in text:
            w = _char_width(ch)
            if used + w > width - 1:
                break
            kept.append(ch)
            used += w
        text = "".join(kept) + "…"
    return text + " " * (width - display_width(text))
