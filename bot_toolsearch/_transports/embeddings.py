"""The embeddings endpoint of the semantic stage: ``embeddings.create`` checked, in batches.

Every call goes through the official ``openai`` SDK (``client.embeddings.create``) with
``encoding_format="float"`` (what every OpenAI-compatible server speaks) and no SDK retries
(a failing endpoint must cost one timeout, not three). ``timeout`` bounds each call as a
whole, not each read: an endpoint that sends its headers and then a byte a second is cut off
once the call's deadline has passed (`_Bounded`), and an answer larger than
`max_answer_bytes` is cut off too. Whatever the endpoint does wrong — down, slow, an error
status, a body that is not JSON or too large, a different count of vectors, a vector of the
wrong dimension or with NaN or infinity — becomes one `EmbeddingsError`, never a crash.
"""

from __future__ import annotations

import math
import os
import sys
import time
import weakref
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import openai

from bot_toolsearch._config.settings import EmbeddingsSettings

__all__ = [
    "ANSWER_BYTES_PER_TEXT",
    "DEFAULT_BASE_URL",
    "EmbeddingsClient",
    "EmbeddingsError",
    "endpoint_of",
    "max_answer_bytes",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the SDK sends requests when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set."""
_NO_KEY = "no-key"
"""Sent as the key to a ``base_url`` server when no key is configured (local servers ignore
it; the SDK refuses to start without one)."""


ANSWER_BYTES_PER_TEXT = 256 * 1024
"""The most bytes of answer one text may take: a vector of 8,192 dimensions written as JSON
floats is about 200 KB."""
_ANSWER_OVERHEAD = 64 * 1024

# The HTTP library the installed SDK is built on (httpx for openai 2, httpx2 for openai 3):
# the package declares only ``openai``, so it imports neither by name.
_HTTP: Any = next(
    sys.modules[base.__module__.partition(".")[0]]
    for base in openai.DefaultHttpxClient.__mro__
    if base.__module__.partition(".")[0] not in ("openai", "builtins")
)


def max_answer_bytes(texts: int) -> int:
    """The largest answer accepted for a batch of ``texts`` texts.

    >>> max_answer_bytes(1)
    327680
    """
    return _ANSWER_OVERHEAD + texts * ANSWER_BYTES_PER_TEXT


class _TooLarge(Exception):
    """The answer grew past its cap (`max_answer_bytes`)."""


class _Bounded(_HTTP.SyncByteStream):  # type: ignore[misc]
    """A response body read under a total deadline and a size cap."""

    def __init__(self, inner: Any, deadline: float, cap: int) -> None:
        self._inner, self._deadline, self._cap = inner, deadline, cap

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self._inner:
            size += len(chunk)
            if size > self._cap:
                raise _TooLarge(f"an answer larger than {self._cap} bytes")
            if time.monotonic() > self._deadline:
                raise _HTTP.ReadTimeout("the call's total deadline passed")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _DeadlineTransport(_HTTP.BaseTransport):  # type: ignore[misc]
    """The SDK's transport, with every call bounded as a whole (``seconds``) and its answer
    by size (``cap``), whatever the per-read timeouts let through."""

    def __init__(self, seconds: float, cap: int) -> None:
        self._inner = _HTTP.HTTPTransport()
        self._seconds, self._cap = seconds, cap

    def handle_request(self, request: Any) -> Any:
        deadline = time.monotonic() + self._seconds
        response = self._inner.handle_request(request)
        if time.monotonic() > deadline:
            response.close()
            raise _HTTP.ReadTimeout("the call's total deadline passed", request=request)
        response.stream = _Bounded(response.stream, deadline, self._cap)
        return response

    def close(self) -> None:
        self._inner.close()


class EmbeddingsError(Exception):
    """The embeddings endpoint failed or answered something unusable (the text says which)."""


def endpoint_of(settings: EmbeddingsSettings) -> str:
    """The base URL requests go to: ``base_url``, else ``OPENAI_BASE_URL``, else OpenAI's."""
    return (settings.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


class EmbeddingsClient:
    """A synchronous embeddings client for one `EmbeddingsSettings`.

    Raises:
        EmbeddingsError: (from `embed`) no API key can be found, or the endpoint failed.
    """

    def __init__(self, settings: EmbeddingsSettings) -> None:
        self.settings = settings
        self.endpoint = endpoint_of(settings)
        self._client: openai.OpenAI | None = None

    def _sdk(self) -> openai.OpenAI:
        if self._client is None:
            settings = self.settings
            variable = settings.api_key_env or "OPENAI_API_KEY"
            key = os.environ.get(variable, "").strip()
            if not key:
                if settings.api_key_env is not None or settings.base_url is None:
                    raise EmbeddingsError(
                        f"no API key: the environment variable {variable} is unset"
                    )
                key = _NO_KEY
            transport = _DeadlineTransport(settings.timeout, max_answer_bytes(settings.batch_size))
            # never following a redirect (the SDK's default), which would leave the endpoint
            http = openai.DefaultHttpxClient(transport=transport, follow_redirects=False)
            weakref.finalize(self, http.close)  # its connections close with this client
            self._client = openai.OpenAI(
                api_key=key,
                base_url=self.endpoint,
                timeout=settings.timeout,
                max_retries=0,
                http_client=http,
            )
        return self._client

    def embed(
        self, texts: Sequence[str], dimension: int | None = None, *, query: bool = False
    ) -> list[array[float]]:
        """One vector per text, in order, requested ``batch_size`` texts at a time.

        Queries (``query``) and tool texts get their own ``query_prefix`` /
        ``document_prefix`` and ``input_type`` (``query_input_type`` /
        ``document_input_type``) when the settings give them (none by default).

        Each batch's vectors are packed as they arrive (``array('d')``, the same float64
        values at 8 bytes each instead of a float object and a list slot, ~32): a catalog of
        10,000 tools at 1,536 dimensions holds 123 MB of vectors, not ~490 MB.

        Args:
            texts: the texts to embed.
            dimension: the length every vector must have; ``None``: the first vector's.
            query: the texts are search queries, not tool texts.

        Raises:
            EmbeddingsError: the endpoint failed or answered something unusable.
        """
        out: list[array[float]] = []
        settings = self.settings
        size = settings.batch_size
        prefix = (settings.query_prefix if query else settings.document_prefix) or ""
        kind = settings.query_input_type if query else settings.document_input_type
        for start in range(0, len(texts), size):
            batch = [prefix + text for text in texts[start : start + size]]
            vectors = self._batch(batch, dimension, kind)
            dimension = len(vectors[0]) if vectors else dimension
            out.extend(vectors)
        return out

    def _batch(
        self, texts: list[str], dimension: int | None, kind: str | None
    ) -> list[array[float]]:
        try:
            response = self._sdk().embeddings.create(
                model=self.settings.model or "",
                input=texts,
                encoding_format="float",
                extra_body={"input_type": kind} if kind is not None else None,
            )
            data = sorted(response.data, key=lambda item: item.index)
            vectors = [list(item.embedding) for item in data]
        except _TooLarge as exc:
            raise EmbeddingsError(str(exc)) from None
        except openai.APITimeoutError:
            raise EmbeddingsError(
                f"no answer within {self.settings.timeout:g} s (timeout)"
            ) from None
        except openai.APIStatusError as exc:
            raise EmbeddingsError(f"HTTP status {exc.status_code}") from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, _TooLarge):
                raise EmbeddingsError(str(exc.__cause__)) from None
            raise EmbeddingsError("cannot connect") from None
        except (openai.OpenAIError, ValueError, TypeError, AttributeError) as exc:
            # A body that is not JSON, or not an embeddings response.
            raise EmbeddingsError(f"unusable answer ({type(exc).__name__})") from None
        if len(vectors) != len(texts) or [item.index for item in data] != list(range(len(texts))):
            raise EmbeddingsError(f"{len(vectors)} vectors for {len(texts)} texts")
        for vector in vectors:
            problem = vector_problem(vector, dimension)
            if problem is not None:
                raise EmbeddingsError(problem)
            dimension = len(vector)
        return [array("d", vector) for vector in vectors]


def vector_problem(vector: Sequence[object], dimension: int | None) -> str | None:
    """Why ``vector`` is unusable (empty, wrong length, not finite numbers, all zero), or
    ``None``.

    >>> vector_problem([1.0, float("nan")], None), vector_problem([1.0], 2)
    ('a vector holds NaN or infinity', 'a vector of dimension 1, expected 2')
    """
    if not vector:
        return "an empty vector"
    if dimension is not None and len(vector) != dimension:
        return f"a vector of dimension {len(vector)}, expected {dimension}"
    if not all(type(x) is float or type(x) is int for x in vector):
        return "a vector holds something other than numbers"
    if not all(math.isfinite(x) for x in vector):  # type: ignore[arg-type]
        return "a vector holds NaN or infinity"
    if not any(vector):
        return "an all-zero vector"
    return None
