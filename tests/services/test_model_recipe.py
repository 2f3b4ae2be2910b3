"""A local model's recipe read from a sentence-transformers export's files, or from the keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch._config.settings import EmbeddingsSettings
from bot_toolsearch._services.model_recipe import (
    POOLING_FILE,
    PROMPTS_FILE,
    Recipe,
    model_recipe,
)
from bot_toolsearch._transports.embeddings import EmbeddingsError

BGE_QUERY = "Represent this sentence for searching relevant passages: "


def _export(folder: Path, pooling: dict[str, Any] | None, prompts: dict[str, Any] | None) -> Path:
    """A sentence-transformers export's layout: the model in ``onnx/``, the recipe above."""
    (folder / "onnx").mkdir(parents=True)
    model = folder / "onnx" / "model.onnx"
    model.write_bytes(b"")
    if pooling is not None:
        (folder / "1_Pooling").mkdir()
        (folder / POOLING_FILE).write_text(json.dumps(pooling))
    if prompts is not None:
        (folder / PROMPTS_FILE).write_text(json.dumps({"prompts": prompts}))
    return model


def _recipe(folder: Path, model: Path, **table: Any) -> Recipe:
    settings = EmbeddingsSettings.model_validate({"model_dir": folder, **table})
    return model_recipe(settings, folder, model)


def test_a_bge_style_export_reads_cls_pooling_and_its_query_prompt(tmp_path: Path) -> None:
    model = _export(
        tmp_path, {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
        {"query": BGE_QUERY, "document": ""},
    )  # fmt: skip
    assert _recipe(tmp_path, model) == Recipe("cls", BGE_QUERY, "")
    # The model folder may be the onnx folder itself: the files above it are still found.
    assert _recipe(tmp_path, model).key().startswith(":pool=cls")


def test_an_e5_style_passage_prompt_and_keys_that_override(tmp_path: Path) -> None:
    model = _export(tmp_path, {"pooling_mode_mean_tokens": True}, {"query": "query: ",
                    "passage": "passage: "})  # fmt: skip
    assert _recipe(tmp_path, model) == Recipe("mean", "query: ", "passage: ")
    assert _recipe(tmp_path, model, pooling="cls", document_prefix="") == Recipe(
        "cls", "query: ", ""
    )


def test_no_files_no_keys_is_mean_pooling_without_prefixes(tmp_path: Path) -> None:
    model = _export(tmp_path, None, None)
    assert _recipe(tmp_path, model) == Recipe()
    assert Recipe().key() == ""


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (PROMPTS_FILE, "{not json", "cannot be read"),
        (PROMPTS_FILE, "[1, 2]", "not a JSON object"),
        (PROMPTS_FILE, " " * 70_000 + "{}", "larger than"),
        (POOLING_FILE, '{"pooling_mode_lasttoken": true}', "lasttoken"),
    ],
)
def test_a_bad_recipe_file_is_one_clear_error(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    model = _export(tmp_path, None, None)
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text(content)
    with pytest.raises(EmbeddingsError, match=message):
        _recipe(tmp_path, model)
