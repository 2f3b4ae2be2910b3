"""Canonical <-> wire tool-name encoding for providers that allow only ``[A-Za-z0-9_-]{1,64}``.

OpenAI function names must match ``^[A-Za-z0-9_-]{1,64}$``, but our canonical names may be
dotted (``music.search_songs``) or contain anything a tool author wrote. This module is the one
place that maps between the two spellings (G10): the core only sees canonical names, the wire
adapters only encoded ones. The map is an immutable value built once per catalog and delimiter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bot_toolsearch._config.settings import (
    DEFAULT_DOT_DELIMITER,
    DELIMITER_PATTERN,
    MAX_DOT_DELIMITER_LENGTH,
)

__all__ = [
    "DEFAULT_DOT_DELIMITER",
    "MAX_WIRE_NAME_LENGTH",
    "WIRE_NAME_PATTERN",
    "WireNames",
    "encode_foreign_name",
    "encode_name",
    "validate_dot_delimiter",
]

WIRE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a provider accepts as a function name. Use ``fullmatch``: ``$`` also matches before a
trailing newline."""

MAX_WIRE_NAME_LENGTH = 64
_HASH_HEX = 8
# A hashed name is ``<stem>_<8 hex>``; the stem is cut so the whole stays within the limit.
_STEM_LENGTH = MAX_WIRE_NAME_LENGTH - 1 - _HASH_HEX
_DELIMITER_PATTERN = re.compile(DELIMITER_PATTERN)
# Dots are kept here and replaced by the delimiter afterwards; everything else illegal
# (non-ASCII letters too, which ``str.isalnum`` would let through) becomes ``_``.
_ILLEGAL = re.compile(r"[^A-Za-z0-9_.-]")


def validate_dot_delimiter(dot_delimiter: str) -> str:
    """Check a ``[tools] dot_delimiter`` value and return it unchanged.

    Args:
        dot_delimiter: the text that replaces each ``.`` of a canonical name on the wire.

    Returns:
        The delimiter itself.

    Raises:
        ValueError: it is not a string, is empty, is longer than 16 characters, or has a
            character outside ``[A-Za-z0-9_-]`` (a dot included).
    """
    if not isinstance(dot_delimiter, str):
        raise ValueError(f"dot_delimiter must be a string, got {type(dot_delimiter).__name__}")
    if not dot_delimiter:
        raise ValueError("dot_delimiter must not be empty (the default is '-_-')")
    if len(dot_delimiter) > MAX_DOT_DELIMITER_LENGTH:
        raise ValueError(
            f"dot_delimiter must be at most {MAX_DOT_DELIMITER_LENGTH} characters, "
            f"got {len(dot_delimiter)}: {dot_delimiter!r}"
        )
    if "." in dot_delimiter:
        raise ValueError(f"dot_delimiter must not contain '.', got {dot_delimiter!r}")
    if not _DELIMITER_PATTERN.fullmatch(dot_delimiter):
        raise ValueError(
            f"dot_delimiter may only use the characters A-Z, a-z, 0-9, '_' and '-', "
            f"got {dot_delimiter!r}"
        )
    return dot_delimiter


def _is_wire_legal(name: str) -> bool:
    return WIRE_NAME_PATTERN.fullmatch(name) is not None


def _short_hash(canonical: str, salt: int = 0) -> str:
    data = canonical if salt == 0 else f"{canonical}\x00{salt}"
    # surrogatepass: a hostile name may hold lone surrogates, which plain UTF-8 refuses.
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]


def _hashed(base: str, canonical: str, salt: int = 0) -> str:
    return f"{base[:_STEM_LENGTH]}_{_short_hash(canonical, salt)}"


def encode_name(name: str, dot_delimiter: str = DEFAULT_DOT_DELIMITER) -> str:
    """Encode one canonical name for the wire, without looking at any other name.

    Legal names pass unchanged. Otherwise: surrounding whitespace is stripped (an empty name
    becomes ``tool``), each ``.`` becomes the delimiter, every other character outside
    ``[A-Za-z0-9_-]`` becomes ``_``, and a result over 64 characters is cut and gets ``_`` plus
    8 hex digits of the SHA-256 of the canonical name. Collisions are only resolved by
    :meth:`WireNames.build`.

    >>> encode_name("music.search_songs")
    'music-_-search_songs'
    >>> encode_name("天气 forecast")
    '___forecast'

    Args:
        name: the canonical tool name.
        dot_delimiter: what replaces each dot; validated.

    Returns:
        A name that matches :data:`WIRE_NAME_PATTERN`.

    Raises:
        ValueError: the delimiter is invalid (see :func:`validate_dot_delimiter`).
    """
    validate_dot_delimiter(dot_delimiter)
    return _encode(name, dot_delimiter)


def _encode(name: str, dot_delimiter: str) -> str:
    if _is_wire_legal(name):
        return name
    wire = _ILLEGAL.sub("_", name.strip()).replace(".", dot_delimiter) or "tool"
    if len(wire) > MAX_WIRE_NAME_LENGTH:
        wire = _hashed(wire, name)
    return wire


