"""The semantic stage of tool search: tool vectors cached on disk, the query embedded per search.

``[skills] tool_search_embeddings`` names an OpenAI-compatible embeddings endpoint and model,
or a local model that `LocalEmbedder` runs in the process (same interface, same cache).
`semantic_ranker` gives a door (the `Bot`, the wrapper, hence the proxy) the
`SemanticRanker` hook of one catalog, which the core session fuses with BM25. Per catalog, in
the background when a door prepares it (`warm_semantic`), else on the first keyword search,
every tool's text (name, namespace, description, parameter names) is embedded once, in
batches, only for texts the disk cache lacks; the cache is one file per endpoint and model,
keyed by each text's SHA-256, written atomically, and a file that is corrupt or from another
model or endpoint is rebuilt, never trusted. Whatever fails, BM25
answers: one warning per settings generation (reload), and the endpoint is left alone for
`RETRY_SECONDS` so that a dead endpoint does not cost a timeout per search. The similarity
scan (`_Matrix`) uses numpy when it is importable (the ``semantic`` extra), else pure Python.
"""

from __future__ import annotations

import concurrent.futures
import functools
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
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bot_toolsearch._config.redact import redact_url
from bot_toolsearch._config.settings import BotSettings, EmbeddingsSettings
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._core.fusion import SemanticRanker
from bot_toolsearch._transports.embeddings import EmbeddingsClient, EmbeddingsError

from .local_embedder import LocalEmbedder
from .threads import POOLS, PoolBusy
from .tool_text import MAX_TEXT_CHARS, tool_text

__all__ = [
    "MAX_CACHED_VECTORS",
    "RETRY_SECONDS",
    "VectorCache",
    "semantic_ranker",
    "warm_semantic",
]

logger = logging.getLogger("bot_toolsearch")

RETRY_SECONDS = 60.0
"""After a failure the endpoint is not asked again for this long (a new reload asks at once)."""
MAX_CACHED_VECTORS = 50_000
"""Most vectors one cache file keeps: the current catalog's, then the most recent others."""
_BUDGET_WINDOW = 60.0
"""Seconds over which ``max_texts_per_minute`` counts the texts sent."""
_QUERY_CACHE_SIZE = 256
_DIGITS = 6
"""Similarities are rounded to this many decimals (float32 vectors hold about 7), so that
equal ones tie exactly on both scan paths, whose rounding errors differ, and a tie keeps
the catalog's order on both."""
_MAGIC = b"bot_toolsearch-embeddings 1\n"
_DIGEST = 32
_T = TypeVar("_T")


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
    norm = math.hypot(*vector) or 1.0  # in C, and without overflow for huge values
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

    def load(self) -> tuple[int | None, dict[bytes, Sequence[float]]]:
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

    def _parse(self, data: bytes) -> tuple[int, dict[bytes, Sequence[float]]] | None:
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4:
            return None
        at = len(_MAGIC)
        (size,) = struct.unpack_from("<I", data, at)
        at += 4
        try:
            header = json.loads(data[at : at + size])
        except ValueError:
            return None
        body = memoryview(data)[at + size :]
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
        if not _all_finite(body, count, dimension):
            return None
        # Views into the file's bytes, not copies: the file is the only copy until the
        # catalog's matrix is built from it.
        vectors: dict[bytes, Sequence[float]] = {}
        for start in range(0, len(body), record):
            values = body[start + _DIGEST : start + record]
            vectors[bytes(body[start : start + _DIGEST])] = _floats(values)
        return dimension, vectors

    def save(self, dimension: int, vectors: Mapping[bytes, Sequence[float]]) -> None:
        """Write ``vectors`` atomically (a temporary file renamed over the old one); a folder
        that cannot be written is logged, not raised (the vectors stay in memory)."""
        body = bytearray()
        for digest, vector in vectors.items():
            body += digest + _packed(vector)
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
                    handle.write(_MAGIC + struct.pack("<I", len(header)) + header)
                    handle.write(body)  # not concatenated: no second copy of the body
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning("embeddings cache %s cannot be written: %s", self.path, exc)


