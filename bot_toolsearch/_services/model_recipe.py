"""How a local model wants its texts embedded: its pooling and its query and document prefixes.

Retrieval models are trained with a recipe the ONNX file does not hold: bge-small-en-v1.5 and
Arctic-embed take the first token's state (CLS pooling) where MiniLM averages all of them, and
most put a prompt before a query (bge's "Represent this sentence for searching relevant
passages: ", e5's "query: ") and sometimes before a document (e5's "passage: "). A
sentence-transformers export says so in two small files, read when the model folder has them
(in the folder, beside the ONNX file or in the folder above it): ``1_Pooling/config.json``
(``pooling_mode_cls_token`` / ``pooling_mode_mean_tokens``) and
``config_sentence_transformers.json`` (its ``prompts``: ``query`` and ``document`` or
``passage``). The ``pooling``, ``query_prefix`` and ``document_prefix`` keys of
``[skills.tool_search_embeddings]`` override them; without either, mean pooling and no prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bot_toolsearch._config.settings import EmbeddingsSettings
from bot_toolsearch._transports.embeddings import EmbeddingsError

__all__ = ["POOLING_FILE", "PROMPTS_FILE", "Recipe", "model_recipe"]

POOLING_FILE = "1_Pooling/config.json"
PROMPTS_FILE = "config_sentence_transformers.json"
_MAX_BYTES = 64 * 1024
"""The largest recipe file read (they are a few hundred bytes)."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """The pooling (``mean`` or ``cls``) and the prefixes of a model's texts."""

    pooling: str = "mean"
    query_prefix: str = ""
    document_prefix: str = ""

    def key(self) -> str:
        """The recipe as a vector cache sees it: empty for the default (mean pooling, no
        prefix), so vectors cached before these settings existed stay valid.

        >>> Recipe().key(), Recipe("cls", "query: ").key()
        ('', ':pool=cls:q="query: ":d=""')
        """
        if self == Recipe():
            return ""
        quoted = json.dumps(self.query_prefix), json.dumps(self.document_prefix)
        return f":pool={self.pooling}:q={quoted[0]}:d={quoted[1]}"


def _read(path: Path) -> dict[str, object] | None:
    """A recipe file's JSON object, ``None`` when there is no such file.

    Raises:
        EmbeddingsError: the file cannot be read or is not a small JSON object.
    """
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise ValueError(f"larger than {_MAX_BYTES} bytes")
        found = json.loads(data)
    except (OSError, ValueError) as exc:
        raise EmbeddingsError(f"local model: {path} cannot be read: {exc}") from exc
    if not isinstance(found, dict):
        raise EmbeddingsError(f"local model: {path} is not a JSON object")
    return found


def _find(folders: list[Path], name: str) -> dict[str, object] | None:
    for folder in folders:
        found = _read(folder / name)
        if found is not None:
            return found
    return None


def _pooling(config: dict[str, object] | None) -> str | None:
    if config is None:
        return None
    modes = {key for key, value in config.items() if key.startswith("pooling_mode") and value}
    if modes == {"pooling_mode_cls_token"}:
        return "cls"
    if modes == {"pooling_mode_mean_tokens"}:
        return "mean"
    raise EmbeddingsError(
        f"local model: {POOLING_FILE} asks for {sorted(modes) or 'no'} pooling; mean tokens or "
        "the CLS token are supported (set 'pooling' to override)"
    )


def _prompt(prompts: object, *keys: str) -> str | None:
    if not isinstance(prompts, dict):
        return None
    for key in keys:
        value = prompts.get(key)
        if isinstance(value, str):
            return value
    return None


def model_recipe(settings: EmbeddingsSettings, folder: Path, model: Path) -> Recipe:
    """The recipe of the local model ``model`` (its ONNX file) in the configured ``folder``:
    the settings' keys, else the sentence-transformers files, else the defaults.

    Raises:
        EmbeddingsError: a recipe file is unreadable, or asks for an unsupported pooling.
    """
    folders = [folder]
    for above in (model.parent, model.parent.parent):
        if above not in folders and above.is_relative_to(folder):
            folders.append(above)
    pooling: str | None = settings.pooling
    if pooling is None:
        pooling = _pooling(_find(folders, POOLING_FILE)) or "mean"
    query, document = settings.query_prefix, settings.document_prefix
    if query is None or document is None:
        found = _find(folders, PROMPTS_FILE) or {}
        prompts = found.get("prompts")
        if query is None:
            query = _prompt(prompts, "query") or ""
        if document is None:
            document = _prompt(prompts, "document", "passage") or ""
    return Recipe(pooling, query, document)
