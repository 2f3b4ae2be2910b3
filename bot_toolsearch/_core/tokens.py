"""The one tokenizer shared by the search index and the query parser.

Tool names, parameter names, descriptions and queries all go through the same steps, so a
query term can only ever be compared with an index term that was produced the same way:

1. split into runs of letters and digits (``.``, ``_``, ``-``, spaces and punctuation separate);
2. split camelCase inside a run (``getMemberInfo`` -> ``get member info``, ``HTTPServer`` ->
   ``http server``), *before* case folding, in queries as well as in the index;
3. case-fold, then reduce English words to their Porter stem (``songs`` -> ``song``,
   ``forecasting`` -> ``forecast``, ``locations`` and ``locate`` -> ``locat``);
4. cut Chinese, Japanese and Korean runs into overlapping character bigrams, because those
   languages are written without spaces (``查询城市天气预报`` contains the bigram ``天气``).
   The index also keeps single characters so that a one-character query still matches.

Catalogs repeat the same words and parameter descriptions over and over, so the work per
distinct run of letters is cached: building an index tokenizes each distinct word once.

>>> index_terms("getMemberInfo")
['get', 'member', 'info']
>>> index_terms("music.search_songs")
['music', 'search', 'song']
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain

__all__ = [
    "STOP_WORDS",
    "index_terms",
    "query_terms",
    "release_caches",
    "split_name",
    "stem",
    "text_terms",
]

# Runs of letters and digits; ``_`` is a separator like ``.`` and ``-``.
_RUN = re.compile(r"[^\W_]+")

# Scripts written without spaces between words (plus Hangul, where bigrams do no harm).
_CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003ffff"  # CJK Extensions B and later
)
# A run of CJK characters, or a run of anything else (inside one alphanumeric run).
_SCRIPT_RUN = re.compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")

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

# Runs seen while building indexes; bounded so a hostile catalog cannot grow it forever.
_CACHE_SIZE = 1 << 16
# Whole texts up to this long are cached (bounding what the cache can hold).
_CACHED_TEXT = 1000


def _is_cjk(ch: str) -> bool:
    return _CJK_CHAR.match(ch) is not None


# Where an ASCII run splits: before an upper-case letter that follows a lower-case letter or a
# digit, or that follows another upper-case letter and precedes a lower-case one. Fixed-width
# lookarounds only: linear time.
_ASCII_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _camel_split(run: str) -> list[str]:
    """``getHTTPServer2Go`` -> ``get``, ``HTTP``, ``Server2``, ``Go`` (before case folding)."""
    if run.islower() or run.isupper() or not any(c.isupper() for c in run):
        return [run]
    if run.isascii():
        return _ASCII_CAMEL.split(run)
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


@lru_cache(maxsize=_CACHE_SIZE)
def _run_words(run: str) -> tuple[str, ...]:
    """The case-folded words of one alphanumeric run (CJK runs kept whole)."""
    if run.isascii():
        if run.islower() or run.isdigit():
            return (run,)
        return tuple(part.lower() for part in _camel_split(run))
    out: list[str] = []
    for part in _camel_split(run):
        # Separate CJK runs from Latin/digit runs inside one alphanumeric run.
        out.extend(_SCRIPT_RUN.findall(part.casefold()))
    return tuple(out)


def _words(text: str) -> list[str]:
    """Case-folded words and CJK runs of ``text``, in order (CJK runs are kept whole)."""
    out: list[str] = []
    for run in _RUN.findall(text):
        out.extend(_run_words(run))
    return out


# --- the Porter (1980) stemmer ---------------------------------------------------------------
# Suffix rules of steps 2, 3 and 4; a rule applies when the rest has ``measure`` > 0 (steps 2
# and 3) or > 1 (step 4). Only the longest matching suffix of a step is tried.
_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = (
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ion", "ism", "ate", "iti",
    "ous", "ive", "ize", "al", "er", "ic", "ou",
)  # fmt: skip


_STEP2_ENDS = tuple(suffix for suffix, _ in _STEP2)
_STEP3_ENDS = tuple(suffix for suffix, _ in _STEP3)
# Letters as consonant (c) or vowel (v); ``y`` is resolved by what precedes it.
_CV = str.maketrans({chr(i): "v" if chr(i) in "aeiou" else "y" if chr(i) == "y" else "c"
                     for i in range(128)})  # fmt: skip


def _pattern(word: str) -> str:
    """``word`` (ASCII) as consonants ``c`` and vowels ``v``: ``"tree"`` -> ``"ccvv"``.

    ``y`` is a consonant at the start or after a vowel (``yes``, ``boy``), else a vowel
    (``try``). A letter's class depends only on the letters before it, so the pattern of a
    prefix is the prefix of the pattern.
    """
    pattern = word.translate(_CV)
    if "y" not in pattern:
        return pattern
    out = []
    vowel = False
    for i, letter in enumerate(pattern):
        kind = ("c" if i == 0 or vowel else "v") if letter == "y" else letter
        out.append(kind)
        vowel = kind == "v"
    return "".join(out)


def _measure(stem_: str) -> int:
    """Porter's *m*: the number of vowel-consonant sequences in ``stem_``."""
    return _pattern(stem_).count("vc")