_BLOCK = 1024
"""Rows normalised (and checked) at a time on the numpy path: a bounded float64 temporary."""
_USE_NUMPY = True
"""Private switch: ``False`` forces the pure-Python scan even when numpy is importable (the
tests run both paths on the same vectors)."""


@functools.cache
def _import_numpy() -> Any:
    try:
        import numpy
    except ImportError:  # the `semantic` extra is not installed: the pure-Python scan
        return None
    return numpy


def _numpy() -> Any:
    """The numpy module, or ``None`` when it is not installed or `_USE_NUMPY` is off."""
    return _import_numpy() if _USE_NUMPY else None


@functools.cache
def _announce(fast: bool) -> None:
    """Say once per process which similarity scan the semantic stage uses."""
    if fast:
        logger.debug("tool_search_embeddings: similarity scan with numpy")
    else:
        logger.info(
            "tool_search_embeddings: numpy is not installed, so the similarity scan runs in "
            "pure Python (about 0.3 s a search at 10,000 tools of 1,536 dimensions); with "
            "numpy (pip install numpy, the semantic extra), a few milliseconds"
        )


def _floats(values: memoryview) -> Sequence[float]:
    """Little-endian float32 bytes as floats: a view on a little-endian machine, else a copy."""
    if sys.byteorder == "little":
        return values.cast("f")
    vector = array("f", values.tobytes())
    vector.byteswap()
    return vector


def _packed(vector: Sequence[float]) -> bytes:
    """``vector`` as little-endian float32 bytes (a view from `_floats` already is)."""
    if isinstance(vector, memoryview):
        return vector.tobytes()
    packed = array("f", vector)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def _all_finite(body: memoryview, count: int, dimension: int) -> bool:
    """Whether every value of a cache body (``count`` records of a digest and ``dimension``
    float32 values) is finite."""
    record = _DIGEST + 4 * dimension
    np = _numpy()
    if np is not None:
        records = np.frombuffer(body, dtype=np.uint8).reshape(count, record)
        for start in range(0, count, _BLOCK):
            values = records[start : start + _BLOCK, _DIGEST:].view("<f4")
            if not np.isfinite(values).all():
                return False
        return True
    return all(
        all(map(math.isfinite, _floats(body[start + _DIGEST : start + record])))
        for start in range(0, len(body), record)
    )


