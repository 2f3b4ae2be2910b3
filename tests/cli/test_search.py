"""``search`` and ``catalog stats``: offline catalog debugging, including bad catalog files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bot_toolsearch._cli.search import (
    CatalogFileError,
    catalog_stats,
    explain_search,
    load_catalog_file,
)
from bot_toolsearch._core.catalog import ToolCatalog
from bot_toolsearch._demo.catalog import demo_schemas
from tests._cli_runner import run_cli


@pytest.fixture
def catalog_file(tmp_path: Path) -> Path:
    schemas = demo_schemas()
    schemas += [
        {"type": "function", "function": {"name": "Weather.Current"}},
        {"type": "function", "function": {"name": "bad name"}},
        schemas[0],
    ]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(schemas, ensure_ascii=False), encoding="utf-8")
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def test_explain_search_reports_scores_and_matched_fields() -> None:
    catalog = ToolCatalog(demo_schemas())
    matches, truncated, not_found = explain_search(catalog, "weather forecasting", 2)
    assert [m.name for m in matches] == ["weather.forecast", "weather.hourly_forecast"]
    assert truncated
    assert not_found == ()
    assert matches[0].score is not None
    assert matches[1].score is not None
    assert matches[0].score > matches[1].score
    # The namespace is its own field since #14: the name field holds the part after the dot.
    assert set(matches[0].matched["name"]) == {"forecast"}
    assert set(matches[0].matched["namespace"]) == {"weather"}


def test_explain_search_handles_cjk_and_select() -> None:
    catalog = ToolCatalog(demo_schemas())
    matches, _, _ = explain_search(catalog, "成员 头像")
    assert matches[0].name == "group.get_member_avatar"
    assert set(matches[0].matched["description"]) == {"成员", "头像"}
    selected, _, not_found = explain_search(catalog, "select:time.now,nope")
    assert [(m.name, m.score) for m in selected] == [("time.now", None)]
    assert not_found == ("nope",)


def test_catalog_stats_counts_names_and_tokens(catalog_file: Path) -> None:
    stats = catalog_stats(load_catalog_file(str(catalog_file)), "-_-")
    total = len(demo_schemas())
    assert stats.entries == total + 3
    assert stats.usable == total + 1
    assert ("time.now", "time-_-now") in stats.renamed
    assert stats.invalid == (("'bad name'", "name contains whitespace"),)
    assert stats.duplicates == (demo_schemas()[0]["function"]["name"],)
    assert stats.case_variants == (("weather.current", "Weather.Current"),)
    assert stats.projected_tokens * 5 < stats.full_tokens


def test_responses_shaped_entries_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps([{"type": "function", "name": "a.b", "parameters": {}}]))
    assert load_catalog_file(str(path))[0]["function"]["name"] == "a.b"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ('{"a": 1}', "expected a JSON list"),
        ("[1, 2]", "expected a JSON list"),
        (b"\xff\xfe", "cannot read"),
    ],
)
def test_malformed_catalog_files_raise_one_clear_error(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "tools.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(CatalogFileError, match=message):
        load_catalog_file(str(path))
    with pytest.raises(CatalogFileError, match="no such file"):
        load_catalog_file(str(tmp_path / "missing.json"))


def test_search_command_shows_rank_score_and_why(catalog_file: Path) -> None:
    done = cli("search", "成员 头像", "--catalog", str(catalog_file), "--explain")
    assert done.returncode == 0, done.stderr
    ranking, first, why = done.stdout.splitlines()[:3]
    assert ranking == "ranking: BM25 (no embedding model configured)"
    assert re.fullmatch(r" 1\. +\d+\.\d\d  group\.get_member_avatar", first)
    assert "description: 成员, 头像" in why


def test_search_command_caps_results_and_reports_no_match(catalog_file: Path) -> None:
    done = cli("search", "convert", "--catalog", str(catalog_file), "--max-results", "2")
    assert done.returncode == 0
    ranked = [line for line in done.stdout.splitlines() if re.match(r" *\d+\. ", line)]
    assert len(ranked) == 2
    assert "raise --max-results above 2" in done.stdout
    none = cli("search", "xyzzy", "--catalog", str(catalog_file))
    assert none.returncode == 1
    assert "no tool matches 'xyzzy'" in none.stdout


def test_catalog_stats_command(catalog_file: Path) -> None:
    done = cli("catalog", "stats", str(catalog_file))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"tools: {len(demo_schemas()) + 1} usable of {len(demo_schemas()) + 3} entries" in out
    assert "time.now -> time-_-now" in out
    assert "'bad name': name contains whitespace" in out
    assert "weather.current, Weather.Current" in out
    assert "o200k_base" in out
    full = re.search(r"full tools list: +(\d+)", out)
    first = re.search(r"first request with tool search: +(\d+)", out)
    assert full is not None
    assert first is not None
    assert int(first.group(1)) * 5 < int(full.group(1))


@pytest.mark.parametrize("command", ["search", "stats"])
@pytest.mark.parametrize("content", ["{", '{"a": 1}', "[]x", '[{"type": "function"}, 3]'])
def test_malformed_catalog_is_one_line_and_nonzero(
    tmp_path: Path, command: str, content: str
) -> None:
    path = tmp_path / "tools.json"
    path.write_text(content)
    args = ["search", "x", "--catalog", str(path)] if command == "search" else ["catalog", "stats"]
    done = cli(*args) if command == "search" else cli(*args, str(path))
    assert done.returncode == 1  # a bad input file is a failure; 2 is for a bad command line
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: ")
    assert str(path) in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_catalog_is_a_clear_error_and_a_reserved_name_only_a_warning(
    tmp_path: Path,
) -> None:
    missing = cli("catalog", "stats", str(tmp_path / "nope.json"))
    assert missing.returncode == 1
    assert "no such file" in missing.stderr
    reserved = tmp_path / "reserved.json"
    entries = [{"type": "function", "function": {"name": n}} for n in ("tool_search", "weather")]
    reserved.write_text(json.dumps(entries))
    done = cli("search", "weather", "--catalog", str(reserved))
    assert done.returncode == 0, done.stderr
    assert "weather" in done.stdout
    assert "reserved" in done.stderr
    assert "Traceback" not in done.stderr


def test_search_names_select_misses_and_explains_one_word_tiers(catalog_file: Path) -> None:
    done = cli("search", "select:time.now,nope", "--catalog", str(catalog_file))
    assert done.returncode == 0
    assert "not in the catalog: nope" in done.stdout
    one_word = cli("search", "weather", "--catalog", str(catalog_file), "--explain")
    assert one_word.returncode == 0
    assert "name hits rank first" in one_word.stdout
    # Scores are shown within their tier, not as the index's raw tier offset.
    scores = [float(s) for s in re.findall(r"^ *\d+\. +([\d.]+) ", one_word.stdout, re.M)]
    assert scores
    assert all(s < 1000 for s in scores)


def test_catalog_stats_lists_reserved_names_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    entries = [{"type": "function", "function": {"name": n}} for n in ("tool_search", "a", "a")]
    path.write_text(json.dumps(entries))
    done = cli("catalog", "stats", str(path))
    assert done.returncode == 0, done.stderr
    assert "tools: 1 usable of 3 entries" in done.stdout
    assert "'tool_search': reserved" in done.stdout
    assert "duplicate names (first kept): 1" in done.stdout
    assert "does not pay off" in done.stdout
    assert done.stderr == ""  # the skipped entries are in the report, not repeated as warnings


def test_search_selects_a_wire_spelling(
    catalog_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot_toolsearch._cli.main import main

    assert main(["search", "select:weather-_-forecast", "--catalog", str(catalog_file)]) == 0
    out = capsys.readouterr().out
    assert "weather.forecast" in out
    assert "not in the catalog" not in out


def test_catalog_stats_counts_tokens_with_the_core_not_the_demo() -> None:
    from tests.test_layering import graph

    edges = graph()
    for module in ("bot_toolsearch._cli.catalog", "bot_toolsearch._demo.run"):
        assert "bot_toolsearch._core.token_count" in edges[module], module
    assert not [d for d in edges["bot_toolsearch._cli.catalog"] if "._demo" in d]


def test_a_keyword_query_without_hits_is_no_match_not_a_missing_name(
    catalog_file: Path,
) -> None:
    done = cli("search", "xyzzy frobnicate", "--catalog", str(catalog_file))
    assert done.returncode == 1
    assert "not in the catalog" not in done.stdout
    assert (
        done.stdout
        == f"no tool matches 'xyzzy frobnicate' ({len(demo_schemas()) + 1} tools searched)\n"
    )


def test_explain_shows_the_words_not_their_stems(catalog_file: Path) -> None:
    done = cli("search", "converting temperatures", "--catalog", str(catalog_file), "--explain")
    assert done.returncode == 0, done.stderr
    why = done.stdout.splitlines()[2]
    assert "name: convert, temperature" in why
    assert "temperatur," not in why
    assert "temperatur;" not in why
    prefix = cli("search", "temp", "--catalog", str(catalog_file), "--explain")
    assert "temp~temperature" in prefix.stdout  # the query's word, then the tool's


def test_catalog_stats_of_a_tiny_catalog_is_honest_about_the_cost(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(
        json.dumps([{"type": "function", "function": {"name": "a", "description": "A."}}])
    )
    done = cli("catalog", "stats", str(path))
    assert done.returncode == 0, done.stderr
    assert "tools: 1 usable of 1 entry\n" in done.stdout
    cost = re.search(r"tool search costs more: +(\d+) \((\d+\.\d)% more\)", done.stdout)
    assert cost is not None, done.stdout
    full = int(re.search(r"full tools list: +(\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    first = int(re.search(r"with tool search: +(\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert int(cost.group(1)) == first - full > 0
    assert float(cost.group(2)) == round((first - full) / full * 100, 1)
    assert "saved" not in done.stdout
    assert "-" not in cost.group(0)


def test_catalog_export_feeds_search_and_search_takes_the_config(tmp_path: Path) -> None:
    tools = "bot_toolsearch._demo.catalog:demo_tools"
    exported = run_cli("catalog", "export", "--tools", tools, "-o", "tools.json", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    schemas = json.loads((tmp_path / "tools.json").read_text(encoding="utf-8"))
    names = [s["function"]["name"] for s in schemas]
    assert names[:2] == ["send_message", "end"]  # the built-ins a model is offered too
    assert len(names) == len(demo_schemas()) + 2
    from_file = run_cli("search", "convert km miles", "--catalog", "tools.json", cwd=tmp_path)
    merged = run_cli("search", "convert km miles", "--tools", tools, cwd=tmp_path)
    assert from_file.returncode == merged.returncode == 0, merged.stderr
    assert from_file.stdout == merged.stdout
    assert "units.convert_length" in merged.stdout
    both = run_cli("search", "x", "--catalog", "tools.json", "--tools", tools, cwd=tmp_path)
    assert both.returncode == 2
    assert both.stderr == "error: give --catalog FILE, or --config/--tools, not both\n"


def test_search_with_a_config_uses_its_namespace_descriptions(tmp_path: Path) -> None:
    # The bot searches [tools.namespaces] descriptions in the namespace field; so must the CLI
    # that explains the bot's ranking (it searched without them).
    tools = "bot_toolsearch._demo.catalog:demo_tools"
    config = tmp_path / "bot.toml"
    config.write_text('[tools.namespaces]\nfinance = "Zorblax money helpers."\n', "utf-8")
    args = ("search", "zorblax", "--tools", tools, "--explain", "--max-results", "3")
    found = run_cli(*args, "--config", str(config), cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    lines = [
        line.split()[-1] for line in found.stdout.splitlines() if line[:3].strip()[:-1].isdigit()
    ]
    assert len(lines) == 3
    assert all(name.startswith("finance.") for name in lines)
    assert "matched namespace description: zorblax" in found.stdout
    plain = run_cli(*args, cwd=tmp_path)  # no config: no description to match
    assert plain.returncode == 1
    assert "no tool matches 'zorblax'" in plain.stdout


def test_a_namespace_too_large_to_load_lists_its_names_not_no_match(tmp_path: Path) -> None:
    done = run_cli(
        "search",
        "select:units.*",
        "--tools",
        "bot_toolsearch._demo.catalog:demo_tools",
        cwd=tmp_path,
    )
    units = sorted(
        s["function"]["name"] for s in demo_schemas() if s["function"]["name"].startswith("units.")
    )
    assert len(units) > 5
    assert done.returncode == 0, done.stdout
    assert "no tool matches" not in done.stdout
    assert f"{len(units)} names listed, none loaded" in done.stdout
    listed = re.findall(r"^\s*\d+\.\s+-\s+(\S+)$", done.stdout, re.M)
    assert sorted(listed) == units
    done = run_cli(
        "search",
        "select:units.*",
        "--max-results",
        "20",
        "--tools",
        "bot_toolsearch._demo.catalog:demo_tools",
        cwd=tmp_path,
    )
    assert done.returncode == 0
    assert "none loaded" not in done.stdout
    assert sorted(re.findall(r"^\s*\d+\.\s+-\s+(\S+)$", done.stdout, re.M)) == units


def test_search_is_hybrid_with_the_configured_model_and_says_which_ranking_answered(
    tmp_path: Path,
) -> None:
    """As the bot searches: a config with an embedding model finds a tool by meaning where
    BM25 alone finds nothing, and the first line says which ranking answered."""
    tools = [
        {"type": "function", "function": {"name": "weather.forecast", "description": "Forecast."}},
        {"type": "function", "function": {"name": "music.play", "description": "Play a song."}},
        {"type": "function", "function": {"name": "mail.send", "description": "Send an email."}},
    ]
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    query = ("search", "will it rain tomorrow", "--explain", "--max-results", "1")
    plain = run_cli(*query, "--catalog", "tools.json", cwd=tmp_path)
    assert plain.returncode == 1
    assert plain.stdout.splitlines()[0] == "ranking: BM25 (no embedding model configured)"
    hybrid = run_cli(*query, "--catalog", "tools.json", "--local-model", cwd=tmp_path)
    assert hybrid.returncode == 0, hybrid.stderr
    first, rank, why = hybrid.stdout.splitlines()[:3]
    assert first == "ranking: hybrid, BM25 fused with all-MiniLM-L6-v2 (local = true)"
    assert rank.split()[-1] == "weather.forecast"
    assert "found by meaning" in why
    # The config's model, as a bot with that config searches.
    (tmp_path / "config.toml").write_text(
        f'[skills.tool_search_embeddings]\nlocal = true\ncache_dir = "{tmp_path / "c"}"\n',
        encoding="utf-8",
    )
    configured = run_cli(
        "search", "will it rain tomorrow", "--config", "config.toml", "--tools",
        "bot_toolsearch._demo.catalog:demo_tools", "--max-results", "1", cwd=tmp_path,
    )  # fmt: skip
    assert configured.returncode == 0, configured.stderr
    assert configured.stdout.startswith("ranking: hybrid")
    assert "weather." in configured.stdout


def test_search_leaves_out_the_always_loaded_tools_as_the_bot_does(tmp_path: Path) -> None:
    tools = "bot_toolsearch._demo.catalog:demo_tools"
    done = run_cli("search", "send a message to the user", "--tools", tools, cwd=tmp_path)
    assert "send_message" not in done.stdout
