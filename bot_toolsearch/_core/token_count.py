"""Token counts of tools lists and messages, with an offline OpenAI BPE when one is installed.

What tool search saves is counted here, once, for ``catalog stats``, the demo and the benchmarks.

``bpe-openai`` ships the ``o200k_base`` and ``cl100k_base`` vocabularies inside the package, so
counting works with no network. We use ``o200k_base``, the encoding of the GPT-4o family. When
the package is missing, counts fall back to a clearly labelled estimate.
"""

from __future__ import annotations

import functools
import importlib
import json
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "ENCODING_NAME",
    "count_text",
    "count_tools",
    "counter_label",
    "is_estimate",
    "messages_tokens",
    "tools_json",
    "tools_tokens",
]

ENCODING_NAME = "o200k_base"
"""The BPE encoding used when ``bpe-openai`` is installed."""

# OpenAI's published accounting for chat messages: a few tokens per message for the role and
# separators, and three for priming the reply.
_PER_MESSAGE = 3
_REPLY_PRIMING = 3


@functools.cache
def _encoder() -> Callable[[str], int] | None:
    try:
        # bpe-openai 0.1 reads its bundled vocabulary with the deprecated
        # importlib.resources.open_binary; that warning is theirs, not the user's business.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module: Any = importlib.import_module("bpe_openai")
            encoding: Any = module.get_encoding(ENCODING_NAME)
    except Exception:  # a missing or broken optional package must not break the demo
        return None

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def is_estimate() -> bool:
    """True when no offline BPE is available and counts are estimates."""
    return _encoder() is None


def counter_label() -> str:
    """Which counter the figures come from, for printing beside them."""
    if is_estimate():
        return "ESTIMATE (bpe-openai not installed: ~4 characters per token, 1 per CJK character)"
    return f"{ENCODING_NAME} (offline BPE from bpe-openai)"


def _estimate(text: str) -> int:
    wide = sum(1 for c in text if ord(c) > 0x2E7F)
    return wide + (len(text) - wide + 3) // 4


def count_text(text: str) -> int:
    """Tokens of one string."""
    encoder = _encoder()
    return encoder(text) if encoder is not None else _estimate(text)


def tools_json(tools: Iterable[Mapping[str, Any]]) -> str:
    """The tools list as compact JSON, the way the SDK puts it on the wire."""
    return json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))


def tools_tokens(tools: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of a tools list serialised as it is sent (0 for an empty list).

    Providers render tool schemas into their own prompt format, so this approximates their
    accounting; it is exact for what goes over the wire.
    """
    items = list(tools)
    return count_text(tools_json(items)) if items else 0


def count_tools(tools: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """``(number of tools, tokens)`` of a tools list."""
    items = list(tools)
    return len(items), tools_tokens(items)


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    parts = [str(message.get("role", "")), "" if content is None else str(content)]
    if message.get("tool_calls"):
        parts.append(json.dumps(message["tool_calls"], ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts)


def messages_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of chat messages: their text plus OpenAI's per-message overhead."""
    items = list(messages)
    if not items:
        return 0
    return sum(count_text(_message_text(m)) + _PER_MESSAGE for m in items) + _REPLY_PRIMING
