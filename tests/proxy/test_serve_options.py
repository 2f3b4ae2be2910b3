"""``bot-toolsearch serve`` options: limits and the timeout, checked before anything starts."""

from __future__ import annotations

import pytest

from bot_toolsearch._cli import serve
from bot_toolsearch._proxy import app, limits
from tests._cli_runner import run_cli


def test_serve_defaults_are_the_proxys() -> None:
    assert serve.DEFAULT_MAX_BODY == app.DEFAULT_MAX_BODY
    assert serve.DEFAULT_MAX_TOOLS == app.DEFAULT_MAX_TOOLS
    assert serve.DEFAULT_MAX_IN_FLIGHT == limits.DEFAULT_MAX_IN_FLIGHT
    assert serve.DEFAULT_INDEX_BUILDS == limits.DEFAULT_INDEX_BUILDS


def test_serve_help_states_the_limits_and_the_timeout() -> None:
    result = run_cli("serve", "--help")
    assert result.returncode == 0
    for option in (
        "--timeout",
        "--max-body",
        "--max-tools",
        "413",
        "400",
        "timeout",
        "--max-in-flight",
        "429",
        "--index-builds",
        "503",
        "--api-key",
    ):
        assert option in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--max-body", "0"),
        ("--max-tools", "-1"),
        ("--timeout", "nan"),
        ("--timeout", "0"),
        ("--max-tools", "many"),
        ("--max-in-flight", "0"),
        ("--index-builds", "-2"),
    ],
)
def test_a_limit_that_is_not_positive_is_a_usage_error(args: tuple[str, str]) -> None:
    result = run_cli("serve", "--upstream", "http://127.0.0.1:9/v1", *args)
    assert result.returncode == 2
    assert args[0] in result.stderr


@pytest.mark.parametrize("upstream", ["ftp://h/v1", "http:///v1", "127.0.0.1:8000"])
def test_an_upstream_without_an_http_host_is_refused(upstream: str) -> None:
    result = run_cli("serve", "--upstream", upstream)
    assert result.returncode == 2
    assert "--upstream" in result.stderr
    with pytest.raises(ValueError, match="http"):
        app.ProxyApp(upstream)


def test_the_workers_read_the_bounds_and_keys_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(app.ENV_UPSTREAM, "http://127.0.0.1:9/v1")
    monkeypatch.setenv(app.ENV_MAX_IN_FLIGHT, "7")
    monkeypatch.setenv(app.ENV_INDEX_BUILDS, "3")
    monkeypatch.setenv(app.ENV_API_KEYS, "k-one\nk-two")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    proxy = app.app_from_env()
    assert proxy._in_flight.limit == 7
    assert (app.POOLS.index.workers, app.POOLS.index.queue) == (3, 12)
    assert proxy._keys is not None
    assert proxy._keys.allows("k-two")
    assert not proxy._keys.allows("sk-operator")
    assert proxy._keys.upstream_key == "sk-operator"
