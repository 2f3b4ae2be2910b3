"""The shared tokenizer: separators, camelCase, stemming, stop words, CJK bigrams."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot_toolsearch._core.tokens import (
    STOP_WORDS,
    index_terms,
    query_terms,
    release_caches,
    split_name,
    stem,
    text_terms,
)


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("getMemberInfo", ["get", "member", "info"]),
        ("HTTPServer", ["http", "server"]),
        ("music.search_songs", ["music", "search", "songs"]),
        ("a-b_c.d", ["a", "b", "c", "d"]),
        ("get_V2Data", ["get", "v2", "data"]),
        ("ALLCAPS", ["allcaps"]),
        ("__x__", ["x"]),
    ],
    ids=["camel", "acronym", "dots-underscores", "every-separator", "digits", "upper", "edge"],
)
def test_split_name(name: str, parts: list[str]) -> None:
    assert split_name(name) == parts


def test_me_matches_get_me_but_not_comment() -> None:
    assert "me" in split_name("get_me")
    assert "me" not in split_name("comment")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("song", "songs"),
        ("forecast", "forecasting"),
        ("city", "cities"),
        ("create", "created"),
        ("ship", "shipping"),
        ("apply", "applied"),
        ("address", "addresses"),
    ],
)
def test_inflections_meet_at_one_stem(a: str, b: str) -> None:
    assert stem(a) == stem(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("locate", "locations"),
        ("calculate", "calculation"),
        ("prediction", "predicted"),
        ("generalizations", "generalize"),
        ("hopeful", "hope"),
        ("happiness", "happy"),
        ("connections", "connected"),
    ],
)
def test_derivations_meet_at_one_stem(a: str, b: str) -> None:
    assert stem(a) == stem(b)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("agreed", "agre"),
        ("feed", "feed"),
        ("hopping", "hop"),
        ("falling", "fall"),
        ("filing", "file"),
        ("conflated", "conflat"),
        ("relational", "relat"),
        ("digitizer", "digit"),
        ("adjustment", "adjust"),
        ("adoption", "adopt"),
        ("controll", "control"),
        ("probate", "probat"),
    ],
)
def test_porter_reference_stems(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize("word", ["string", "class", "rate", "date", "game", "x", "東京", "v2"])
def test_stemmer_leaves_stems_alone(word: str) -> None:
    # "rate" must not become "rat" (the animal), nor "date" "dat".
    assert stem(word) == word


def test_a_stem_never_collides_with_a_stop_word() -> None:
    # Porter would cut "one" to "on"; the whole word is kept so "on" cannot match it.
    assert stem("one") == "one"
    assert "on" not in query_terms("one")[0]
    assert query_terms("one")[0] == [stem("one")]


@given(st.text(alphabet="aB c._-\t\n天气Ä1+", max_size=40))
def test_whitespace_chunks_tokenize_like_any_separator(text: str) -> None:
    # index_terms caches per whitespace-free chunk: the result must not depend on that.
    assert index_terms(text) == index_terms(re.sub(r"\s", ".", text))
    assert index_terms(text) == index_terms(text)


def test_camel_case_is_split_in_queries_too() -> None:
    content, _ = query_terms("MemberInfo")
    assert content == index_terms("getMemberInfo")[1:]


def test_stop_words_are_separated_from_content() -> None:
    content, stops = query_terms("the weather in the city")
    assert content == [stem("weather"), stem("city")]
    assert stops == [stem("the"), stem("in")]
    assert {"the", "a", "of"} <= STOP_WORDS


def test_query_terms_are_deduplicated_in_order() -> None:
    content, _ = query_terms("songs song SONG music")
    assert content == ["song", "music"]


def test_cjk_is_cut_into_bigrams() -> None:
    assert query_terms("天气")[0] == ["天气"]
    assert "天气" in index_terms("查询城市天气预报")
    assert query_terms("成员 头像")[0] == ["成员", "头像"]
    terms = index_terms("获取群成员的头像和昵称")
    assert {"成员", "头像"} <= set(terms)


def test_single_cjk_character_matches_the_index_unigram() -> None:
    assert query_terms("歌")[0] == ["歌"]
    assert "歌" in index_terms("搜索歌曲")


def test_mixed_scripts_split_between_latin_and_cjk() -> None:
    assert index_terms("QQ群成员")[:2] == ["qq", "群成"]
    assert query_terms("天气API")[0] == ["天气", "api"]


def test_japanese_and_korean_runs_are_bigrams() -> None:
    assert query_terms("カレー")[0] == ["カレ", "レー"]
    assert "날씨" in index_terms("오늘날씨")


def test_punctuation_and_symbols_are_separators() -> None:
    assert index_terms("C++ (beta), 100%!") == ["c", "beta", "100"]
    assert query_terms("+ ... !!") == ([], [])


def test_text_terms_are_the_index_terms_whether_or_not_the_text_is_cached() -> None:
    short = "Get the weather forecast for a city."
    long = " ".join([short] * 40)  # past the whole-text cache's length bound
    assert len(long) > 1000
    for text in (short, long):
        assert text_terms(text) == tuple(index_terms(text))
    assert text_terms(short) is text_terms(short)  # cached, shared
    assert text_terms(long) is not text_terms(long)


def _word_by_word(text: str) -> tuple[str, ...]:
    """The index terms of ``text`` the slow way: each whitespace chunk, each run, each word
    through `split_name`'s splitting and `stem`, without any cache."""
    terms: list[str] = []
    for chunk in text.split():
        for word in split_name(chunk):
            if re.match(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]", word):
                grams = [word[i : i + 2] for i in range(len(word) - 1)]
                terms.extend([*grams, *word] if len(word) > 1 else [word])
            else:
                terms.append(stem(word))
    return tuple(terms)


_TEXT = st.text(
    alphabet=st.sampled_from(
        [*"abcdeiosyz", *"ABCXYZ", *"019", *" \t._-(", "é", "天", "气", "カ", "날"]
    ),
    max_size=60,
)


@given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_text_terms_match_a_word_by_word_tokenizer_across_caches(texts: list[str]) -> None:
    # Run after run is looked up in a cache shared by every text; repeated and overlapping
    # texts must still give exactly what tokenizing each word afresh gives.
    release_caches()
    for text in [*texts, *texts, " ".join(texts)]:
        assert text_terms(text) == _word_by_word(text)
        assert text_terms(text * 30) == _word_by_word(text * 30)  # past the whole-text cache
