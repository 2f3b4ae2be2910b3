"""What the offline model adds to a Chinese message's search: English topic words.

A real model asked in Chinese about tools described in English searches in English
(``北京现在几点`` becomes ``time now``). The offline planner has no language model, so it looks
the message's common topic words up in this small glossary. It is the stand-in model's
vocabulary, not the search engine's: `ToolCatalog` gets no synonyms, and a Chinese query
still finds Chinese descriptions through character bigrams.
"""

from __future__ import annotations

from ._data import load_json

__all__ = ["english_glosses"]

# ``data/glossary.json``: every entry found in the message adds its words (歌词 adds "lyrics"
# and, through 歌, "song"); the order only decides the order of the words.
_GLOSSARY: tuple[tuple[str, str], ...] = tuple(
    (chinese, english) for chinese, english in load_json("glossary.json")
)


def english_glosses(text: str) -> list[str]:
    """English topic words for the glossary entries found in ``text``, in glossary order."""
    words: list[str] = []
    for chinese, english in _GLOSSARY:
        if chinese in text:
            words.extend(english.split())
    return list(dict.fromkeys(words))
