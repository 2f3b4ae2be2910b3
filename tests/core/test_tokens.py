"""The shared tokenizer: separators, camelCase, stemming, stop words, CJK bigrams."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot_toolsearch._core import tokens
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


# --- the stemmer against the straightforward Porter it replaced ------------------------------
# Letter by letter, as the 1980 paper states it; the module's version works on a consonant /
# vowel pattern and skips steps no suffix can match, and must give exactly these stems.
STEP2, STEP3, STEP4 = tokens._STEP2, tokens._STEP3, tokens._STEP4


def _ref_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in "aeiou":
        return False
    # "y" is a consonant at the start or after a vowel ("yes", "boy"), else a vowel ("try").
    return ch != "y" or i == 0 or not _ref_consonant(word, i - 1)


def _ref_measure(stem_: str) -> int:
    """Porter's *m*: the number of vowel-consonant sequences in ``stem_``."""
    count = 0
    vowel = False
    for i in range(len(stem_)):
        consonant = _ref_consonant(stem_, i)
        count += vowel and consonant
        vowel = not consonant
    return count


def _ref_has_vowel(stem_: str) -> bool:
    return any(not _ref_consonant(stem_, i) for i in range(len(stem_)))


def _ref_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _ref_consonant(word, len(word) - 1)


def _ref_cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not ``w``, ``x`` or ``y`` (``hop``, not ``how``)."""
    n = len(word)
    return (
        n >= 3
        and _ref_consonant(word, n - 3)
        and not _ref_consonant(word, n - 2)
        and _ref_consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


def _ref_step1(w: str) -> str:
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        return w[:-1] if _ref_measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _ref_has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"  # conflated -> conflate
            if _ref_double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]  # hopping -> hop, but falling -> fall
            if _ref_measure(w) == 1 and _ref_cvc(w):
                return w + "e"  # filing -> file
            return w
    return w


def _ref_replace(w: str, rules: tuple[tuple[str, str], ...], min_measure: int) -> str:
    for suffix, replacement in rules:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            return base + replacement if _ref_measure(base) > min_measure else w
    return w


def _ref_porter(word: str) -> str:
    w = _ref_step1(word)
    if w.endswith("y") and _ref_has_vowel(w[:-1]):
        w = w[:-1] + "i"  # happy -> happi, so that happiness meets it
    w = _ref_replace(w, STEP2, 0)
    w = _ref_replace(w, STEP3, 0)
    for suffix in STEP4:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if _ref_measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    if w.endswith("e"):
        m = _ref_measure(w[:-1])
        if m > 1 or (m == 1 and not _ref_cvc(w[:-1])):
            w = w[:-1]
    if w.endswith("ll") and _ref_measure(w) > 1:
        w = w[:-1]
    return w


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", max_size=14))
def test_the_stemmer_equals_the_letter_by_letter_porter(word: str) -> None:
    assert tokens._porter(word) == _ref_porter(word)


@given(st.sampled_from(["y", "yy", "ay", "ya", "yay", "syzygy", "flying", "toyed", "eyed"]))
def test_the_stemmer_reads_y_as_the_letter_by_letter_porter_does(word: str) -> None:
    assert tokens._porter(word) == _ref_porter(word)


_ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80)


@given(st.one_of(_ASCII, st.text(max_size=40)))
def test_ascii_texts_split_into_the_runs_the_regular_expression_finds(text: str) -> None:
    assert tokens._runs(text) == tokens._RUN.findall(text)


@given(st.text(alphabet="abcxyzABCXYZ019", min_size=1, max_size=12))
def test_ascii_runs_take_the_general_path_s_terms(run: str) -> None:
    # The ASCII shortcuts (plain, capitalised, upper-case, camelCase) against the general path.
    general = tuple(tokens.stem(word) for word in tokens._run_words(run))
    assert tokens._terms_of_run(run) == general
