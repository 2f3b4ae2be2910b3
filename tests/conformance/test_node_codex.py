"""``codex exec`` (the ``@openai/codex`` npm package and the binary it ships, pinned in
``node/package.json``) through ``bot-toolsearch serve`` (a subprocess, as a user runs it,
uvicorn's WebSocket support as it comes) in front of the strict upstream, issue 36 item 7.

Codex 0.171 picks its transport from the provider's ``supports_websockets``: false by default
for a custom provider (``model_providers.<id>``), so HTTP; true for the built-in ``openai``
provider (pointed at the proxy with ``openai_base_url``), so it first tries the Responses
WebSocket on ``/v1/responses``. The proxy serves HTTP only and refuses the upgrade with 426
Upgrade Required, the refusal on which Codex falls back to HTTP for the session (on a 400 it
gave up: ``ERROR: {"error": ... "websocket_not_supported"}`` and no request ever reached the
upstream). Each setting below runs one real ``codex exec`` turn to the end.

Codex runs with ``CODEX_HOME`` in a temporary folder, no user config, and every proxy variable
pointed at a closed port on 127.0.0.1 (``NO_PROXY`` for loopback), so its background fetches
(plugins, updates) cannot leave the machine.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bot_toolsearch.testing import ScriptedOpenAIServer, text
from tests.conformance._node import MODULES, ensure, node_env

DEAD = "http://127.0.0.1:9"
"""Where every non-loopback request of Codex goes: nowhere."""


@pytest.fixture(autouse=True)
def _node_clients() -> None:
    """Installed before any other fixture (a skip without Node leaves no script unused)."""
    ensure()


def provider(url: str, *extra: str) -> list[str]:
    """A custom Responses provider ``bts`` at ``url`` (key from ``BTS_KEY``)."""
    given = ('name="bot-toolsearch"', f'base_url="{url}"', 'wire_api="responses"')
    fields = ",".join((*given, 'env_key="BTS_KEY"', *extra))
    return ["-c", 'model_provider="bts"', "-c", f"model_providers.bts={{{fields}}}"]


SETTINGS = {
    "custom provider (defaults)": provider,
    "custom provider, supports_websockets": lambda url: provider(url, "supports_websockets=true"),
    "built-in openai provider": lambda url: ["-c", f'openai_base_url="{url}"'],
}


def run_codex(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    ensure()
    command = [
        str(MODULES / ".bin" / "codex"),
        *("exec", "--json", "--skip-git-repo-check", "--ephemeral", "--ignore-user-config"),
        *("-s", "read-only", "-m", "m", "-c", "check_for_update_on_startup=false"),
        *args,
    ]
    env = node_env(
        CODEX_HOME=str(home / "codex-home"),
        BTS_KEY="test",
        HTTP_PROXY=DEAD,
        HTTPS_PROXY=DEAD,
        ALL_PROXY=DEAD,
        NO_PROXY="127.0.0.1,localhost",
    )
    (home / "codex-home").mkdir()
    return subprocess.run(
        command, cwd=home, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def events(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("setting", SETTINGS.values(), ids=SETTINGS.keys())
def test_a_codex_turn_through_serve(
    serve_url: str, strict: ScriptedOpenAIServer, tmp_path: Path, setting: object
) -> None:
    strict.script(text("Done."))
    done = run_codex(tmp_path, *setting(serve_url), "Say done.")  # type: ignore[operator]
    assert done.returncode == 0, done.stderr[-3000:]
    said = [
        event["item"]
        for event in events(done.stdout)
        if event.get("type") == "item.completed"
        and isinstance(event.get("item"), dict)
        and event["item"].get("type") == "agent_message"  # type: ignore[union-attr]
    ]
    assert [item["text"] for item in said] == ["Done."]  # type: ignore[index]
    (request,) = strict.requests  # over HTTP: the WebSocket, when tried, was refused with 426
    assert request.body["stream"] is True
    assert "exec_command" in request.tool_names