def _has_vowel(stem_: str) -> bool:
    return "v" in _pattern(stem_)


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _pattern(word)[-1] == "c"


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not ``w``, ``x`` or ``y`` (``hop``, not ``how``)."""
    return len(word) >= 3 and word[-1] not in "wxy" and _pattern(word).endswith("cvc")


def _step1(w: str) -> str:
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"  # conflated -> conflate
            if _double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]  # hopping -> hop, but falling -> fall
            if _measure(w) == 1 and _cvc(w):
                return w + "e"  # filing -> file
            return w
    return w


def _replace(w: str, rules: tuple[tuple[str, str], ...], ends: tuple[str, ...]) -> str:
    if not w.endswith(ends):  # most words: no rule of the step applies
        return w
    for suffix, replacement in rules:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            return base + replacement if _measure(base) > 0 else w
    return w


def _porter(word: str) -> str:
    w = _step1(word)
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"  # happy -> happi, so that happiness meets it
    w = _replace(w, _STEP2, _STEP2_ENDS)
    w = _replace(w, _STEP3, _STEP3_ENDS)
    if w.endswith(_STEP4):
        for suffix in _STEP4:
            if w.endswith(suffix):
                base = w[: -len(suffix)]
                if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                    w = base
                break
    if w.endswith("e"):
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


@lru_cache(maxsize=_CACHE_SIZE)
def stem(word: str) -> str:
    """The Porter stem of a case-folded English word; other words pass unchanged.

    Inflections and common derivations meet at one stem on both sides of a comparison. A stem
    that would collide with a stop word keeps the word whole (``one`` would become ``on``).

    >>> [stem(w) for w in ("songs", "song", "forecasting", "forecast", "cities", "city")]
    ['song', 'song', 'forecast', 'forecast', 'citi', 'citi']
    >>> [stem(w) for w in ("created", "creates", "creating", "create", "string", "one")]
    ['creat', 'creat', 'creat', 'creat', 'string', 'one']
    """
    if len(word) < 3 or not word.isascii() or not word.isalpha():
        return word
    result = _porter(word)
    return word if result in STOP_WORDS else result


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


def _terms_of_run(run: str) -> tuple[str, ...]:
    """The index terms of one alphanumeric run."""
    if run.isascii():  # nearly every run (and never CJK)
        if run.islower() or run.isdigit():  # most runs: one plain word
            return (stem(run),)
        if run[1:].islower() or run.isupper():  # ``Word``, ``WORD``: nowhere to split
            return (stem(run.lower()),)
        return tuple(stem(part.lower()) for part in _ASCII_CAMEL.split(run))
    terms: list[str] = []
    for word in _run_words(run):
        if _is_cjk(word[0]):
            terms.extend(_cjk_grams(word, unigrams=True))
        else:
            terms.append(stem(word))
    return tuple(terms)


class _RunTerms(dict[str, tuple[str, ...]]):
    """Alphanumeric run -> its index terms, computed on the first lookup of each run.

    A plain dict looked up from C (``map(runs.__getitem__, ...)``): a catalog's texts hold
    about a million runs but only tens of thousands of distinct ones, so the lookup, not the
    stemming, is the cost per word. Bounded: past `_CACHE_SIZE` runs, new ones are computed
    each time instead of kept.
    """

    __slots__ = ()

    def __missing__(self, run: str) -> tuple[str, ...]:
        terms = _terms_of_run(run)
        if len(self) < _CACHE_SIZE:
            self[run] = terms
        return terms


_run_terms = _RunTerms()


def index_terms(text: str) -> list[str]:
    """Every term of ``text`` as stored in the index (stop words included)."""
    return list(text_terms(text))


class _TextTerms(dict[str, tuple[str, ...]]):
    """Whole text -> its terms, like `_RunTerms`: catalogs repeat the same parameter
    descriptions (``"The project ID."``) thousands of times, and a lookup from C costs no
    Python call. Texts up to 1,000 characters are kept, at most `_CACHE_SIZE` of them."""

    __slots__ = ()

    def __missing__(self, text: str) -> tuple[str, ...]:
        terms = _text_terms(text)
        if len(text) <= _CACHED_TEXT and len(self) < _CACHE_SIZE:
            self[text] = terms
        return terms


_texts = _TextTerms()
text_terms = _texts.__getitem__
"""`index_terms` as a tuple, cached per whole text up to 1,000 characters (the same tuple
object for the same text while it is cached)."""


# ASCII letters and digits kept, every other ASCII byte a separator: `_RUN` for ASCII text.
_ASCII_RUNS = bytes(c if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(256))


def _runs(text: str) -> list[str]:
    """``_RUN.findall(text)``; ASCII text (nearly every catalog text) is split by a byte
    table instead of the regular expression, several times faster."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_RUNS).decode("ascii").split()
    return _RUN.findall(text)


def _text_terms(text: str) -> tuple[str, ...]:
    # Whitespace and punctuation always separate runs, so each run's terms can be looked up
    # on their own: catalogs repeat the same words far more often than whole texts.
    return tuple(chain.from_iterable(map(_run_terms.__getitem__, _runs(text))))


def release_caches() -> None:
    """Empty the per-word caches (a catalog build fills them with up to ~10 MB of words it
    will not look up again; queries refill what they use)."""
    _run_words.cache_clear()
    stem.cache_clear()
    _run_terms.clear()
    _texts.clear()


def query_terms(text: str) -> tuple[list[str], list[str]]:
    """The terms of a query, as ``(content_terms, stop_terms)``, each de-duplicated in order.

    A stop word counts for nothing while the query has any other term; a query made only of
    stop words is searched with them.

    >>> query_terms("the weather forecasts")
    (['weather', 'forecast'], ['the'])
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
