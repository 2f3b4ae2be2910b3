"""Canonical <-> wire tool-name encoding (bot_toolsearch._names)."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot_toolsearch._transports.names import WIRE_NAME_PATTERN, WireNames, encode_name


def is_wire(name: str) -> bool:
    return WIRE_NAME_PATTERN.fullmatch(name) is not None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("send_message", "send_message", id="legal-unchanged"),
        pytest.param("Get-Weather_2", "Get-Weather_2", id="legal-mixed-case-unchanged"),
        pytest.param("a" * 64, "a" * 64, id="legal-64-chars-unchanged"),
        pytest.param("music.search_songs", "music-_-search_songs", id="dot-to-delimiter"),
        pytest.param("a.b.c", "a-_-b-_-c", id="every-dot"),
        pytest.param("天气.查询", "__-_-__", id="cjk-to-underscore"),
        pytest.param("my tool", "my_tool", id="space-to-underscore"),
        pytest.param("a\nb\tc\x00", "a_b_c_", id="control-chars"),
        pytest.param("café", "caf_", id="non-ascii-letter"),
        pytest.param("a/b:c", "a_b_c", id="punctuation"),
        pytest.param("  padded  ", "padded", id="stripped"),
        pytest.param("", "tool", id="empty-becomes-tool"),
        pytest.param("   ", "tool", id="blank-becomes-tool"),
    ],
)
def test_encode_name(name: str, expected: str) -> None:
    assert encode_name(name) == expected
    assert is_wire(encode_name(name))


def test_long_name_is_cut_with_sha256_suffix() -> None:
    name = "x" * 70
    wire = encode_name(name)
    assert len(wire) == 64
    assert wire == "x" * 55 + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]


def test_long_dotted_name_counts_the_expanded_delimiter() -> None:
    name = ".".join(["segment"] * 10)  # 79 chars once the dots are expanded
    wire = encode_name(name)
    assert len(wire) == 64
    assert is_wire(wire)
    assert wire.startswith("segment-_-segment")


def test_custom_delimiter() -> None:
    assert encode_name("music.search", "__") == "music__search"
    names = WireNames.build(["music.search"], dot_delimiter="DOT")
    assert names.to_wire("music.search") == "musicDOTsearch"
    assert names.dot_delimiter == "DOT"


@pytest.mark.parametrize(
    ("delimiter", "message"),
    [
        pytest.param("", "must not be empty", id="empty"),
        pytest.param("x" * 17, "at most 16", id="too-long"),
        pytest.param(".", "must not contain '.'", id="dot"),
        pytest.param("a.b", "must not contain '.'", id="contains-dot"),
        pytest.param("a b", "may only use", id="space"),
        pytest.param("点", "may only use", id="non-ascii"),
        pytest.param("a\n", "may only use", id="trailing-newline"),
    ],
)
def test_invalid_delimiter_raises(delimiter: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WireNames.build(["a.b"], dot_delimiter=delimiter)
    with pytest.raises(ValueError, match=message):
        encode_name("a.b", delimiter)


def test_sixteen_char_delimiter_is_accepted() -> None:
    assert encode_name("a.b", "-" * 16) == "a" + "-" * 16 + "b"


def test_to_canonical_accepts_wire_and_canonical_spelling() -> None:
    names = WireNames.build(["music.search_songs", "end"])
    assert names.to_canonical("music-_-search_songs") == "music.search_songs"
    assert names.to_canonical("music.search_songs") == "music.search_songs"
    assert names.to_canonical("end") == "end"
    assert names.to_canonical("unknown") is None
    assert names.to_canonical("music_search_songs") is None


@pytest.mark.parametrize(
    ("names", "legal"),
    [
        pytest.param(["a.b", "a-_-b"], "a-_-b", id="dotted-vs-legal-encoded-spelling"),
        pytest.param(["my tool", "my_tool"], "my_tool", id="space-vs-legal"),
        pytest.param(["tool", ""], "tool", id="empty-vs-tool"),
    ],
)
def test_legal_name_keeps_spelling_and_the_other_gets_hash(names: list[str], legal: str) -> None:
    for order in (names, names[::-1]):
        built = WireNames.build(order)
        assert built.to_wire(legal) == legal
        other = next(n for n in names if n != legal)
        wire = built.to_wire(other)
        assert wire != legal
        assert is_wire(wire)
        assert wire.startswith(encode_name(other)[:55] + "_")
        assert built.to_canonical(wire) == other
        assert built.to_canonical(legal) == legal


def test_two_encoded_names_colliding_resolve_independent_of_order() -> None:
    names = ["a b", "a/b", "a:b"]
    first = WireNames.build(names)
    assert first == WireNames.build(reversed(names))
    assert first.to_wire("a b") == "a_b"  # the smallest name keeps the plain spelling
    wires = {first.to_wire(n) for n in names}
    assert len(wires) == 3
    assert all(is_wire(w) for w in wires)


def test_long_names_sharing_a_prefix_stay_distinct() -> None:
    names = ["p" * 70 + str(i) for i in range(50)]
    built = WireNames.build(names)
    wires = [built.to_wire(n) for n in names]
    assert len(set(wires)) == 50
    assert all(len(w) == 64 and is_wire(w) for w in wires)


def test_hash_suffix_collision_with_a_legal_name_is_resolved() -> None:
    # A hostile catalog holds exactly the spelling the hash suffix would produce.
    taken = "a_b_" + hashlib.sha256(b"a/b").hexdigest()[:8]
    built = WireNames.build(["a b", "a/b", taken])
    assert built.to_wire(taken) == taken
    wires = {built.to_wire(n) for n in ("a b", "a/b", taken)}
    assert len(wires) == 3
    assert built.to_canonical(built.to_wire("a/b")) == "a/b"


def test_unknown_names_are_encoded_deterministically_without_stealing() -> None:
    built = WireNames.build(["a.b", "x"])
    assert built.to_wire("c.d") == "c-_-d" == built.to_wire("c.d")
    assert built.to_canonical(built.to_wire("c.d")) is None
    assert built.to_wire("free_name") == "free_name"
    # An unknown name whose encoding is another tool's wire name must not map back to it.
    clash = WireNames.build(["a_b"]).to_wire("a b")
    assert clash != "a_b"
    assert is_wire(clash)
    assert clash == WireNames.build(["a_b"]).to_wire("a b")


def test_duplicates_are_ignored_and_value_is_immutable() -> None:
    built = WireNames.build(["a.b", "a.b", "c"])
    assert len(built) == 2
    assert set(built) == {"a.b", "c"}
    assert "a.b" in built
    assert "a-_-b" not in built
    assert dict(built.canonical_to_wire) == {"a.b": "a-_-b", "c": "c"}
    assert built.pairs == (("a.b", "a-_-b"), ("c", "c"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.dot_delimiter = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        built.canonical_to_wire["c"] = "d"  # type: ignore[index]
    assert hash(built) == hash(WireNames.build(["c", "a.b"]))


def test_ten_thousand_names_build_and_round_trip() -> None:
    names = [f"ns{i % 97}.tool_{i}" for i in range(10_000)]
    built = WireNames.build(names)
    assert len(built) == 10_000
    assert all(built.to_canonical(built.to_wire(n)) == n for n in names)


names_strategy = st.lists(st.text(max_size=80), max_size=30)


@given(names=names_strategy, delimiter=st.sampled_from(["-_-", "__", "-", "DOT"]))
def test_property_round_trip_and_pattern(names: list[str], delimiter: str) -> None:
    built = WireNames.build(names, dot_delimiter=delimiter)
    wires = [built.to_wire(n) for n in set(names)]
    assert len(set(wires)) == len(wires)
    for name in names:
        wire = built.to_wire(name)
        assert is_wire(wire)
        assert built.to_canonical(wire) == name
        assert built.to_canonical(name) == name
        if is_wire(name):
            assert wire == name


@given(names=names_strategy)
def test_property_order_independent(names: list[str]) -> None:
    assert WireNames.build(names) == WireNames.build(sorted(names, reverse=True))


@given(name=st.text(max_size=200))
def test_property_unknown_name_encodes_to_pattern(name: str) -> None:
    built = WireNames.build(["a.b", "tool", "a_b"])
    assert is_wire(built.to_wire(name))
    assert is_wire(encode_name(name))
