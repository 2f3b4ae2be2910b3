"""How the offline demo model reads a message: content words and how well a tool fits it.

Plain, deterministic heuristics; no learning, no randomness. Good enough to drive a demo and
honest about it: the planner that uses them is labelled an offline stand-in for a real model.
Arguments are read from the message by `._arguments`, which builds on the patterns here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CLOCK",
    "DATE",
    "EXPRESSION",
    "QUOTED",
    "content_words",
    "has_expression",
    "score_tool",
    "terms",
]

_STOP_WORDS = (
    "a an the is are was be to of in on at for from by with and or not what whats which who "
    "how much many me my i you your it its this that these those do does can could would "
    "please tell show give get find use using into as than then there here some any about "
    "now want need let lets just also"
)
_STOP = frozenset(_STOP_WORDS.split())
# Chinese filler that carries no topic ("help me", "please", "a bit", particles).
_ZH_FILLER = re.compile(r"帮我|请|一下|看看|查查|给我|我们|我的|吗|呢|吧|了|的|是|你|我|把|告诉")
# Everyday words whose topic a model names when it searches: "will it rain" asks for the
# weather forecast. The stand-in model's vocabulary, not the search engine's.
_RAIN_WORDS = ("rain", "raining", "rainy", "snow", "snowing", "sunny", "umbrella", "storm")
_IMPLIED: dict[str, tuple[str, ...]] = dict.fromkeys(_RAIN_WORDS, ("weather", "forecast"))
_WEATHER_KINDS = frozenset(
    {"forecast", "tomorrow", "week", "weekend", "days", "alert", "alerts", "warning", "storm"}
    | {"warnings", "storms", "historical", "yesterday", "past", "last", "air", "quality"}
)
"""Words that ask for weather other than the current conditions."""
# "right now" asks for what is current (the weather now is weather.current, not its alerts).
_IMPLIED.update(dict.fromkeys(("now", "currently", "current"), ("current",)))
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[\u3400-\u9fff]+")
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|'([^']{2,})'")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b")
EXPRESSION = re.compile(
    r"(?:sqrt|log10|log2|log|sin|cos|tan|exp|abs|pi|\d+(?:\.\d+)?|[-+*/^%()\u00d7\u00f7]|\s)+"
)


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """Comparable terms of a text: stemmed lower-case words and CJK character bigrams."""
    out: set[str] = set()
    for word in _WORD.findall(text.replace("_", " ").replace(".", " ")):
        if word[0] >= "\u3400":
            run = _ZH_FILLER.sub(" ", word)
            for piece in run.split():
                out.update(piece[i : i + 2] for i in range(max(len(piece) - 1, 1)))
        elif word.lower() not in _STOP:
            out.add(_stem(word.lower()))
    return out


def has_expression(text: str) -> bool:
    """Whether the text contains an arithmetic expression such as ``(2 + 3) * 4``."""
    # Dates and clock times are not subtraction or division.
    plain = CLOCK.sub(" ", DATE.sub(" ", text))
    return any(re.search(r"\d\s*[-+*/^%]\s*[\d(]", m.group(0)) for m in EXPRESSION.finditer(plain))


def content_words(text: str, limit: int = 6) -> list[str]:
    """The message's topic words in order, without stop words and Chinese filler."""
    # A model asked to work out a formula looks for a calculator, whatever the formula says.
    words: list[str] = ["calculate", "expression"] if has_expression(text) else []
    implied: list[str] = []
    for word in _WORD.findall(QUOTED.sub(" ", text)):
        if word[0] >= "\u3400":
            words.extend(_ZH_FILLER.sub(" ", word).split())
        else:
            implied.extend(_IMPLIED.get(word.lower(), ()))  # "now" is a stop word, yet implies
            if word.lower() not in _STOP and len(word) > 1:
                words.append(word.lower())
    # "weather in Bergen", with no word of another time or kind, asks for the weather now.
    if "weather" in words and not {*words, *implied} & _WEATHER_KINDS:
        implied.append("current")
    # The topic a model would search for comes first ("rain" is a weather question).
    return list(dict.fromkeys([*implied, *words]))[:limit]


def score_tool(message_terms: set[str], schema: Mapping[str, Any]) -> float:
    """How well a tool schema (Chat Completions shape) fits the message terms."""
    function = schema.get("function", schema)
    name = str(function.get("name", ""))
    params = function.get("parameters") or {}
    properties = params.get("properties") if isinstance(params, Mapping) else None
    param_names = " ".join(properties) if isinstance(properties, Mapping) else ""
    score = 3.0 * len(message_terms & terms(name.rsplit(".", maxsplit=1)[-1]))
    score += 1.0 * len(message_terms & terms(name.split(".", maxsplit=1)[0]))
    score += 1.0 * len(message_terms & terms(str(function.get("description", ""))))
    return score + 0.5 * len(message_terms & terms(param_names))
