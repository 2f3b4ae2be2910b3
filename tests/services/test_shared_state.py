"""``[proxy] state = "redis://..."`` on a real Redis server: two ``serve`` processes share one
conversation's Responses follow-ups; a Redis that is down or never answers costs a warning and
the per-process behaviour, never a failed request."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from bot_toolsearch._services.shared_state import (
    ALIAS_TTL,
    RedisState,
    SharedStateDown,
    open_state,
)
from bot_toolsearch.testing import ScriptedOpenAIServer, ToolCallsTurn, call, text
from tests._cli_runner import clean_env
from tests._helpers import spare_port
from tests.wrap._tools import responses_tools

ENV = "BOT_TOOLSEARCH_TEST_REDIS"


def redis_url() -> str:
    url = os.environ.get(ENV, "")
    if not url:
        pytest.skip(f"no Redis server: {ENV} is unset (.ci/services.sh starts one; .ci/run does)")
    pytest.importorskip("redis", reason="the redis extra is not installed")
    return url


def free_port() -> int:
    return spare_port()


@pytest.fixture
def two_serves(tmp_path: Path) -> Iterator[tuple[ScriptedOpenAIServer, str, str]]:
    url = redis_url()
    config = tmp_path / "config.toml"
    config.write_text(
        f"[skills]\ntool_search_enabled = true\n[proxy]\nstate = '{url}'\n", encoding="utf-8"
    )
    with ScriptedOpenAIServer() as upstream:
        procs: list[subprocess.Popen[str]] = []
        roots = []
        try:
            for _ in range(2):
                port = free_port()
                procs.append(
                    subprocess.Popen(
                        [
                            *(sys.executable, "-m", "bot_toolsearch", "serve"),
                            *(f"--upstream={upstream.base_url}", f"--config={config}"),
                            f"--port={port}",
                        ],
                        env=clean_env(),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
                roots.append(f"http://127.0.0.1:{port}")
            for proc, root in zip(procs, roots, strict=True):
                for _ in range(1200):  # until it listens (or has died)
                    assert proc.poll() is None, proc.communicate(timeout=30)[1]
                    try:
                        if httpx.get(f"{root}/healthz").status_code == 200:
                            break
                    except httpx.TransportError:
                        time.sleep(0.1)
            yield upstream, roots[0], roots[1]
        finally:
            for proc in procs:
                proc.terminate()
                proc.communicate(timeout=30)


def test_two_serve_processes_share_one_conversations_follow_ups(
    two_serves: tuple[ScriptedOpenAIServer, str, str],
) -> None:
    upstream, first, second = two_serves
    tools = responses_tools()
    client_a = openai.OpenAI(base_url=f"{first}/v1", api_key="sk-test", max_retries=0)
    client_b = openai.OpenAI(base_url=f"{second}/v1", api_key="sk-test", max_retries=0)
    # A round that streams text, then searches: the stream keeps the first round's id.
    upstream.script(
        ToolCallsTurn((call("tool_search", query="select:get_weather"),), text="Looking it up."),
        call("get_weather", city="Oslo"),
    )
    with client_a.responses.stream(model="m", input="Weather?", tools=tools) as stream:
        list(stream)
        final = stream.get_final_response()
    shown = final.id
    (weather,) = [item for item in final.output if item.type == "function_call"]
    assert upstream.requests[1].previous_response_id == shown  # the stream's id: round 1's

    upstream.script(text("Sunny in Oslo."), text("Anything else?"))
    answer = client_b.responses.create(  # the other process serves the follow-up
        model="m",
        previous_response_id=shown,
        input=[{"type": "function_call_output", "call_id": weather.call_id, "output": "sunny"}],
        tools=tools,
    )
    assert answer.output_text == "Sunny in Oslo."
    assert answer.previous_response_id == shown  # as the caller sent it
    sent = upstream.requests[-1].previous_response_id
    assert sent not in (None, shown)  # the final round's id, which only the first process saw
    again = client_a.responses.create(
        model="m", previous_response_id=answer.id, input="Thanks", tools=tools
    )
    assert again.output_text == "Anything else?"
    assert upstream.requests[-1].previous_response_id == answer.id
    client_a.close()
    client_b.close()


async def test_a_redis_that_is_down_or_silent_costs_a_warning_not_a_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    done = asyncio.Event()

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await done.wait()
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    silent_state = RedisState(f"redis://:s3cret@127.0.0.1:{port}/0", timeout=0.5)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = RedisState(f"redis://127.0.0.1:{closed.getsockname()[1]}/0", timeout=0.5)
        try:
            for state in (silent_state, down):
                assert await asyncio.wait_for(state.resolve("resp_1"), 30) is None
                await asyncio.wait_for(state.store([("resp_1", "resp_2")]), 30)
                with pytest.raises(SharedStateDown) as raised:  # `run`: an error, never a hang
                    await asyncio.wait_for(state.run(lambda redis: redis.get("k")), 30)
                assert "s3cret" not in str(raised.value)
        finally:
            await silent_state.aclose()
            await down.aclose()
            done.set()
            listener.close()
            await listener.wait_closed()
    warnings = [r.getMessage() for r in caplog.records if "shared state" in r.getMessage()]
    assert len(warnings) == 4
    assert "s3cret" not in caplog.text


async def test_aliases_expire_and_odd_ids_are_one_bounded_key() -> None:
    state = RedisState(redis_url())
    try:
        odd = "resp_" + "\x00é" * 100
        await state.store([(odd, "resp_final")])
        assert await state.resolve(odd) == "resp_final"
        assert await state.resolve("x" * 10_000) is None  # never looked up
        keys = [k async for k in state._redis.scan_iter("bot_toolsearch:alias:*")]
        assert keys
        assert all(len(k) == len("bot_toolsearch:alias:") + 64 for k in keys)
        ttl = await state._redis.ttl(keys[0])
        assert 0 < ttl <= ALIAS_TTL
    finally:
        await state.aclose()


def test_the_state_setting_is_a_redis_url() -> None:
    assert open_state(None) is None
    with pytest.raises(ValueError, match="expected a redis:// URL"):
        open_state("http://127.0.0.1:6379")
