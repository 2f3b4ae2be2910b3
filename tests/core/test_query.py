"""Query parsing: select:, keywords, +required, stop words."""

from __future__ import annotations

import pytest

from bot_toolsearch._core.query import KeywordQuery, SelectQuery, parse_query
from bot_toolsearch._core.tokens import stem


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("select:a,b", ("a", "b")),
        ("SELECT : a , B", ("a", "B")),
        ("select:a b", ("a", "b")),
        ("select:a,,b ,\n c", ("a", "b", "c")),
        ("  select:x  ", ("x",)),
        ("select:", ()),
        ("select: , ,", ()),
        ("Select:\ta\tb", ("a", "b")),
    ],
)
def test_select_items_split_on_commas_and_whitespace(query: str, names: tuple[str, ...]) -> None:
    parsed = parse_query(query)
    assert isinstance(parsed, SelectQuery)
    assert parsed.names == names
    assert parsed.text == query.strip()


@pytest.mark.parametrize("query", ["selector:a", "please select:a", "select a", "selected"])
def test_select_must_start_the_query(query: str) -> None:
    assert isinstance(parse_query(query), KeywordQuery)


def test_keywords_split_like_names() -> None:
    parsed = parse_query("MemberInfo music.search_songs")
    assert isinstance(parsed, KeywordQuery)
    assert parsed.terms == ("member", "info", "music", "search", "song")
    assert parsed.required == ()


def test_required_terms_come_first_and_are_not_scored_twice() -> None:
    parsed = parse_query("member +member +user_id extra")
    assert isinstance(parsed, KeywordQuery)
    assert parsed.required == ("member", "user", "id")
    assert parsed.terms == ("member", "user", "id", "extra")


def test_stop_words_are_dropped_unless_alone() -> None:
    parsed = parse_query("the weather of the city")
    assert isinstance(parsed, KeywordQuery)
    assert parsed.terms == (stem("weather"), stem("city"))
    only = parse_query("the of")
    assert isinstance(only, KeywordQuery)
    assert only.terms == (stem("the"), stem("of"))


def test_a_required_stop_word_is_kept() -> None:
    parsed = parse_query("+the weather")
    assert isinstance(parsed, KeywordQuery)
    assert parsed.required == (stem("the"),)


@pytest.mark.parametrize("query", ["...", "+_", "+", "  ", ""])
def test_queries_without_terms(query: str) -> None:
    parsed = parse_query(query)
    assert isinstance(parsed, KeywordQuery)
    assert parsed.terms == ()
    assert parsed.text == query.strip()


def test_cjk_query_terms() -> None:
    parsed = parse_query("成员 +头像")
    assert isinstance(parsed, KeywordQuery)
    assert parsed.required == ("头像",)
    assert parsed.terms == ("头像", "成员")
