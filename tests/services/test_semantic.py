"""The semantic stage over real HTTP: the scripted server's ``/v1/embeddings``, the disk cache,
every endpoint fault, and the same behaviour through the `Bot`, `wrap_openai` and the proxy."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from bot_toolsearch import Bot, BotSettings, tool, wrap_openai
from bot_toolsearch._errors import ConfigError
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._services.semantic import (
    VectorCache,
    _identity,
    semantic_ranker,
    warm_semantic,
)
from bot_toolsearch._services.threads import POOLS
from bot_toolsearch.config import ConfigReloader
from bot_toolsearch.core import ToolCatalog, ToolSearchSession
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests._helpers import served


def _schema(name: str, description: str, *params: str) -> dict[str, Any]:
    properties = {p: {"type": "string"} for p in params}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


TOOLS = [
    _schema("weather.forecast", "Forecast for a city.", "city"),
    _schema("music.play", "Play a song.", "title"),
    _schema("mail.send", "Send an email.", "to", "body"),
]
RAIN = "will it rain tomorrow"  # no word of weather.forecast, only a concept


@pytest.fixture
def embeddings(server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    server.embeddings.dimension = 256
    server.embeddings.aliases.update({"rain": "weather", "tomorrow": "forecast"})
    return server


def _settings(
    server: ScriptedOpenAIServer, cache: Path, *, generation: int = 0, **table: Any
) -> BotSettings:
    wanted = {"model": "hashed-words", "base_url": server.base_url, "cache_dir": str(cache)}
    wanted.update(table)
    settings = BotSettings.model_validate(
        {"skills": {"tool_search_enabled": True, "tool_search_embeddings": wanted}}
    )
    return settings.model_copy(update={"generation": generation})


def _session(settings: BotSettings, catalog: ToolCatalog, **kwargs: Any) -> ToolSearchSession:
    return ToolSearchSession(catalog, semantic=semantic_ranker(settings, catalog), **kwargs)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "tool_search_embeddings" in r.getMessage()
    ]


# -- settings ---------------------------------------------------------------------------------


def test_the_table_is_validated_with_clear_errors() -> None:
    with pytest.raises(ConfigError, match=r"embeddings: needs 'local = true'.*'model'.*'package'"):
        BotSettings.model_validate({"skills": {"tool_search_embeddings": {"timeout": 3.0}}})
    with pytest.raises(ConfigError, match=r"tool_search_embeddings\.base_url"):
        BotSettings.model_validate(
            {"skills": {"tool_search_embeddings": {"model": "m", "base_url": "localhost:1"}}}
        )
    with pytest.raises(ConfigError, match="did you mean 'timeout'"):
        BotSettings.model_validate(
            {"skills": {"tool_search_embeddings": {"model": "m", "timeot": 1.0}}}
        )
    with pytest.raises(ConfigError, match=r"tool_search_embeddings\.api_key_env"):
        BotSettings.model_validate(
            {"skills": {"tool_search_embeddings": {"model": "m", "api_key_env": "sk-123 45"}}}
        )
    assert BotSettings().skills.tool_search_embeddings is None  # off by default


def test_the_key_is_read_from_config_toml_and_hot_reloaded(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[skills]\ntool_search_enabled = true\n", encoding="utf-8")
    reloader = ConfigReloader(path)
    catalog = ToolCatalog(TOOLS)
    assert _session(reloader.snapshot(), catalog).search(RAIN).loaded == ()
    table = f'{{ model = "m", base_url = "{embeddings.base_url}", cache_dir = "{tmp_path}" }}'
    path.write_text(
        f"[skills]\ntool_search_enabled = true\ntool_search_embeddings = {table}\n",
        encoding="utf-8",
    )
    assert reloader.reload()
    found = _session(reloader.snapshot(), catalog, max_results=1).search(RAIN)
    assert found.loaded == ("weather.forecast",)
    path.write_text(
        '[skills]\ntool_search_enabled = true\ntool_search_embeddings = { base_url = "x" }\n',
        encoding="utf-8",
    )
    assert not reloader.reload()  # refused: the last good settings stay in force
    assert reloader.last_error is not None
    assert "tool_search_embeddings.base_url" in str(reloader.last_error)
    assert reloader.snapshot().skills.tool_search_embeddings is not None


def test_off_by_default_means_no_ranker() -> None:
    assert semantic_ranker(BotSettings(), ToolCatalog(TOOLS)) is None


# -- the semantic stage -------------------------------------------------------------------------


def test_a_query_sharing_no_word_with_its_tool_is_found(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    catalog = ToolCatalog(TOOLS)
    assert ToolSearchSession(catalog).search(RAIN).loaded == ()  # BM25 alone: nothing
    result = _session(_settings(embeddings, tmp_path), catalog, max_results=1).search(RAIN)
    assert result.loaded == ("weather.forecast",)
    catalog_request, query_request = embeddings.embeddings.requests
    assert len(catalog_request["input"]) == 3
    assert catalog_request["model"] == "hashed-words"
    assert catalog_request["encoding_format"] == "float"
    assert query_request["input"] == [RAIN]


def test_endpoint_prefixes_and_input_types_are_opt_in_and_key_the_cache(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    catalog = ToolCatalog(TOOLS)
    _session(_settings(embeddings, tmp_path), catalog).search(RAIN)
    plain = embeddings.embeddings.requests
    assert all("input_type" not in r for r in plain)  # off by default
    assert plain[1]["input"] == [RAIN]
    assert not plain[0]["input"][0].startswith("passage")
    typed = _settings(
        embeddings,
        tmp_path,
        query_prefix="query: ",
        document_prefix="passage: ",
        query_input_type="query",
        document_input_type="passage",
    )
    assert _session(typed, ToolCatalog(TOOLS), max_results=1).search(RAIN).loaded == (
        "weather.forecast",
    )
    documents, query = embeddings.embeddings.requests[2:]
    assert documents["input_type"] == "passage"
    assert all(text.startswith("passage: ") for text in documents["input"])
    assert len(documents["input"]) == 3  # other tool vectors: the cache had none for them
    assert query == {**query, "input": ["query: " + RAIN], "input_type": "query"}
    assert len(list(tmp_path.glob("*.vectors"))) == 2
    # Only the query's side changed: the tool vectors are the same, read from the cache.
    query_only = _settings(embeddings, tmp_path, query_prefix="query: ")
    _session(query_only, ToolCatalog(TOOLS)).search("play a tune")
    assert [r["input"] for r in embeddings.embeddings.requests[4:]] == [["query: play a tune"]]


@pytest.mark.parametrize("query", ["select:music.play", "music.play", "Music.Play", "music.*"])
def test_select_and_exact_names_send_no_embeddings_request(
    embeddings: ScriptedOpenAIServer, tmp_path: Path, query: str
) -> None:
    session = _session(_settings(embeddings, tmp_path), ToolCatalog(TOOLS))
    assert session.search(query).loaded == ("music.play",)
    assert embeddings.embeddings.requests == []


def test_required_terms_still_filter(embeddings: ScriptedOpenAIServer, tmp_path: Path) -> None:
    session = _session(_settings(embeddings, tmp_path), ToolCatalog(TOOLS))
    assert session.search(f"{RAIN} +song").loaded == ("music.play",)


def test_the_catalog_is_embedded_once_and_then_read_from_the_disk_cache(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    settings = _settings(embeddings, tmp_path)
    catalog = ToolCatalog(TOOLS)
    _session(settings, catalog).search(RAIN)
    _session(settings, catalog).search("send a letter")  # same catalog: only the query
    assert [len(r["input"]) for r in embeddings.embeddings.requests] == [3, 1, 1]
    # A new catalog of the same tools (a restart, another tool list): the disk cache answers.
    _session(settings, ToolCatalog(TOOLS)).search("play a tune")
    assert embeddings.embeddings.texts()[-1] == "play a tune"
    assert len(embeddings.embeddings.requests) == 4
    # One changed tool: only its text is embedded.
    changed = [*TOOLS[:2], _schema("mail.send", "Send an e-mail message.", "to", "body")]
    _session(settings, ToolCatalog(changed)).search("write to a friend")
    assert [len(r["input"]) for r in embeddings.embeddings.requests[4:]] == [1, 1]
    assert "e-mail" in embeddings.embeddings.requests[4]["input"][0]


def _cache_file(folder: Path) -> Path:
    (found,) = folder.glob("*.vectors")
    return found


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty"])
def test_a_corrupt_cache_file_is_rebuilt_not_trusted(
    embeddings: ScriptedOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: str,
) -> None:
    settings = _settings(embeddings, tmp_path)
    _session(settings, ToolCatalog(TOOLS)).search(RAIN)
    path = _cache_file(tmp_path)
    data = path.read_bytes()
    damaged = {
        "truncated": data[:-7],
        "flipped": data[:-5] + bytes([data[-5] ^ 0x40]) + data[-4:],
        "garbage": b"\x00garbage" * 10,
        "empty": b"",
    }[damage]
    path.write_bytes(damaged)
    result = _session(settings, ToolCatalog(TOOLS), max_results=1).search(RAIN)
    assert result.loaded == ("weather.forecast",)
    assert [len(r["input"]) for r in embeddings.embeddings.requests] == [3, 1, 3]
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    assert path.read_bytes() == data  # rewritten whole


def test_a_cache_file_of_another_model_is_not_trusted(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    first = _settings(embeddings, tmp_path)
    _session(first, ToolCatalog(TOOLS)).search(RAIN)
    other = _settings(embeddings, tmp_path, model="other-model")
    # Even under the other model's own file name, the first model's file is refused.
    endpoint = embeddings.base_url.rstrip("/")
    target = VectorCache(tmp_path, _identity(endpoint, "other-model")).path
    _cache_file(tmp_path).rename(target)
    _session(other, ToolCatalog(TOOLS)).search("send a letter")
    requests = embeddings.embeddings.requests
    assert [(r["model"], len(r["input"])) for r in requests[2:]] == [
        ("other-model", 3),
        ("other-model", 1),
    ]


def test_credentials_in_the_base_url_reach_no_log_and_no_cache_file(
    embeddings: ScriptedOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27: the cache header held the base URL in clear, and a failure logged it."""
    secret_url = embeddings.base_url.replace("http://", "http://operator:s3cret-pw@")
    settings = _settings(embeddings, tmp_path, base_url=secret_url)
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        _session(settings, ToolCatalog(TOOLS)).search(RAIN)
    assert len(embeddings.embeddings.requests) == 2  # the endpoint was used
    data = _cache_file(tmp_path).read_bytes()
    assert b"s3cret-pw" not in data
    assert b"operator" not in data
    assert b"127.0.0.1" not in data  # the identity is a hash
    down = _settings(
        embeddings,
        tmp_path,
        generation=7,
        base_url="http://operator:s3cret-pw@127.0.0.1:9/v1?api-key=k3y-value",
        timeout=0.5,
    )
    with caplog.at_level(logging.DEBUG, logger="bot_toolsearch"):
        _session(down, ToolCatalog(TOOLS)).search(RAIN)
    (warning,) = _warnings(caplog)
    assert "http://REDACTED@127.0.0.1:9/v1?api-key=REDACTED" in warning
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "s3cret-pw" not in logged
    assert "k3y-value" not in logged


