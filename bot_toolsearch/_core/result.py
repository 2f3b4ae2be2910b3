"""``ToolSearchResult`` and the reading of a model's ``tool_search`` arguments."""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot_toolsearch._core.unicode import well_formed

from .prompt import ARGUMENTS_NOT_JSON, ARGUMENTS_NOT_OBJECT, QUERY_MISSING, QUERY_NOT_STRING

__all__ = ["ToolSearchResult", "read_arguments", "unfence"]

_FENCE = "```"
_INFO_CHARS = string.ascii_letters + string.digits + "_-"


def unfence(text: str) -> str | None:
    r"""The body of stripped ``text`` that is one Markdown code fence, or None when it is not.

    ``text`` must start and end with three backticks (not overlapping); a language tag
    (``[A-Za-z0-9_-]*``) after the opening fence and whitespace around the body are dropped.
    Plain string operations, so the cost is linear in the text whatever it holds (a regex
    with a lazy group between two ``\s*`` took cubic time on a fence full of spaces).

    >>> unfence('```json\n{"query": "x"}\n```')
    '{"query": "x"}'
    >>> unfence("``` x") is None
    True
    """
    if len(text) < 6 or not text.startswith(_FENCE) or not text.endswith(_FENCE):
        return None
    return text[3:-3].lstrip(_INFO_CHARS).strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSearchResult:
    """The outcome of one ``tool_search`` call, as the model reads it."""

    loaded: tuple[str, ...] = ()
    """Names newly loaded by this call, in rank order; callable from the next model round."""
    already_loaded: tuple[str, ...] = ()
    """Matches loaded before this call (``tool_search`` itself included when named)."""
    not_found: tuple[str, ...] = ()
    """``select:`` names that resolve to nothing, or the keyword query that matched nothing."""
    truncated: bool = False
    """More matches than the effective cap: a repeated search loads the next ones."""
    total_deferred_tools: int = 0
    """The number of initially deferred tools; constant for the session."""
    names: tuple[str, ...] = ()
    """A page of the names in a ``select:namespace.*`` namespace too large to load at once
    (nothing of it is loaded): the model selects the ones it needs; or, when a keyword search
    fell below the no-match floor, the closest tools as hints (not loaded). Omitted when
    empty."""
    next_query: str | None = None
    """The query for the next page of `names`; omitted when there is none."""
    error: str | None = None
    """What the model should send instead, when the arguments were unusable."""

    def to_dict(self) -> dict[str, Any]:
        """The five fixed fields, then ``names`` and ``next_query`` when set, then ``error``.

        A result without namespace listing is exactly the five fields (the wire format
        before namespaces existed).
        """
        out: dict[str, Any] = {
            "loaded": list(self.loaded),
            "already_loaded": list(self.already_loaded),
            "not_found": list(self.not_found),
            "truncated": self.truncated,
            "total_deferred_tools": self.total_deferred_tools,
        }
        if self.names:
            out["names"] = list(self.names)
        if self.next_query is not None:
            out["next_query"] = self.next_query
        if self.error is not None:
            out["error"] = self.error
        return out

    def to_json(self) -> str:
        """Compact JSON (no spaces, non-ASCII kept), the text of the tool result.

        Lone surrogates (a query may echo one the model sent as a JSON escape) become U+FFFD,
        so the text can always be encoded into the next request.
        """
        return well_formed(json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")))


def read_arguments(arguments: object) -> tuple[Mapping[Any, Any] | None, str]:
    """``(arguments, "")`` with a string ``query``, or ``(None, error text for the model)``."""
    value: object = arguments
    if isinstance(arguments, bytes | bytearray):
        try:
            value = bytes(arguments).decode("utf-8")
        except UnicodeDecodeError:
            return None, ARGUMENTS_NOT_JSON
    if isinstance(value, str):
        text = value.strip()
        fenced = unfence(text)
        if fenced is not None:
            text = fenced
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None, ARGUMENTS_NOT_JSON
    if not isinstance(value, Mapping):
        return None, ARGUMENTS_NOT_OBJECT
    if "query" not in value:
        return None, QUERY_MISSING
    if not isinstance(value["query"], str):
        return None, QUERY_NOT_STRING
    return value, ""
