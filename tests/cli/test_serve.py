"""``bot-toolsearch serve`` (issue 22): what it serves, one ``error:`` line for a port in use,
defaults in ``--help``, and ``--upstream offline`` tried end to end with the openai SDK."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai

from bot_toolsearch.offline import demo_tools
from tests._cli_runner import clean_env, run_cli
from tests._helpers import spare_port

TIMEOUT = 120


def free_port() -> int:
    return spare_port()


def start_serve(
    cwd: Path, *options: str, upstream: str = "offline"
) -> tuple[str, subprocess.Popen[str]]:
    """``python -m bot_toolsearch serve --upstream=offline`` (or ``upstream``) on a free port
    with ``options``, once it answers ``/healthz`` (or has died: its stderr fails the test);
    ``(root, proc)``."""
    port = free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "bot_toolsearch", "serve", f"--upstream={upstream}"),
            *(f"--port={port}", *options),
        ],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while True:  # until it listens (or has died)
        assert proc.poll() is None, proc.communicate(timeout=TIMEOUT)[1]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return f"http://127.0.0.1:{port}", proc
        except httpx.TransportError:
            time.sleep(0.1)


def stop_serve(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C the server; its stderr."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=TIMEOUT)[1]


def test_help_shows_the_defaults() -> None:
    done = run_cli("serve", "--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert "port to listen on (default: 8787)" in help_text
    assert "address to listen on (default: 127.0.0.1)" in help_text
    assert "worker processes (stateless) (default: 1)" in help_text
    assert "'offline' for the embedded offline model" in help_text


def test_a_port_in_use_is_one_error_line_and_exit_1() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--upstream", "http://127.0.0.1:9/v1", "--port", str(port))
    assert done.returncode == 1
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is in use (stop what listens there, or --port N)\n"
    )


def test_a_bad_upstream_is_a_usage_error() -> None:
    done = run_cli("serve", "--upstream", "api.example.com")
    assert done.returncode == 2
    assert done.stderr == (
        "error: --upstream must be an http(s) URL or 'offline', got 'api.example.com'\n"
    )


def test_offline_upstream_through_the_proxy_with_the_openai_sdk(tmp_path: Path) -> None:
    root, proc = start_serve(tmp_path)
    try:
        client = openai.OpenAI(base_url=f"{root}/v1", api_key="no-key-needed", max_retries=0)
        tools = [t.schema() for t in demo_tools()]
        reply = client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Convert 10 km to miles"}],
            tools=tools,  # type: ignore[arg-type]
        )
        client.close()
        calls = reply.choices[0].message.tool_calls or []
        # The proxy ran tool_search with the offline model; the client gets the real call.
        assert [c.function.name.split(".")[0] for c in calls] == ["units"], reply
    finally:
        stderr = stop_serve(proc)
    banner = stderr.splitlines()[0]
    assert banner.startswith(f"serve: {root}/v1 -> upstream http://127.0.0.1:")
    assert "(the EMBEDDED OFFLINE MODEL, not an LLM); config: no config file; tool search on" in (
        banner
    )


def test_the_banner_says_why_tool_search_is_off(tmp_path: Path) -> None:
    # Issue 29: a config that leaves tool_search_enabled unset is said, with the key to set.
    (tmp_path / "config.toml").write_text("[skills]\ntool_search_max_results = 3\n")
    _, proc = start_serve(tmp_path, "--config=config.toml", "--log-level=warning")
    stderr = stop_serve(proc)
    assert (
        "; config: config.toml; tool search off ([skills] tool_search_enabled is not set in "
        in (stderr.splitlines()[0])
    )
    assert stderr.count("tool_search_enabled is not set") == 1  # once, not once per worker


def test_the_banner_never_shows_the_upstreams_credentials(tmp_path: Path) -> None:
    """Issue 27: the banner printed ``user:password`` and a key in the query as given."""
    port = free_port()
    upstream = "http://operator:s3cret-pw@127.0.0.1:9/v1?api-key=k3y-value&region=eu"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot_toolsearch",
            "serve",
            f"--upstream={upstream}",
            f"--port={port}",
        ],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=TIMEOUT)
    assert banner.startswith(
        f"serve: http://127.0.0.1:{port}/v1 -> upstream "
        "http://REDACTED@127.0.0.1:9/v1?api-key=REDACTED&region=eu; "
    ), banner
    for secret in ("s3cret-pw", "k3y-value", "operator"):
        assert secret not in banner + rest


def test_a_bad_upstream_with_credentials_is_redacted_in_the_error() -> None:
    done = run_cli("serve", "--upstream", "ftp://u:s3cret@host/")
    assert done.returncode == 2
    assert "s3cret" not in done.stderr
    assert "ftp://REDACTED@host/" in done.stderr