# -- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["down", "slow", "dimension", "nan", "count", "not_json"])
def test_every_fault_leaves_bm25_and_one_warning_per_reload(
    embeddings: ScriptedOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fault: Any,
) -> None:
    embeddings.embeddings.fault = fault
    embeddings.embeddings.delay = 1.0
    catalog = ToolCatalog(TOOLS)
    plain = ToolSearchSession(catalog).search("send email")
    assert plain.loaded == ("mail.send",)
    for generation in (3, 4):
        # Nothing left in the embeddings pool by earlier tests of this process (a full pool
        # starts no build: BM25 answers, rightly, with no endpoint failure to warn of).
        assert POOLS.embeddings.wait_idle(30)
        settings = _settings(embeddings, tmp_path, generation=generation, timeout=0.2)
        for _ in range(3):
            assert _session(settings, catalog).search("send email") == plain
            assert _session(settings, catalog).search(RAIN).loaded == ()
        assert POOLS.embeddings.wait_idle(30)  # the generation's build has failed, and said so
        assert len(_warnings(caplog)) == generation - 2
    # Once per reload: the endpoint is asked again after a reload, not on every search.
    assert len(embeddings.embeddings.requests) == 2
    assert not list(tmp_path.glob("*.vectors"))


def test_a_query_vector_of_another_dimension_is_refused(
    embeddings: ScriptedOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(embeddings, tmp_path)
    catalog = ToolCatalog(TOOLS)
    assert _session(settings, catalog, max_results=1).search(RAIN).loaded == ("weather.forecast",)
    embeddings.embeddings.fault = "dimension"
    assert _session(settings, catalog).search("play a tune").loaded == ("music.play",)
    (warning,) = _warnings(caplog)
    assert "dimension 128, expected 256" in warning


def test_a_missing_api_key_is_a_warning_not_a_crash(
    embeddings: ScriptedOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BOT_TOOLSEARCH_TEST_EMBEDDINGS_KEY", raising=False)
    settings = _settings(embeddings, tmp_path, api_key_env="BOT_TOOLSEARCH_TEST_EMBEDDINGS_KEY")
    assert _session(settings, ToolCatalog(TOOLS)).search("send email").loaded == ("mail.send",)
    (warning,) = _warnings(caplog)
    assert "BOT_TOOLSEARCH_TEST_EMBEDDINGS_KEY is unset" in warning
    assert embeddings.embeddings.requests == []


def test_the_key_goes_to_the_embeddings_endpoint_only_as_a_header(
    embeddings: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_TOOLSEARCH_TEST_EMBEDDINGS_KEY", "sk-secret-embeddings")
    settings = _settings(embeddings, tmp_path, api_key_env="BOT_TOOLSEARCH_TEST_EMBEDDINGS_KEY")
    _session(settings, ToolCatalog(TOOLS)).search(RAIN)
    assert b"sk-secret" not in _cache_file(tmp_path).read_bytes()


# -- the three doors ----------------------------------------------------------------------------


@tool(name="weather.forecast", description="Forecast for a city.")
def forecast(city: str) -> str:
    return f"{city}: sunny"


@tool(name="music.play", description="Play a song.")
def play(title: str) -> str:
    return title


def _loaded(request_messages: list[Any]) -> list[str]:
    results = [m for m in request_messages if isinstance(m, dict) and m.get("role") == "tool"]
    loaded: list[str] = json.loads(results[-1]["content"])["loaded"]
    return loaded


async def test_the_bot_finds_a_tool_through_the_semantic_stage(
    embeddings: ScriptedOpenAIServer, client: openai.AsyncOpenAI, tmp_path: Path
) -> None:
    embeddings.script(call("tool_search", query=RAIN), text("Sunny."))
    bot = Bot(_settings(embeddings, tmp_path), [forecast, play], client=client)
    await bot.ask("Rain tomorrow?")
    assert "weather-_-forecast" in embeddings.requests[1].tool_names
    assert embeddings.embeddings.texts()[-1] == RAIN


async def test_the_bot_falls_back_to_bm25_with_one_warning(
    embeddings: ScriptedOpenAIServer,
    client: openai.AsyncOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    embeddings.embeddings.fault = "down"
    embeddings.script(
        call("tool_search", query="play song"),
        text("Done."),
        call("tool_search", query="play song"),
        text("Done."),
    )
    bot = Bot(_settings(embeddings, tmp_path), [forecast, play], client=client)
    await bot.ask("Play a song")
    await bot.ask("Play a song")
    assert "music-_-play" in embeddings.requests[1].tool_names
    assert "music-_-play" in embeddings.requests[3].tool_names
    assert len(_warnings(caplog)) == 1


@pytest.mark.parametrize("fault", [None, "down"])
async def test_wrap_openai_searches_semantically_and_falls_back(
    embeddings: ScriptedOpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fault: Any,
) -> None:
    embeddings.embeddings.fault = fault
    embeddings.script(
        call("tool_search", query=RAIN),
        text("Sunny."),
        call("tool_search", query="play song"),
        text("Done."),
    )
    inner = openai.AsyncOpenAI(base_url=embeddings.base_url, api_key="k", max_retries=0)
    client = wrap_openai(inner, settings=_settings(embeddings, tmp_path))
    user = {"role": "user", "content": "Rain?"}
    await client.chat.completions.create(model="m", messages=[user], tools=TOOLS)
    stream = await client.chat.completions.create(
        model="m", messages=[user], tools=TOOLS, stream=True
    )
    async for _ in stream:
        pass
    await client.close()
    rain, song = (
        _loaded(embeddings.requests[1].body["messages"]),
        _loaded(embeddings.requests[3].body["messages"]),
    )
    assert song[0] == "music.play"
    if fault is None:
        assert rain[0] == "weather.forecast"
        assert _warnings(caplog) == []
    else:
        assert rain == []
        assert len(_warnings(caplog)) == 1


def test_wrap_openai_sync_client_searches_semantically(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    embeddings.script(call("tool_search", query=RAIN), text("Sunny."))
    inner = openai.OpenAI(base_url=embeddings.base_url, api_key="k", max_retries=0)
    client = wrap_openai(inner, settings=_settings(embeddings, tmp_path))
    client.responses.create(model="m", input="Rain?", tools=[_flat(t) for t in TOOLS])
    client.close()
    assert "weather-_-forecast" in embeddings.requests[1].tool_names


def _flat(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", **schema["function"]}


@pytest.fixture
def semantic_proxy(embeddings: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[str]:
    app = ProxyApp(embeddings.base_url, settings=_settings(embeddings, tmp_path))
    with served(app) as root:
        yield f"{root}/v1"


def test_the_proxy_searches_semantically_then_falls_back_with_one_warning(
    embeddings: ScriptedOpenAIServer, semantic_proxy: str, caplog: pytest.LogCaptureFixture
) -> None:
    embeddings.script(
        call("tool_search", query=RAIN),
        text("Sunny."),
        call("tool_search", query="play song"),
        text("Done."),
        call("tool_search", query="play song"),
        text("Done."),
    )
    client = openai.OpenAI(base_url=semantic_proxy, api_key="k", max_retries=0)
    user = {"role": "user", "content": "Rain?"}
    client.chat.completions.create(model="m", messages=[user], tools=TOOLS)
    assert _loaded(embeddings.requests[1].body["messages"])[0] == "weather.forecast"
    embeddings.embeddings.fault = "not_json"
    for _ in range(2):
        client.chat.completions.create(model="m", messages=[user], tools=TOOLS)
    client.close()
    assert _loaded(embeddings.requests[5].body["messages"])[0] == "music.play"
    assert len(_warnings(caplog)) == 1


def test_the_client_packs_each_vector_as_it_arrives(embeddings: ScriptedOpenAIServer) -> None:
    # 10,000 tools of 1,536 dimensions as lists of float objects held ~490 MB before packing;
    # packed per batch (float64, the very values sent), the same catalog holds 123 MB.
    from array import array

    from bot_toolsearch._transports.embeddings import EmbeddingsClient

    settings = _settings(embeddings, Path("unused"), batch_size=2)
    assert settings.skills.tool_search_embeddings is not None
    texts = ["forecast for a city", "play a song", "send an email"]
    vectors = EmbeddingsClient(settings.skills.tool_search_embeddings).embed(texts)
    assert [type(v) for v in vectors] == [array] * 3
    assert all(v.typecode == "d" for v in vectors)
    assert [list(v) for v in vectors] == [embeddings.embeddings.vector(t) for t in texts]
    assert len(embeddings.embeddings.requests) == 2  # batches of two


# -- bounds: the budget, and a failure seen by the next search -----------------------------------


def test_past_the_budget_nothing_is_sent_and_one_line_says_so(
    embeddings: ScriptedOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(embeddings, tmp_path, max_texts_per_minute=2)  # the catalog needs 3
    catalog = ToolCatalog(TOOLS)
    for _ in range(3):
        assert _session(settings, catalog).search("send email").loaded == ("mail.send",)
    assert embeddings.embeddings.requests == []
    budget = [r.getMessage() for r in caplog.records if "max_texts_per_minute" in r.getMessage()]
    assert len(budget) == 1
    assert "budget of 2 texts a minute" in budget[0]


def test_a_failure_of_the_background_build_is_honoured_by_the_next_search(
    embeddings: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    embeddings.embeddings.fault = "slow"
    embeddings.embeddings.delay = 1.0
    settings = _settings(embeddings, tmp_path, timeout=0.2)
    catalog = ToolCatalog(TOOLS)
    started = warm_semantic(settings, catalog)
    assert started is not None
    for _ in range(3):  # the first waits for the build (at most its timeout), then BM25
        assert _session(settings, catalog).search("send email").loaded == ("mail.send",)
    assert POOLS.embeddings.wait_idle(30)
    assert len(embeddings.embeddings.requests) == 1  # the build's, never a second one
