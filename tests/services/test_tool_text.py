"""The text a tool is embedded as (`bot_toolsearch._services.tool_text`)."""

from __future__ import annotations

import pytest

from bot_toolsearch._services.tool_text import MAX_TEXT_CHARS, tool_text, words


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("get_weather", "get weather"),
        ("getWeather", "get weather"),
        ("GetWeather", "get weather"),
        ("HTTPServer", "http server"),
        ("parseHTTPResponse", "parse http response"),
        ("item2Name", "item2 name"),
        ("get_13F_HR", "get 13f hr"),
        ("v2", "v2"),
        ("a.b-c/d:e", "a b c d e"),
        ("__private__", "private"),
        ("___", ""),
        ("ALLCAPS", "allcaps"),
        ("déjàVu", "déjà vu"),
    ],
)
def test_words_split_separators_and_humps(identifier: str, expected: str) -> None:
    assert words(identifier) == expected


def test_the_name_is_given_once_in_words_with_its_namespace() -> None:
    text = tool_text(
        "dlp.projects.deidentifyTemplates.create",
        "Creates a DeidentifyTemplate.",
        ["parent", "body"],
    )
    assert text == (
        "create (in dlp projects deidentify templates). Creates a DeidentifyTemplate. "
        "Parameters: parent, body."
    )
    assert "deidentifyTemplates" not in text  # the identifier itself is not repeated


def test_links_are_left_out_of_the_description() -> None:
    description = (
        "Gets a template.  See https://cloud.example/docs?a=1 or [the guide](http://x.y/z) "
        "and www.example.org\tto learn more."
    )
    text = tool_text("get", description, [])
    assert text == "get. Gets a template. See or [the and to learn more."  # whole words go
    assert "://" not in text
    assert "www." not in text


def test_a_tool_without_description_or_parameters() -> None:
    assert tool_text("search", "", []) == "search."
    # A leaf with no words keeps the full name.
    assert tool_text("ns.___", "  ", ["__", "x_y"]) == "ns.___ (in ns). Parameters: x y."


def test_hostile_text_is_capped_and_handled_whole() -> None:
    name = "a" + "B" * 200_000 + ".c" * 50_000
    text = tool_text(name, "word " * 100_000, ["p" * 100_000])
    assert len(text) == MAX_TEXT_CHARS
    assert text.startswith("c (in a " + "b" * 100)  # the huge namespace in words
