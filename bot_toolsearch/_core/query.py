"""Parses a ``tool_search`` query: ``select:``, ``ns.*``, a full name, keywords, ``+required``.

Parsing is pure text work. Whether a keyword query is in fact a full tool name is decided by
the session, which knows the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .tokens import query_terms

__all__ = [
    "DEFAULT_WIRE_DELIMITER",
    "MAX_KEYWORD_CHARS",
    "MAX_SELECT_NAMES",
    "KeywordQuery",
    "NameDecoder",
    "NamespaceItem",
    "SelectQuery",
    "decode_default_wire_name",
    "echo",
    "namespace_item",
    "parse_query",
    "select_items",
]

MAX_KEYWORD_CHARS = 1000
"""Only this much of a keyword query is tokenised: real queries are a few words, and a
hostile model must not make one search cost more than a bounded amount of work."""
MAX_SELECT_NAMES = 256
"""Items of a ``select:`` list beyond this many are ignored (the result cap is far smaller)."""
_ECHO_CHARS = 200

DEFAULT_WIRE_DELIMITER = "-_-"
"""What replaces each ``.`` of a tool name on the wire unless ``[tools] dot_delimiter`` says
otherwise (the transports' ``DEFAULT_DOT_DELIMITER``; the core cannot import them)."""

NameDecoder = Callable[[str], str | None]
"""Turns a name as the model wrote it (a wire spelling, ``weather-_-forecast``) into a
canonical name, or ``None``; e.g. ``WireNames.to_canonical``."""


def decode_default_wire_name(name: str) -> str | None:
    """The canonical spelling of a wire name encoded with the default delimiter, or ``None``.

    >>> decode_default_wire_name("weather-_-forecast"), decode_default_wire_name("end")
    ('weather.forecast', None)
    """
    return name.replace(DEFAULT_WIRE_DELIMITER, ".") if DEFAULT_WIRE_DELIMITER in name else None


def echo(text: str) -> str:
    """``text`` as the result may repeat it to the model: at most 200 characters.

    >>> len(echo("x" * 5000))
    201
    """
    return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS] + "…"


_SELECT = re.compile(r"select\s*:(.*)", re.IGNORECASE | re.DOTALL)
_SELECT_SEPARATORS = re.compile(r"[,\s]+")


@dataclass(frozen=True, slots=True)
class NamespaceItem:
    """``github.*`` (page 1) or ``github.*:3`` (page 3): a namespace's tools."""

    namespace: str
    """The namespace as written (``github``)."""
    page: int
    """The 1-based page of names wanted when the namespace is larger than the result cap."""


_MAX_PAGE_DIGITS = 6


def namespace_item(item: str) -> NamespaceItem | None:
    """The namespace a ``select:`` item names, or ``None`` for a plain tool name.

    >>> namespace_item("github.*"), namespace_item("github.*:2"), namespace_item("github.x")
    (NamespaceItem(namespace='github', page=1), NamespaceItem(namespace='github', page=2), None)
    """
    head, page = item, "1"
    if not head.endswith(".*"):
        head, _, page = item.rpartition(":")
        if not head.endswith(".*") or not page.isascii() or not page.isdigit():
            return None
        if len(page) > _MAX_PAGE_DIGITS:
            page = "9" * _MAX_PAGE_DIGITS
    namespace = head[:-2]
    if not namespace or namespace.endswith(".") or int(page) < 1:
        return None
    return NamespaceItem(namespace, int(page))


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectQuery:
    """``select:a,b c``: exact names, separated by commas and/or whitespace."""

    text: str
    """The whole stripped query."""
    names: tuple[str, ...]
    """The non-empty items in query order, as written (duplicates kept)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeywordQuery:
    """Anything else: a full tool name or keywords."""

    text: str
    """The whole stripped query (may be a full tool name; empty for an empty query)."""
    terms: tuple[str, ...]
    """Scoring terms, required ones first, each once."""
    required: tuple[str, ...]
    """Terms every match must contain (from ``+term`` tokens)."""


def select_items(query: str) -> tuple[str, ...] | None:
    """The items of a ``select:`` query as written, or ``None`` for any other query.

    The one reading of the ``select:`` form (case-insensitive keyword, items separated by
    commas and/or whitespace, empty items dropped, duplicates kept).

    >>> select_items(" Select: a,,b  c ")
    ('a', 'b', 'c')
    >>> select_items("weather") is None
    True
    """
    select = _SELECT.fullmatch(query.strip())
    if select is None:
        return None
    return tuple(item for item in _SELECT_SEPARATORS.split(select.group(1)) if item)


def parse_query(query: str) -> SelectQuery | KeywordQuery:
    """Parse a ``tool_search`` query string.

    Keywords are split on whitespace; each is then split like a tool name (``.``, ``_``, ``-``
    and camelCase separate words) and normalised by the shared tokenizer. A token ``+word``
    (longer than the ``+``) makes the terms of ``word`` required. Stop words are dropped unless
    the query has nothing else.

    A ``select:`` item ``namespace.*`` (or ``namespace.*:N`` for page ``N``) names a namespace
    (`namespace_item`); a query that is only such an item means ``select:`` it.

    >>> parse_query("select: a, B c")
    SelectQuery(text='select: a, B c', names=('a', 'B', 'c'))
    >>> parse_query("github.*")
    SelectQuery(text='github.*', names=('github.*',))

    Terms are the tokenizer's stems (``city`` becomes ``citi``, as the index stores it):

    >>> parse_query("getWeather +city").terms
    ('citi', 'get', 'weather')
    """
    text = query.strip()
    items = select_items(text)
    if items is not None:
        return SelectQuery(text=text, names=items[:MAX_SELECT_NAMES])
    if text and not any(c.isspace() for c in text) and namespace_item(text) is not None:
        return SelectQuery(text=text, names=(text,))  # a bare ``github.*``
    required_words: list[str] = []
    optional_words: list[str] = []
    for token in text[:MAX_KEYWORD_CHARS].split():
        if token.startswith("+") and len(token) > 1:
            required_words.append(token[1:])
        else:
            optional_words.append(token)
    required: list[str] = []
    for word in required_words:
        content, stops = query_terms(word)
        # An explicit +term is required even when it is a stop word.
        required.extend(t for t in (*content, *stops) if t not in required)
    content, stops = query_terms(" ".join(optional_words))
    optional = content if content or required else stops
    terms = [*required, *(t for t in optional if t not in required)]
    return KeywordQuery(text=text, terms=tuple(terms), required=tuple(required))
