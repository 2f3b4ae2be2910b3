"""The semantic stage of tool search: tool vectors cached on disk, the query embedded per search.

``[skills] tool_search_embeddings`` names an OpenAI-compatible embeddings endpoint and model.
`semantic_ranker` gives a door (the `Bot`, the wrapper, hence the proxy) the
`SemanticRanker` hook of one catalog, which the core session fuses with BM25. Per catalog, in
the background when a door prepares it (`warm_semantic`), else on the first keyword search,
every tool's text (name, namespace, description, parameter names) is embedded once, in
batches, only for texts the disk cache lacks; the cache is one file per endpoint and model,
keyed by each text's SHA-256, written atomically, and a file that is corrupt or from another
model or endpoint is rebuilt, never trusted. Whatever fails, BM25
answers: one warning per settings generation (reload), and the endpoint is left alone for
`RETRY_SECONDS` so that a dead endpoint does not cost a timeout per search.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import logging
import math
import os
import struct
import sys
import tempfile
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import mul
from pathlib import Path
from typing import Any, TypeVar

from bot_toolsearch._config.settings import BotSettings, EmbeddingsSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.fusion import SemanticRanker
from bot_toolsearch._transports.embeddings import EmbeddingsClient, EmbeddingsError

__all__ = [
    "MAX_CACHED_VECTORS",
    "RETRY_SECONDS",
    "VectorCache",
    "off_loop",
    "semantic_ranker",
    "tool_text",
    "warm_semantic",
]

logger = logging.getLogger("bot_toolsearch")

RETRY_SECONDS = 60.0
"""After a failure the endpoint is not asked again for this long (a new reload asks at once)."""
MAX_CACHED_VECTORS = 50_000
"""Most vectors one cache file keeps: the current catalog's, then the most recent others."""
_QUERY_CACHE_SIZE = 256
_MAX_TEXT_CHARS = 2000
_MAGIC = b"bot_toolsearch-embeddings 1\n"
_DIGEST = 32
_T = TypeVar("_T")


def tool_text(name: str, description: str, parameters: Sequence[str]) -> str:
    """The text a tool is embedded as: its name in words, namespace, description, parameters.

    >>> tool_text("geo.get_area", "Area of a shape.", ["shape", "unit"])
    'get area (geo.get_area, in geo). Area of a shape. Parameters: shape, unit.'
    """
    namespace, _, leaf = name.rpartition(".")
    words = " ".join(leaf.replace("_", " ").replace("-", " ").split()) or name
    where = f", in {namespace}" if namespace else ""
    text = f"{words} ({name}{where})."
    if description.strip():
        text += f" {' '.join(description.split())}"
    if parameters:
        text += f" Parameters: {', '.join(parameters)}."
    return text[:_MAX_TEXT_CHARS]