class _Matrix:
    """A catalog's unit vectors in document order, and the ranking of a query against them.

    One float32 copy, 4 bytes a value (10,000 tools of 1,536 dimensions: 61 MB): a numpy
    array when numpy is importable (the ``semantic`` extra), scanned by one matrix-vector
    product and a partial selection (about 3 ms a search at that size); else one flat
    ``array('f')`` scanned row by row in pure Python (about 20 ns a value: 0.3 s at that
    size, 7 ms at 769 tools of 384). Both rank by descending similarity, ties by document
    order.
    """

    __slots__ = ("_flat", "_norms", "_rows", "count", "dimension")

    def __init__(self, rows: Sequence[Sequence[float]], dimension: int) -> None:
        self.count = len(rows)
        self.dimension = dimension
        np = _numpy()
        _announce(np is not None)
        self._rows: Any = None
        self._flat = array("f")
        self._norms: list[float] = []
        if np is None:
            origin = (0.0,) * dimension
            self._flat = array("f", [0.0]) * (self.count * dimension)  # exactly, no regrowth
            for start, row in zip(range(0, len(self._flat), dimension), rows, strict=True):
                unit = array("f", _normalised(row))
                self._flat[start : start + dimension] = unit
                self._norms.append(math.dist(unit, origin) ** 2)  # of the float32 values
            return
        self._rows = np.empty((self.count, dimension), dtype=np.float32)
        for start in range(0, self.count, _BLOCK):
            block = np.array(rows[start : start + _BLOCK], dtype=np.float64).reshape(-1, dimension)
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))
            norms[norms == 0.0] = 1.0
            self._rows[start : start + len(block)] = block / norms[:, None]

    @property
    def nbytes(self) -> int:
        """The bytes the vectors take (one copy, whichever path)."""
        return int(self._rows.nbytes) if self._rows is not None else len(self._flat) * 4

    @property
    def fast(self) -> bool:
        """Whether searches use numpy."""
        return self._rows is not None

    def top(self, query: Sequence[float], count: int) -> list[tuple[int, float]]:
        """The ``count`` most similar rows to the unit vector ``query`` with their cosine
        similarities, best first."""
        if count <= 0 or not self.count:
            return []
        if self._rows is not None:
            return self._numpy_top(query, count)
        # |r|^2 - |r - q|^2 = 2 r.q - |q|^2 ranks as the dot product r.q does (up to rounding),
        # and math.dist runs in C: 1.4x faster than sum(map(mul, row, query)).
        flat, step, dist, point = self._flat, self.dimension, math.dist, tuple(query)
        squared = math.fsum(x * x for x in point)
        similarity = [
            round((norm - dist(flat[start : start + step], point) ** 2 + squared) / 2, _DIGITS)
            for norm, start in zip(self._norms, range(0, len(flat), step), strict=True)
        ]
        # nlargest keeps the first of equal items, as sorted(..., reverse=True) does.
        best = heapq.nlargest(count, range(self.count), key=similarity.__getitem__)
        return [(d, similarity[d]) for d in best]

    def _numpy_top(self, query: Sequence[float], count: int) -> list[tuple[int, float]]:
        np = _import_numpy()
        # einsum, not matmul: numpy's own loop on one thread (3 ms at 10,000 x 1,536 however
        # busy the cores are), where a threaded BLAS took 1.4 ms on idle cores but 8-12 ms on
        # busy ones (its threads wait for the scheduler); searches run concurrently anyway.
        scores = np.einsum("ij,j->i", self._rows, np.asarray(query, dtype=np.float32))
        scores = np.round(scores.astype(np.float64), _DIGITS)
        if count < self.count:
            # Every row at least as similar as the count-th best: ties at the cut included,
            # so the stable sort below keeps the earliest of them, as the pure path does.
            cut = self.count - count
            kth = scores[np.argpartition(scores, cut)[cut]]
            candidates = np.flatnonzero(scores >= kth)
        else:
            candidates = np.arange(self.count)
        order = np.argsort(-scores[candidates], kind="stable")[:count]
        best = candidates[order]
        return list(zip(best.tolist(), scores[best].astype(float).tolist(), strict=True))


def _identity(endpoint: str, model: str, recipe: str = "") -> str:
    """What a cache file is for, as stored in its header: a hash of the endpoint, model and
    an endpoint's prefixes and input types (`_endpoint_recipe`), never the URL (its userinfo
    or query may hold a key)."""
    return "sha256:" + hashlib.sha256(f"{endpoint}\x00{model}{recipe}".encode()).hexdigest()


def _endpoint_recipe(settings: EmbeddingsSettings) -> str:
    """An endpoint's document prefix and input type, which change its tool vectors (``""``
    when neither is set, as before they existed; a local model's recipe is in its
    ``endpoint``)."""
    if settings.is_local or (
        settings.document_prefix is None and settings.document_input_type is None
    ):
        return ""
    return "\x00" + json.dumps([settings.document_prefix, settings.document_input_type])


def _default_folder() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "bot_toolsearch" / "embeddings"


class _Budget:
    """The texts an embedder may send per minute (``max_texts_per_minute``), a sliding window
    over the last 60 s; a refusal is logged once a minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._spent: deque[tuple[float, int]] = deque()
        self._total = 0
        self._logged = -_BUDGET_WINDOW
        self._lock = threading.Lock()

    def take(self, count: int, endpoint: str) -> None:
        """Spend ``count`` texts of the budget.

        Raises:
            EmbeddingsError: the budget cannot pay for them now (nothing is spent).
        """
        now = time.monotonic()
        with self._lock:
            while self._spent and self._spent[0][0] <= now - _BUDGET_WINDOW:
                self._total -= self._spent.popleft()[1]
            if self._total + count <= self.per_minute:
                self._spent.append((now, count))
                self._total += count
                return
            log = now - self._logged >= _BUDGET_WINDOW
            if log:
                self._logged = now
        if log:
            logger.warning(
                "[skills] tool_search_embeddings: the budget of %d texts a minute "
                "(max_texts_per_minute) is spent (%d wanted) at %s: BM25 alone meanwhile",
                self.per_minute,
                count,
                endpoint,
            )
        raise _BudgetSpent(
            f"the budget of {self.per_minute} texts a minute (max_texts_per_minute) is spent"
        )


class _BudgetSpent(EmbeddingsError):
    """The budget cannot pay for a request now (logged by `_Budget`, not as a failure)."""


class _Slot:
    """A catalog's vectors under one embeddings settings: built, or being built."""

    __slots__ = ("future", "matrix")

    def __init__(self) -> None:
        self.matrix: _Matrix | None = None
        self.future: concurrent.futures.Future[_Matrix] | None = None


