"""``POST /v1/embeddings`` of the scripted server: deterministic vectors and fault modes.

A text's vector is a hashed bag of its words: each lower-cased word (after ``aliases`` maps it
to a concept word, so a test can make ``rain`` and ``weather`` mean the same) adds 1 to one of
``dimension`` coordinates chosen by its SHA-256. Texts sharing (concept) words point the same
way; texts sharing none are orthogonal. ``fault`` makes every answer wrong in one way, so a
test can check that the client survives it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

__all__ = ["EmbeddingsFault", "ScriptedEmbeddings", "serve_embeddings"]

EmbeddingsFault = Literal["down", "slow", "dimension", "nan", "count", "not_json"]
"""``down``: HTTP 503; ``slow``: answer after ``delay`` seconds; ``dimension``: the last vector of
an answer half as long; ``nan``: a NaN in every vector; ``count``: one vector too few;
``not_json``: a 200 whose body is not JSON."""

_WORD = re.compile(r"[a-z0-9]+")


class ScriptedEmbeddings:
    """The embeddings the scripted server serves (``server.embeddings``); thread-safe."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        """Length of every vector."""
        self.aliases: dict[str, str] = {}
        """Word -> the concept word it is embedded as (both lower case)."""
        self.fault: EmbeddingsFault | None = None
        """How every answer goes wrong, or ``None`` for correct answers."""
        self.delay = 2.0
        """Seconds a ``slow`` answer waits."""
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        with self._lock:
            return list(self._requests)

    def texts(self) -> list[str]:
        """Every input text received, in order."""
        return [text for body in self.requests for text in _inputs(body)]

    def vector(self, text: str) -> list[float]:
        """The vector of ``text`` (all zero except a 1 for a text without words)."""
        vector = [0.0] * self.dimension
        words = _WORD.findall(text.lower()) or ["\x00"]
        for word in words:
            concept = self.aliases.get(word, word)
            digest = hashlib.sha256(concept.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dimension] += 1.0
        return vector

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """``(status, raw body)`` for one request (recorded)."""
        with self._lock:
            self._requests.append(body)
            fault = self.fault
        texts = _inputs(body)
        if fault == "down":
            return 503, json.dumps({"error": {"message": "down", "type": "server_error"}}).encode()
        if fault == "not_json":
            return 200, b"<html>502 Bad Gateway</html>"
        vectors = [self.vector(text) for text in texts]
        if fault == "dimension":
            vectors[-1] = vectors[-1][: self.dimension // 2]
        elif fault == "nan":
            vectors = [[math.nan, *v[1:]] for v in vectors]
        elif fault == "count":
            vectors = vectors[:-1]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        answer = {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        return 200, json.dumps(answer).encode()


def _inputs(body: dict[str, Any]) -> list[str]:
    given = body.get("input")
    if isinstance(given, str):
        return [given]
    return [t for t in given if isinstance(t, str)] if isinstance(given, list) else []


_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def serve_embeddings(embeddings: ScriptedEmbeddings, raw: bytes, send: _Send) -> None:
    """Answer one ``POST /v1/embeddings`` whose body is ``raw``."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        status, out = 400, json.dumps({"error": {"message": "body is not a JSON object"}}).encode()
    else:
        status, out = embeddings.answer(body)
        if embeddings.fault == "slow":
            await asyncio.sleep(embeddings.delay)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(out)).encode()),
        (b"x-should-retry", b"false"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": out})
