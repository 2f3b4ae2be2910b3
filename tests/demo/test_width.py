"""Column widths for the demo's tables: wide CJK characters count twice."""

from __future__ import annotations

from bot_toolsearch._demo._width import display_width, fit


def test_wide_characters_take_two_columns() -> None:
    assert display_width("abc") == 3
    assert display_width("群成员") == 6
    assert display_width("\uff46\uff55\uff4c\uff4c") == 8  # fullwidth "full"
    assert display_width("e\u0301") == 1  # a combining accent takes no column


def test_fit_pads_and_cuts_to_exact_columns() -> None:
    assert fit("ab", 4) == "ab  "
    assert fit("群成员", 8) == "群成员  "
    assert fit("abcdef", 4) == "abc…"
    # A wide character that would straddle the edge is dropped, and the gap padded.
    assert fit("群成员头像", 6) == "群成… "
    for text in ("What is the time?", "帮我看看群成员“小明”的头像", "混合 mixed 文字 text"):
        for width in range(1, 30):
            assert display_width(fit(text, width)) == width
