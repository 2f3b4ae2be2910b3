"""The one tokenizer shared by the search index and the query parser.

Tool names, parameter names, descriptions and queries all go through the same steps, so a
query term can only ever be compared with an index term that was produced the same way:

1. split into runs of letters and digits (``.``, ``_``, ``-``, spaces and punctuation separate);
2. split camelCase inside a run (``getMemberInfo`` -> ``get member info``, ``HTTPServer`` ->
   ``http server``), *before* case folding, in queries as well as in the index;
3. case-fold, then reduce English inflections with a light stemmer (``songs`` -> ``song``,
   ``forecasting`` -> ``forecast``);
4. cut Chinese, Japanese and Korean runs into overlapping character bigrams, because those
   languages are written without spaces (``查询城市天气预报`` contains the bigram ``天气``).
   The index also keeps single characters so that a one-character query still matches.

>>> index_terms("getMemberInfo")
['get', 'member', 'info']
>>> index_terms("music.search_songs")
['music', 'search', 'song']
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "index_terms", "query_terms", "split_name", "stem"]

# Runs of letters and digits; ``_`` is a separator like ``.`` and ``-``.
_RUN = re.compile(r"[^\W_]+")

# Scripts written without spaces between words (plus Hangul, where bigrams do no harm).
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3FFFF),  # CJK Extensions B and later
)

_STOP_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each either
    else etc ever few for from further had has have having he her here hers herself him himself
    his how i if in into is it its itself just let lets may me might more most must my myself no
    nor not now of off on once only or other our ours ourselves out over own please same shall
    she should so some such than that the their theirs them themselves then there these they
    this those through thus to too under until up us very via was we were what when where which
    while who whom whose why will with within without would yet you your yours yourself
    yourselves s t d ll m re ve
"""

STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())
"""English words that carry no meaning for tool search; a query term in this set scores 0."""


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def _camel_split(run: str) -> list[str]:
    """``getHTTPServer2Go`` -> ``get``, ``HTTP``, ``Server2``, ``Go`` (before case folding)."""
    if run.islower() or run.isupper() or not any(c.isupper() for c in run):
        return [run]
    parts: list[str] = []
    start = 0
    for i in range(1, len(run)):
        prev, cur = run[i - 1], run[i]
        nxt = run[i + 1] if i + 1 < len(run) else ""
        if cur.isupper() and (
            prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower())
        ):
            parts.append(run[start:i])
            start = i
    parts.append(run[start:])
    return parts


def _vowel_in(text: str) -> bool:
    return any(c in "aeiouy" for c in text)


def stem(word: str) -> str:
    """Reduce a case-folded English word to a light stem; other words pass unchanged.

    Only inflections are removed (plural ``-s``/``-es``/``-ies``, ``-ing``, ``-ed``, a final
    ``-e``), so both sides of a comparison meet at the same stem:

    >>> [stem(w) for w in ("songs", "song", "forecasting", "forecast", "cities", "city")]
    ['song', 'song', 'forecast', 'forecast', 'city', 'city']
    >>> [stem(w) for w in ("created", "creates", "creating", "create", "string")]
    ['creat', 'creat', 'creat', 'creat', 'string']
    """
    if len(word) < 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if not w.endswith(suffix) or w.endswith("eed"):
            continue
        base = w[: -len(suffix)]
        # "string" keeps its "ing": without a vowel the rest is not a word stem.
        if len(base) >= 2 and _vowel_in(base):
            w = base
            if len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "aeioulsz":
                w = w[:-1]  # shipping -> ship, but calling -> call
            elif suffix == "ed" and w.endswith("i"):
                w = w[:-1] + "y"  # applied -> apply
        break
    if len(w) >= 3 and w.endswith("e") and not w.endswith("ee"):
        w = w[:-1]
    return w


def _words(text: str) -> list[str]:
    """Case-folded words and CJK runs of ``text``, in order (CJK runs are kept whole)."""
    out: list[str] = []
    for match in _RUN.finditer(text):
        for part in _camel_split(match.group()):
            start = 0
            folded = part.casefold()
            # Separate CJK runs from Latin/digit runs inside one alphanumeric run.
            kind = None
            for i, ch in enumerate(folded):
                cjk = _is_cjk(ch)
                if kind is not None and cjk != kind:
                    out.append(folded[start:i])
                    start = i
                kind = cjk
            if start < len(folded):
                out.append(folded[start:])
    return out


def _cjk_grams(run: str, *, unigrams: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    grams = [run[i : i + 2] for i in range(len(run) - 1)]
    return [*grams, *run] if unigrams else grams


def split_name(name: str) -> list[str]:
    """A tool or parameter name as case-folded parts, without stemming.

    >>> split_name("music.searchSongs_v2")
    ['music', 'search', 'songs', 'v2']
    """
    return _words(name)


def index_terms(text: str) -> list[str]:
    """Every term of ``text`` as stored in the index (stop words included)."""
    terms: list[str] = []
    for word in _words(text):
        if _is_cjk(word[0]):
            terms.extend(_cjk_grams(word, unigrams=True))
        else:
            terms.append(stem(word))
    return terms


def query_terms(text: str) -> tuple[list[str], list[str]]:
    """The terms of a query, as ``(content_terms, stop_terms)``, each de-duplicated in order.

    A stop word counts for nothing while the query has any other term; a query made only of
    stop words is searched with them.

    >>> query_terms("the weather forecasts")
    (['weather', 'forecast'], ['th'])
    """
    content: list[str] = []
    stops: list[str] = []
    for word in _words(text):
        if _is_cjk(word[0]):
            grams = _cjk_grams(word, unigrams=False)
            content.extend(g for g in grams if g not in content)
            continue
        term = stem(word)
        bucket = stops if word in STOP_WORDS else content
        if term not in bucket:
            bucket.append(term)
    return content, stops