def encode_foreign_name(name: str) -> str:
    """A wire-legal spelling for a name that is no tool of this request (as a model wrote it).

    Used for the history's record of calls to unknown or forbidden tools. Unlike `to_wire`
    it never consults the catalog's map: a legal name stays as the model sent it, and an
    illegal one has every character outside ``[A-Za-z0-9_-]`` (dots included) replaced by
    ``_``. So a forbidden tool's canonical spelling never turns into that tool's wire name,
    which would tell the model the tool exists.

    >>> encode_foreign_name("music.play"), encode_foreign_name("music-_-play")
    ('music_play', 'music-_-play')
    """
    if _is_wire_legal(name):
        return name
    wire = _ILLEGAL.sub("_", name.strip()).replace(".", "_") or "tool"
    return _hashed(wire, name) if len(wire) > MAX_WIRE_NAME_LENGTH else wire


@dataclass(frozen=True, slots=True)
class WireNames:
    """Reversible canonical <-> wire tool-name mapping for one catalog and one dot delimiter.

    Build it with :meth:`build`. Every wire name is unique and matches
    :data:`WIRE_NAME_PATTERN`. A name that is already legal keeps its spelling; an encoded name
    that collides with another tool's name (legal or encoded) gets a hash suffix. Which name
    keeps the plain spelling does not depend on the input order.

    >>> names = WireNames.build(["music.search_songs", "end"])
    >>> names.to_wire("music.search_songs")
    'music-_-search_songs'
    >>> names.to_canonical("music-_-search_songs"), names.to_canonical("music.search_songs")
    ('music.search_songs', 'music.search_songs')
    """

    dot_delimiter: str
    """The text that replaces each ``.`` on the wire."""
    pairs: tuple[tuple[str, str], ...]
    """Every ``(canonical, wire)`` pair, sorted by canonical name."""
    _wire_of: Mapping[str, str] = field(repr=False, compare=False)
    _canonical_of: Mapping[str, str] = field(repr=False, compare=False)
    _folded: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    @classmethod
    def build(
        cls, canonical_names: Iterable[str], *, dot_delimiter: str = DEFAULT_DOT_DELIMITER
    ) -> WireNames:
        """Build the map for a catalog's names.

        Args:
            canonical_names: the catalog's canonical names; duplicates are ignored.
            dot_delimiter: what replaces each dot on the wire.

        Returns:
            The immutable map.

        Raises:
            ValueError: the delimiter is invalid (see :func:`validate_dot_delimiter`).
        """
        validate_dot_delimiter(dot_delimiter)
        unique = set(canonical_names)
        wire_of: dict[str, str] = {}
        canonical_of: dict[str, str] = {}
        # Legal names claim their own spelling first, so an encoded name can never take it.
        pending: list[str] = []
        for name in unique:
            if _is_wire_legal(name):
                wire_of[name] = name
                canonical_of[name] = name
            else:
                pending.append(name)
        # Sorted, so the same set of names always resolves collisions the same way.
        pending.sort()
        for name in pending:
            base = wire = _encode(name, dot_delimiter)
            salt = 0
            while wire in canonical_of:
                wire = _hashed(base, name, salt)
                salt += 1
            wire_of[name] = wire
            canonical_of[wire] = name
        lookup = dict(canonical_of)
        # Canonical spellings are looked up too (a model may call ``music.search`` directly).
        # They never clash with wire names: those are legal, and legal names map to themselves.
        for name in pending:
            lookup[name] = name
        pairs = tuple(sorted(wire_of.items()))
        # Wire spellings ignoring case; of several, the first canonical name in
        # ``(casefold, name)`` order wins, as in the catalog's case-insensitive rule.
        folded: dict[str, str] = {}
        for name in sorted(wire_of, key=lambda n: (n.casefold(), n)):
            folded.setdefault(wire_of[name].casefold(), name)
        return cls(
            dot_delimiter,
            pairs,
            MappingProxyType(wire_of),
            MappingProxyType(lookup),
            MappingProxyType(folded),
        )

    def to_wire(self, canonical: str) -> str:
        """The wire spelling of a canonical name.

        A name outside the map is encoded best-effort and deterministically: with
        :func:`encode_name`, plus a hash suffix when that spelling belongs to another tool.

        Args:
            canonical: a canonical tool name.

        Returns:
            A name that matches :data:`WIRE_NAME_PATTERN`.
        """
        wire = self._wire_of.get(canonical)
        if wire is not None:
            return wire
        base = wire = _encode(canonical, self.dot_delimiter)
        salt = 0
        while self._canonical_of.get(wire, canonical) != canonical:
            wire = _hashed(base, canonical, salt)
            salt += 1
        return wire

    def to_canonical(self, wire: str) -> str | None:
        """The canonical name for a wire or canonical spelling.

        Args:
            wire: a name as the model wrote it: encoded (``music-_-search``) or canonical
                (``music.search``).

        Returns:
            The canonical name, or ``None`` when the name is not in the map.
        """
        return self._canonical_of.get(wire)

    def to_canonical_folded(self, wire: str) -> str | None:
        """The canonical name whose wire spelling equals ``wire`` ignoring case, or ``None``.

        >>> WireNames.build(["bank.transfer"]).to_canonical_folded("BANK-_-TRANSFER")
        'bank.transfer'
        """
        return self._folded.get(wire.casefold())

    @property
    def canonical_to_wire(self) -> Mapping[str, str]:
        """Read-only ``canonical -> wire`` view."""
        return self._wire_of

    def __len__(self) -> int:
        return len(self._wire_of)

    def __contains__(self, canonical: object) -> bool:
        return canonical in self._wire_of

    def __iter__(self) -> Iterator[str]:
        return iter(self._wire_of)
