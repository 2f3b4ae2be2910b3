"""The opt-in prefix-cache model: render a request as a provider does, count what it reuses.

`PromptCacheModel` is the public value (its docstring states the model); `PromptCache` is the
server's store of the block prefixes it has seen.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import warnings
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .request import ModelRequest, input_items

__all__ = ["PromptCache", "PromptCacheModel", "render_prompt"]

ENCODING_NAME = "o200k_base"
"""The BPE encoding used when the optional ``bpe-openai`` package is installed."""

_ESTIMATE_BYTES = 4
"""Without ``bpe-openai``, one token is counted per four bytes of UTF-8."""


@dataclass(frozen=True, slots=True)
class PromptCacheModel:
    """A provider's automatic prompt (prefix) cache, for `ScriptedOpenAIServer(prompt_cache=...)`.

    The model, kept simple on purpose (OpenAI's published rule):

    - **Rendering.** A request becomes one text: the ``tools`` array first, then (Chat
      Completions) each message, or (Responses) ``instructions``, the items stored behind
      ``previous_response_id`` (that chain's earlier input and output items, in order) and the
      new ``input`` items. Each part is canonical JSON (sorted keys, no spaces), one per line.
      With unchanged tools and instructions, a chained request's text is therefore the
      previous request's text plus the previous output plus the new input. The text is cut
      into tokens (see ``tokenizer``).
    - **Seen prefixes.** After a successful answer (not an error turn), the server remembers
      every ``block_tokens`` boundary of the rendered tokens (per model name, until
      `ScriptedOpenAIServer.reset`; nothing expires).
    - **Reported usage.** ``prompt_tokens`` / ``input_tokens`` is the rendered token count;
      ``cached_tokens`` is the longest prefix, in whole blocks, that any earlier request
      already had, and 0 when that prefix is shorter than ``min_tokens``.

    What it leaves out: expiry and eviction, per-organisation routing, ``prompt_cache_key``,
    the provider's real chat template (separator tokens), and cache writes (a bench can derive
    them: the whole blocks of a prompt of ``min_tokens`` or more that were not cached).

    Args:
        min_tokens: the shortest prefix a provider caches (OpenAI: 1,024).
        block_tokens: the cache granularity in tokens (OpenAI: 128).
        tokenizer: ``"auto"`` counts in ``o200k_base`` when the optional ``bpe-openai`` package
            is installed (the ``tokens`` extra: ``pip install bpe-openai``) and otherwise
            estimates one token per four bytes of UTF-8; ``"estimate"`` always estimates.

    Raises:
        ValueError: a size is below 1, or the tokenizer is unknown.
    """

    min_tokens: int = 1024
    block_tokens: int = 128
    tokenizer: Literal["auto", "estimate"] = "auto"

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.block_tokens < 1:
            raise ValueError(
                f"min_tokens and block_tokens must be at least 1, "
                f"got {self.min_tokens} and {self.block_tokens}"
            )
        if self.tokenizer not in ("auto", "estimate"):
            raise ValueError(f"tokenizer must be 'auto' or 'estimate', got {self.tokenizer!r}")

    @property
    def tokenizer_name(self) -> str:
        """What the counts are in: ``"o200k_base"`` or ``"estimate: UTF-8 bytes / 4"``."""
        if self.tokenizer == "auto" and _bpe() is not None:
            return ENCODING_NAME
        return f"estimate: UTF-8 bytes / {_ESTIMATE_BYTES}"

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's tokenizer."""
        return _Tokens.of(text, self).count


@functools.cache
def _bpe() -> Callable[[str], list[int]] | None:
    """``o200k_base`` from ``bpe-openai`` when installed, else ``None``."""
    try:
        # bpe-openai 0.1 reads its bundled vocabulary with a deprecated importlib call.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module: Any = importlib.import_module("bpe_openai")
            encoding: Any = module.get_encoding(ENCODING_NAME)
    except Exception:  # a missing or broken optional package only means estimates
        return None

    def encode(text: str) -> list[int]:
        return list(encoding.encode(text, disallowed_special=()))

    return encode


@dataclass(frozen=True, slots=True)
class _Tokens:
    """A rendered prompt cut into tokens: token ids, or UTF-8 bytes four to a token."""

    count: int
    ids: array[int] | None
    raw: bytes

    @classmethod
    def of(cls, text: str, model: PromptCacheModel) -> _Tokens:
        encode = _bpe() if model.tokenizer == "auto" else None
        if encode is not None:
            ids = array("I", encode(text))
            return cls(len(ids), ids, b"")
        raw = text.encode("utf-8")
        return cls(len(raw) // _ESTIMATE_BYTES, None, raw)

    def block(self, index: int, size: int) -> bytes:
        """The bytes of whole block ``index`` (``size`` tokens)."""
        if self.ids is not None:
            return self.ids[index * size : (index + 1) * size].tobytes()
        step = size * _ESTIMATE_BYTES
        return self.raw[index * step : (index + 1) * step]


def _canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def render_prompt(request: ModelRequest, history: list[dict[str, Any]]) -> str:
    """The prompt text a provider would see for ``request`` (see `PromptCacheModel`).

    Args:
        request: the request.
        history: for Responses, the stored items of the ``previous_response_id`` chain.
    """
    parts = [_canonical(request.body.get("tools") or [])]
    if request.api == "chat_completions":
        parts.extend(_canonical(m) for m in request.messages)
    else:
        instructions = request.body.get("instructions")
        if instructions is not None:
            parts.append(_canonical(instructions))
        parts.extend(_canonical(item) for item in [*history, *input_items(request.body)])
    return "\n".join(parts)


class PromptCache:
    """The block prefixes seen so far; not thread-safe (the server calls it under its lock)."""

    def __init__(self, model: PromptCacheModel) -> None:
        self.model = model
        self._seen: set[bytes] = set()

    def clear(self) -> None:
        """Forget every prefix."""
        self._seen.clear()

    def lookup(self, model_name: str, text: str) -> tuple[int, int, list[bytes]]:
        """``(prompt_tokens, cached_tokens, prefix keys)`` of a prompt; `remember` the keys
        once the request succeeded (a failed request caches nothing)."""
        tokens = _Tokens.of(text, self.model)
        size = self.model.block_tokens
        digest = hashlib.blake2b(model_name.encode("utf-8") + b"\0", digest_size=16)
        keys: list[bytes] = []
        for index in range(tokens.count // size):
            digest.update(tokens.block(index, size))
            keys.append(digest.digest())  # each key stands for the whole prefix so far
        hit = 0
        while hit < len(keys) and keys[hit] in self._seen:
            hit += 1
        cached = hit * size
        return tokens.count, cached if cached >= self.model.min_tokens else 0, keys

    def remember(self, keys: list[bytes]) -> None:
        """Add a prompt's prefix keys (from `lookup`) to the cache."""
        self._seen.update(keys)
