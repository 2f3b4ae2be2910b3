"""The Messages door's edge, as the OpenAI routes have it: ``[tools] deny`` wherever a tool is
named, ``--max-tools`` and ``--max-body``, client keys (the operator's key goes upstream),
the ``x-toolsearch-*`` headers and ``GET /metrics``, and ``native_tool_search = "pass"``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import (
    ModelSettings,
    ProxySettings,
    SkillsSettings,
    ToolsSettings,
)
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer, call, text
from tests._helpers import served

from .test_sdk import ASK, BM25, MODEL, catalog

SKILLS = SkillsSettings(tool_search_enabled=True, tool_search_max_results=3)


def _serve(server: ScriptedOpenAIServer, **options: Any) -> Iterator[str]:
    app = ProxyApp(server.base_url, upstream_api="messages", timeout=30, **options)
    with served(app) as root:
        yield root


@pytest.fixture
def denying(strict: ScriptedOpenAIServer) -> Iterator[str]:
    settings = BotSettings(skills=SKILLS, tools=ToolsSettings(deny=("play_*",)))
    yield from _serve(strict, settings=settings)


async def test_deny_tool_choice_is_403_and_nothing_is_sent(
    strict: ScriptedOpenAIServer, denying: str
) -> None:
    async with anthropic.AsyncAnthropic(base_url=denying, api_key="k", max_retries=0) as client:
        with pytest.raises(anthropic.PermissionDeniedError, match="play_music"):
            await client.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=ASK,
                tools=[*catalog(), BM25],
                tool_choice={"type": "tool", "name": "play_music"},
            )
    assert strict.requests == []


async def test_denied_tool_never_reaches_the_upstream(
    strict: ScriptedOpenAIServer, denying: str
) -> None:
    strict.script(call("tool_search", query="select:play_music"), text("none"))
    async with anthropic.AsyncAnthropic(base_url=denying, api_key="k", max_retries=0) as client:
        reply = await client.messages.create(
            model=MODEL, max_tokens=10, messages=ASK, tools=[*catalog(), BM25]
        )
    assert reply.content[-1].type == "text"
    for request in strict.requests:  # the model's own query is echoed, never the tool
        assert "play_music" not in request.tool_names
        assert "Play a song" not in json.dumps(request.body)
        assert "play_music" not in "".join(request.system_texts)


async def test_denied_tool_left_out_when_passed_through(
    strict: ScriptedOpenAIServer, denying: str
) -> None:
    strict.script(text("hi"))
    async with anthropic.AsyncAnthropic(base_url=denying, api_key="k", max_retries=0) as client:
        await client.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=ASK,
            tools=catalog()[4:],  # play_music only
        )
    assert strict.requests[0].tool_names == []


@pytest.fixture
def bounded(strict: ScriptedOpenAIServer) -> Iterator[str]:
    yield from _serve(strict, settings=BotSettings(skills=SKILLS), max_tools=3, max_body=64 * 1024)


async def test_limits_refuse_with_anthropic_errors(
    strict: ScriptedOpenAIServer, bounded: str
) -> None:
    async with httpx.AsyncClient() as http:
        many = await http.post(
            f"{bounded}/v1/messages",
            json={"model": MODEL, "max_tokens": 5, "messages": ASK, "tools": catalog()},
        )
        large = await http.post(
            f"{bounded}/v1/messages",
            json={"model": MODEL, "max_tokens": 5, "messages": ASK, "pad": "x" * 70_000},
        )
        form = await http.post(f"{bounded}/v1/messages", content=b"{}")
    assert many.status_code == 400
    assert many.json()["type"] == "error"
    assert "--max-tools" in many.json()["error"]["message"]
    assert large.status_code == 413
    assert large.json()["error"]["type"] == "request_too_large"
    assert form.status_code == 415
    assert strict.requests == []


@pytest.fixture
def keyed(strict: ScriptedOpenAIServer) -> Iterator[str]:
    settings = BotSettings(skills=SKILLS, model=ModelSettings(api_key="operator-key"))
    yield from _serve(strict, settings=settings, api_keys=["client-key"])


async def test_client_keys_the_operator_key_goes_upstream(
    strict: ScriptedOpenAIServer, keyed: str
) -> None:
    strict.script(text("hi"))
    async with anthropic.AsyncAnthropic(
        base_url=keyed, api_key="client-key", max_retries=0
    ) as client:
        await client.messages.create(
            model=MODEL, max_tokens=10, messages=ASK, tools=[*catalog(), BM25]
        )
    async with anthropic.AsyncAnthropic(base_url=keyed, api_key="wrong", max_retries=0) as other:
        with pytest.raises(anthropic.AuthenticationError):
            await other.messages.create(model=MODEL, max_tokens=10, messages=ASK)
    headers = strict.requests[0].headers
    assert headers["x-api-key"] == "operator-key"
    assert "client-key" not in json.dumps(headers)
    assert len(strict.requests) == 1


async def test_headers_and_metrics(strict: ScriptedOpenAIServer, proxy_root: str) -> None:
    strict.script(call("tool_search", query="weather forecast"), text("ok"))
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{proxy_root}/v1/messages",
            json={"model": MODEL, "max_tokens": 5, "messages": ASK, "tools": [*catalog(), BM25]},
        )
        metrics = (await http.get(f"{proxy_root}/metrics")).text
    assert response.status_code == 200
    assert response.headers["x-toolsearch-rounds"] == "2"
    assert response.headers["x-toolsearch-searches"] == "1"
    assert "get_weather" in response.headers["x-toolsearch-loaded"]
    assert 'bot_toolsearch_requests_total{code="2xx",route="messages"} 1' in metrics
    assert 'bot_toolsearch_hidden_rounds_total{api="messages"} 1' in metrics


@pytest.fixture
def passing(strict: ScriptedOpenAIServer) -> Iterator[str]:
    settings = BotSettings(skills=SKILLS, proxy=ProxySettings(native_tool_search="pass"))
    yield from _serve(strict, settings=settings)


async def test_pass_forwards_the_dialect_untouched(
    strict: ScriptedOpenAIServer, passing: str
) -> None:
    async with anthropic.AsyncAnthropic(base_url=passing, api_key="k", max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError, match="Deferred custom tools"):
            await client.messages.create(
                model=MODEL, max_tokens=10, messages=ASK, tools=[*catalog(), BM25]
            )
    assert "defer_loading" in json.dumps(strict.requests[0].body)