def _catalog_texts(catalog: ToolCatalog) -> list[str]:
    """Every tool's `tool_text`, in search document order (`ToolCatalog.sorted_names`)."""
    texts = []
    for name in catalog.sorted_names:
        function = (catalog.schema(name) or {}).get("function", {})
        parameters = function.get("parameters") if isinstance(function, Mapping) else None
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        names = [str(p) for p in properties] if isinstance(properties, Mapping) else []
        texts.append(tool_text(name, catalog.description(name), names))
    return texts


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class VectorCache:
    """One cache file: text digest -> vector, for one endpoint and model.

    The file is a magic line, a length-prefixed JSON header (identity, dimension, count and
    the SHA-256 of the body) and a body of ``count`` records, each a 32-byte digest and
    ``dimension`` little-endian float32 values.
    """

    def __init__(self, folder: Path, identity: str) -> None:
        self.identity = identity
        key = hashlib.sha256(identity.encode()).hexdigest()[:32]
        self.path = folder / f"{key}.vectors"

    def load(self) -> tuple[int | None, dict[bytes, array[float]]]:
        """``(dimension, vectors)``; ``(None, {})`` when the file is missing or untrustworthy
        (logged: corrupt, truncated, or written for another endpoint or model)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, {}
        except OSError as exc:
            logger.warning("embeddings cache %s cannot be read (%s); rebuilding it", self.path, exc)
            return None, {}
        found = self._parse(data)
        if found is None:
            logger.warning(
                "embeddings cache %s is corrupt or for another model; rebuilding it", self.path
            )
            return None, {}
        return found

    def _parse(self, data: bytes) -> tuple[int, dict[bytes, array[float]]] | None:
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4:
            return None
        at = len(_MAGIC)
        (size,) = struct.unpack_from("<I", data, at)
        at += 4
        try:
            header = json.loads(data[at : at + size])
        except ValueError:
            return None
        body = data[at + size :]
        if not isinstance(header, dict) or header.get("identity") != self.identity:
            return None
        dimension, count = header.get("dimension"), header.get("count")
        if not isinstance(dimension, int) or not isinstance(count, int) or dimension < 1:
            return None
        record = _DIGEST + 4 * dimension
        if count < 0 or len(body) != count * record:
            return None
        if header.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        vectors: dict[bytes, array[float]] = {}
        for i in range(count):
            start = i * record
            vector = array("f")
            vector.frombytes(body[start + _DIGEST : start + record])
            if sys.byteorder != "little":
                vector.byteswap()
            if not all(map(math.isfinite, vector)):
                return None
            vectors[body[start : start + _DIGEST]] = vector
        return dimension, vectors

    def save(self, dimension: int, vectors: Mapping[bytes, Sequence[float]]) -> None:
        """Write ``vectors`` atomically (a temporary file renamed over the old one); a folder
        that cannot be written is logged, not raised (the vectors stay in memory)."""
        body = bytearray()
        for digest, vector in vectors.items():
            packed = array("f", vector)
            if sys.byteorder != "little":
                packed.byteswap()
            body += digest + packed.tobytes()
        header = json.dumps(
            {
                "identity": self.identity,
                "dimension": dimension,
                "count": len(vectors),
                "sha256": hashlib.sha256(body).hexdigest(),
            }
        ).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_MAGIC + struct.pack("<I", len(header)) + header + body)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning("embeddings cache %s cannot be written: %s", self.path, exc)


class _Matrix:
    """A catalog's unit vectors in document order, and the ranking of a query against them.

    Rows are float32 arrays (4 bytes a value, not a float object each): 10,000 tools of 1,536
    dimensions take 60 MB. A search is one dot product per tool in pure Python, about 20-40 ns
    a value (6-11 ms for 769 tools of 384 dimensions).
    """

    __slots__ = ("dimension", "rows")

    def __init__(self, rows: list[array[float]]) -> None:
        self.rows = rows
        self.dimension = len(rows[0]) if rows else 0

    def top(self, query: Sequence[float], count: int) -> list[int]:
        similarity = [sum(map(mul, row, query)) for row in self.rows]
        return heapq.nsmallest(count, range(len(similarity)), key=lambda d: -similarity[d])


def _default_folder() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "bot_toolsearch" / "embeddings"


class _Embedder:
    """The semantic stage of one `EmbeddingsSettings`: client, cache, failure state."""

    def __init__(self, settings: EmbeddingsSettings) -> None:
        self.settings = settings
        self.client = EmbeddingsClient(settings)
        identity = f"{self.client.endpoint}\x00{settings.model}"
        self.cache = VectorCache(settings.cache_dir or _default_folder(), identity)
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._down_until = 0.0
        self._down_generation = -1
        self._warned: set[int] = set()

    def rank(
        self, catalog: ToolCatalog, text: str, count: int, *, generation: int
    ) -> list[int] | None:
        """The `SemanticRanker` of ``catalog`` (bound with `functools.partial`); never raises."""
        if generation == self._down_generation and time.monotonic() < self._down_until:
            return None
        try:
            matrix = self._matrix(catalog)
            if not matrix.rows:
                return []
            query = self._query(text, matrix.dimension)
        except EmbeddingsError as exc:
            self._failed(exc, generation)
            return None
        return matrix.top(query, count)

    def _failed(self, exc: EmbeddingsError, generation: int) -> None:
        with self._lock:
            self._down_generation = generation
            self._down_until = time.monotonic() + RETRY_SECONDS
            first = generation not in self._warned
            self._warned.add(generation)
        if first:
            logger.warning(
                "[skills] tool_search_embeddings: %s (model %r at %s): keyword search uses "
                "BM25 alone until the endpoint answers again",
                exc,
                self.settings.model,
                self.client.endpoint,
            )

    def _matrix(self, catalog: ToolCatalog) -> _Matrix:
        # Built once per catalog (the catalog's memo); a failed build is retried later.
        key = ("semantic", self.settings, self.client.endpoint)
        with self._lock:
            holder: list[_Matrix] = catalog.memo(key, list)
            if not holder:
                holder.append(self._build(catalog))
            return holder[0]

    def _build(self, catalog: ToolCatalog) -> _Matrix:
        texts = _catalog_texts(catalog)
        digests = [hashlib.sha256(text.encode("utf-8", "replace")).digest() for text in texts]
        dimension, cached = self.cache.load()
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in cached}
        if missing:
            vectors = self.client.embed(list(missing.values()))
            if dimension is not None and len(vectors[0]) != dimension:
                # The model behind the name changed: nothing cached can be compared any more.
                cached = {}
                missing = dict(zip(digests, texts, strict=True))
                vectors = self.client.embed(list(missing.values()))
            dimension = len(vectors[0])
            cached.update(zip(missing, (array("f", v) for v in vectors), strict=True))
            # The current catalog's vectors first, then the most recent others, up to the cap.
            kept = {d: cached[d] for d in digests}
            for digest in reversed(cached):
                if len(kept) >= MAX_CACHED_VECTORS:
                    break
                kept.setdefault(digest, cached[digest])
            self.cache.save(dimension, kept)
        return _Matrix([array("f", _normalised(cached[d])) for d in digests])

    def _query(self, text: str, dimension: int) -> list[float]:
        with self._lock:
            found = self._queries.get(text)
            if found is not None:
                self._queries.move_to_end(text)
                return found
        vector = _normalised(self.client.embed([text[:_MAX_TEXT_CHARS]], dimension)[0])
        with self._lock:
            self._queries[text] = vector
            if len(self._queries) > _QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector


_EMBEDDERS: OrderedDict[EmbeddingsSettings, _Embedder] = OrderedDict()
_EMBEDDERS_LOCK = threading.Lock()
_EMBEDDERS_SIZE = 4


def semantic_ranker(settings: BotSettings, catalog: ToolCatalog) -> SemanticRanker | None:
    """The semantic stage for searches over ``catalog`` under ``settings``, or ``None`` when
    ``[skills] tool_search_embeddings`` is unset. Cheap: the client and the catalog's vectors
    are shared per embeddings settings; nothing is requested until a keyword search."""
    wanted = settings.skills.tool_search_embeddings
    if wanted is None:
        return None
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(wanted)
        if embedder is None:
            embedder = _EMBEDDERS[wanted] = _Embedder(wanted)
            if len(_EMBEDDERS) > _EMBEDDERS_SIZE:
                _EMBEDDERS.popitem(last=False)
        _EMBEDDERS.move_to_end(wanted)
    return partial(embedder.rank, catalog, generation=settings.generation)


async def off_loop(semantic: bool, function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)``, in a worker thread when it may call the embeddings endpoint
    (``semantic``), so an async door's event loop never waits on it."""
    if not semantic:
        return function(*args)
    return await asyncio.to_thread(function, *args)


def warm_semantic(settings: BotSettings, catalog: ToolCatalog) -> threading.Thread | None:
    """Embed ``catalog``'s tool texts in a background thread now, rather than in its first
    keyword search, when ``[skills] tool_search_embeddings`` is set (else ``None``).

    What a search would do first, done ahead: the vectors are computed (or read from the disk
    cache) once per catalog and settings, and a search that comes meanwhile waits for them
    instead of asking again. It never raises: a failure is the stage's one warning of this
    settings generation, and searches use BM25 until the endpoint answers again.
    """
    wanted = settings.skills.tool_search_embeddings
    if wanted is None or semantic_ranker(settings, catalog) is None:
        return None
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(wanted)  # semantic_ranker made it (unless evicted since)
    if embedder is None:
        return None

    def embed() -> None:
        try:
            embedder._matrix(catalog)
        except EmbeddingsError as exc:
            embedder._failed(exc, settings.generation)

    thread = threading.Thread(target=embed, name="bot_toolsearch-embeddings", daemon=True)
    thread.start()
    return thread
