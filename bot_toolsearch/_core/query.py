"""Parses a ``tool_search`` query: ``select:``, ``ns.*``, a full name, keywords, ``+required``.

Parsing is pure text work. Whether a keyword query is in fact a full tool name is decided by
the session, which knows the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .tokens import query_terms

__all__ = [
    "MAX_KEYWORD_CHARS",
    "MAX_SELECT_NAMES",
    "KeywordQuery",
    "NamespaceItem",
    "SelectQuery",
    "echo",
    "namespace_item",
    "parse_query",
]

MAX_KEYWORD_CHARS = 1000
"""Only this much of a keyword query is tokenised: real queries are a few words, and a
hostile model must not make one search cost more than a bounded amount of work."""
MAX_SELECT_NAMES = 256
"""Items of a ``select:`` list beyond this many are ignored (the result cap is far smaller)."""
_ECHO_CHARS = 200


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
    >>> parse_query("getWeather +city").terms
    ('city', 'get', 'weather')
    """
    text = query.strip()
    select = _SELECT.fullmatch(text)
    if select is not None:
        items = tuple(item for item in _SELECT_SEPARATORS.split(select.group(1)) if item)
        items = items[:MAX_SELECT_NAMES]
        return SelectQuery(text=text, names=items)
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
