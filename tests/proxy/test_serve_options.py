"""``bot-toolsearch serve`` options: limits and the timeout, checked before anything starts."""

from __future__ import annotations

import pytest

from bot_toolsearch._cli import serve
from bot_toolsearch._proxy import app
from tests._cli_runner import run_cli


def test_serve_defaults_are_the_proxys() -> None:
    assert serve.DEFAULT_MAX_BODY == app.DEFAULT_MAX_BODY
    assert serve.DEFAULT_MAX_TOOLS == app.DEFAULT_MAX_TOOLS


def test_serve_help_states_the_limits_and_the_timeout() -> None:
    result = run_cli("serve", "--help")
    assert result.returncode == 0
    for option in ("--timeout", "--max-body", "--max-tools", "413", "400", "timeout"):
        assert option in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--max-body", "0"),
        ("--max-tools", "-1"),
        ("--timeout", "nan"),
        ("--timeout", "0"),
        ("--max-tools", "many"),
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