class _Embedder:
    """The semantic stage of one `EmbeddingsSettings`: client, cache, budget, failure state.

    No lock is held across a call to the endpoint: the vectors are built in the
    ``embeddings`` pool (`bot_toolsearch._services.threads.POOLS`) and published under the
    lock; a search waits for them, and for its query's vector, at most ``timeout`` seconds in
    all, then answers with BM25.
    """

    def __init__(self, settings: EmbeddingsSettings) -> None:
        self.settings = settings
        self.client: EmbeddingsClient | LocalEmbedder = (
            LocalEmbedder(settings) if settings.is_local else EmbeddingsClient(settings)
        )
        # The header names the endpoint by a hash: a base_url may carry credentials.
        identity = _identity(self.client.endpoint, settings.model or "", _endpoint_recipe(settings))
        self.cache = VectorCache(settings.cache_dir or _default_folder(), identity)
        self.budget = _Budget(settings.max_texts_per_minute)
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._down_until = 0.0
        self._down_generation = -1
        self._warned: set[int] = set()

    def down(self, generation: int) -> bool:
        """Whether the endpoint failed recently under this settings generation."""
        with self._lock:
            return generation == self._down_generation and time.monotonic() < self._down_until

    def rank(
        self, catalog: ToolCatalog, text: str, count: int, *, generation: int
    ) -> list[tuple[int, float]] | None:
        """The `SemanticRanker` of ``catalog`` (bound with `functools.partial`); never raises,
        and returns within ``timeout`` seconds (``None``: BM25 alone)."""
        if self.down(generation):
            return None
        deadline = time.monotonic() + self.settings.timeout
        started = self.start(catalog, generation)
        if started is None:
            return None
        if isinstance(started, _Matrix):
            matrix = started
        else:
            try:
                matrix = started.result(max(0.0, deadline - time.monotonic()))
            except concurrent.futures.TimeoutError:
                return None  # still building: this search is BM25, a later one fuses
            except Exception:  # recorded by the build (`_failed`), or cancelled
                return None
        if not matrix.count:
            return []
        try:
            query = self._query(text, matrix.dimension, deadline)
        except EmbeddingsError as exc:
            self._failed(exc, generation)
            return None
        return matrix.top(query, count)

    def _failed(self, exc: EmbeddingsError, generation: int) -> None:
        with self._lock:
            self._down_generation = generation
            self._down_until = time.monotonic() + RETRY_SECONDS
            first = generation not in self._warned and not isinstance(exc, _BudgetSpent)
            if first:
                self._warned.add(generation)
        if first and self.settings.is_local:
            logger.warning(
                "[skills] tool_search_embeddings: %s: keyword search uses BM25 alone", exc
            )
        elif first:
            logger.warning(
                "[skills] tool_search_embeddings: %s (model %r at %s): keyword search uses "
                "BM25 alone until the endpoint answers again",
                exc,
                self.settings.model,
                redact_url(self.client.endpoint),
            )

    def start(
        self, catalog: ToolCatalog, generation: int
    ) -> _Matrix | concurrent.futures.Future[_Matrix] | None:
        """``catalog``'s vectors when built, else the build under way (started now when none
        is); ``None`` when the endpoint is down or the embeddings pool is full."""
        key = ("semantic", self.settings, self.client.endpoint)
        with self._lock:
            slot: _Slot = catalog.memo(key, _Slot)
            if slot.matrix is not None:
                return slot.matrix
            if slot.future is not None:
                return slot.future
            if generation == self._down_generation and time.monotonic() < self._down_until:
                return None
            try:
                slot.future = POOLS.embeddings.submit(self._publish, catalog, slot, generation)
            except PoolBusy:
                return None
            return slot.future

    def _publish(self, catalog: ToolCatalog, slot: _Slot, generation: int) -> _Matrix:
        """Build ``catalog``'s vectors (no lock held) and publish them under the lock."""
        try:
            matrix = self._build(catalog)
        except EmbeddingsError as exc:
            self._failed(exc, generation)
            with self._lock:
                slot.future = None  # a later search (after RETRY_SECONDS) tries again
            raise
        except BaseException:
            with self._lock:
                slot.future = None
            raise
        with self._lock:
            slot.matrix, slot.future = matrix, None
        return matrix

    def _build(self, catalog: ToolCatalog) -> _Matrix:
        texts = _catalog_texts(catalog)
        digests = [hashlib.sha256(text.encode("utf-8", "replace")).digest() for text in texts]
        dimension, cached = self.cache.load()
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in cached}
        if missing:
            self.budget.take(len(missing), self.client.endpoint)
            vectors = self.client.embed(list(missing.values()))
            if dimension is not None and len(vectors[0]) != dimension:
                # The model behind the name changed: nothing cached can be compared any more.
                cached = {}
                missing = dict(zip(digests, texts, strict=True))
                self.budget.take(len(missing), self.client.endpoint)
                vectors = self.client.embed(list(missing.values()))
            dimension = len(vectors[0])
            # Stored unit-length as float32 (a huge float64 value would overflow float32).
            cached.update(zip(missing, (array("f", _normalised(v)) for v in vectors), strict=True))
            del vectors
            # The current catalog's vectors first, then the most recent others, up to the cap.
            kept = {d: cached[d] for d in digests}
            for digest in reversed(cached):
                if len(kept) >= MAX_CACHED_VECTORS:
                    break
                kept.setdefault(digest, cached[digest])
            self.cache.save(dimension, kept)
        return _Matrix([cached[d] for d in digests], dimension or 0)

    def _query(self, text: str, dimension: int, deadline: float) -> list[float]:
        """The unit vector of a query, from the cache or the endpoint (asked in the
        ``embeddings`` pool, waited for until ``deadline``).

        Raises:
            EmbeddingsError: the endpoint failed, was too slow, or the budget is spent.
        """
        with self._lock:
            found = self._queries.get(text)
            if found is not None:
                self._queries.move_to_end(text)
                return found
        self.budget.take(1, self.client.endpoint)
        try:
            future = POOLS.embeddings.submit(
                partial(self.client.embed, query=True), [text[:MAX_TEXT_CHARS]], dimension
            )
        except PoolBusy as exc:
            raise EmbeddingsError(str(exc)) from None
        try:
            raw = future.result(max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise EmbeddingsError(
                f"no answer within {self.settings.timeout:g} s (timeout)"
            ) from None
        vector = _normalised(raw[0])
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


def warm_semantic(
    settings: BotSettings, catalog: ToolCatalog
) -> concurrent.futures.Future[Any] | None:
    """Embed ``catalog``'s tool texts in the background now (in the ``embeddings`` pool),
    rather than in its first keyword search, when ``[skills] tool_search_embeddings`` is set
    (else ``None``).

    What a search would do first, done ahead: the vectors are computed (or read from the disk
    cache) once per catalog and settings, and a search that comes meanwhile waits for them
    (at most its ``timeout``) instead of asking again. It never raises: a failure is the
    stage's one warning of this settings generation, and searches use BM25 until the endpoint
    answers again (a search after the failure honours it at once).
    """
    wanted = settings.skills.tool_search_embeddings
    if wanted is None or semantic_ranker(settings, catalog) is None:
        return None
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(wanted)  # semantic_ranker made it (unless evicted since)
    if embedder is None:
        return None
    started = embedder.start(catalog, settings.generation)
    return started if isinstance(started, concurrent.futures.Future) else None
