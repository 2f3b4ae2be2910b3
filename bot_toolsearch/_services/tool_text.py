"""The text a tool is embedded as: short, in words, so a catalog embeds fast and reads well.

A model's cost grows with every token, and a tool's identifier is the costliest part of its
text: ``dlp.projects.deidentifyTemplates.create`` is a dozen word pieces that say no more
than ``create (in dlp projects deidentify templates)``. So the name is given once, in
lower-case words (split as the search index splits names), with its namespace; then the
description without its links (``See https://... to learn more`` is many pieces and no
meaning); then the parameter names, in words. Everything here is linear in the text (the
index's tokenizer has no backtracking pattern), so a hostile catalog costs what its length
costs.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot_toolsearch._core.tokens import split_name

__all__ = ["MAX_TEXT_CHARS", "tool_text", "words"]

MAX_TEXT_CHARS = 2000
"""Longest text embedded (the model reads only its first ``max_tokens`` tokens anyway)."""
_LINK = "://"


def words(identifier: str) -> str:
    """``identifier`` in lower-case words, split as the search index splits names
    (`split_name`: at ``_ - . / :`` and at camelCase humps).

    >>> words("deidentifyTemplates.HTTPServer_v2")
    'deidentify templates http server v2'
    >>> words("__get_all_user_list")
    'get all user list'
    """
    return " ".join(split_name(identifier))


def _without_links(text: str) -> str:
    """``text`` with its whitespace collapsed and every word holding a link left out."""
    return " ".join(w for w in text.split() if _LINK not in w and not w.startswith("www."))


def tool_text(name: str, description: str, parameters: Sequence[str]) -> str:
    """The text a tool is embedded as: its name in words with its namespace, description
    (links left out) and parameter names in words.

    >>> tool_text("geo.get_area", "Area of a shape [docs](https://x.org/a).", ["unitName"])
    'get area (in geo). Area of a shape Parameters: unit name.'
    >>> tool_text("__book_room", "", [])
    'book room.'
    """
    namespace, _, leaf = name.rpartition(".")
    text = words(leaf) or name
    if namespace and (where := words(namespace)):
        text += f" (in {where})"
    text += "."
    if description := _without_links(description):
        text += f" {description}"
    if names := [w for w in (words(p) for p in parameters) if w]:
        text += f" Parameters: {', '.join(names)}."
    return text[:MAX_TEXT_CHARS]
