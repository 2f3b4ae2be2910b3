"""docs/core.md's semantic stage, run as written (issue 32): the offline server's
``/v1/embeddings`` behind ``serve --upstream offline``, the documented config, the cache it
writes, and a second ask that embeds only its query; the real-endpoint config is valid."""

from __future__ import annotations

import json
import re
import shlex
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bot_toolsearch._demo.catalog import demo_schemas
from bot_toolsearch._services.semantic import _identity
from bot_toolsearch.config import load_settings
from tests._cli_runner import clean_env, run_cli
from tests._helpers import spare_port
from tests.test_readme import python_blocks

OFFLINE = "docs/core.md: ### Try it offline"
REAL = "docs/core.md: ### A real endpoint"


def free_port() -> int:
    return spare_port()


def blocks(language: str, heading: str) -> list[str]:
    return [code for h, code in python_blocks(language) if h == heading]


def wait_healthy(port: int, proc: subprocess.Popen[str]) -> None:
    for _ in range(600):
        assert proc.poll() is None, "serve exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("serve did not start")


def test_the_offline_semantic_config_runs_as_documented(tmp_path: Path) -> None:
    start, asks = blocks("sh", OFFLINE)
    (config,) = blocks("toml", OFFLINE)
    serve = shlex.split(start, comments=True)
    assert serve[:4] == ["bot-toolsearch", "serve", "--upstream", "offline"]
    assert "http://127.0.0.1:8787/v1" in config
    port = free_port()
    serve = [str(port) if arg == "8787" else arg for arg in serve]
    (tmp_path / "config.toml").write_text(
        config.replace("127.0.0.1:8787", f"127.0.0.1:{port}"), encoding="utf-8"
    )
    ask, listing = [shlex.split(line, comments=True) for line in asks.splitlines()]
    assert ask[:2] == ["bot-toolsearch", "ask"]
    assert listing == ["ls", ".embeddings"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot_toolsearch", *serve[1:]],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_healthy(port, proc)
        first = run_cli(*ask[1:], cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        files = list((tmp_path / ".embeddings").iterdir())
        assert [f.suffix for f in files] == [".vectors"]
        written = files[0].stat().st_mtime_ns
        second = run_cli(*ask[1:], cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert files[0].stat().st_mtime_ns == written  # nothing new to embed: not rewritten
    finally:
        proc.terminate()
        log, _ = proc.communicate(timeout=60)
    assert first.stdout.strip() == "10 km is 6.21371 mi."
    searches = [len(re.findall(r"call tool_search\(", done.stderr)) for done in (first, second)]
    assert searches == [1, 1]
    assert '"POST /v1/embeddings HTTP/1.1" 200' in log  # the proxy forwarded them
    # Every demo tool's vector (+ send_message and end), in one file for this endpoint+model.
    assert header(files[0])["count"] == len(demo_schemas()) + 2
    # The header names the endpoint and model by a hash, never the URL (issue 27).
    identity = header(files[0])["identity"]
    assert identity == _identity(f"http://127.0.0.1:{port}/v1", "offline-hash")
    assert "127.0.0.1" not in identity


def header(path: Path) -> dict[str, Any]:
    """The JSON header of a ``.vectors`` cache file (after its magic line and a length)."""
    data = path.read_bytes()
    magic = b"bot_toolsearch-embeddings 1\n"
    assert data.startswith(magic)
    (size,) = struct.unpack_from("<I", data, len(magic))
    start = len(magic) + 4
    return dict(json.loads(data[start : start + size]))


def test_the_real_endpoint_config_is_valid(tmp_path: Path) -> None:
    (config,) = blocks("toml", REAL)
    path = tmp_path / "config.toml"
    path.write_text(config, encoding="utf-8")
    embeddings = load_settings(path, env={}).skills.tool_search_embeddings
    assert embeddings is not None
    assert embeddings.model == "text-embedding-3-small"
    assert embeddings.api_key_env == "OPENAI_API_KEY"
    assert embeddings.base_url is None
