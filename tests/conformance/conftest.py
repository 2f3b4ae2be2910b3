"""The conformance suite's fixtures: the strict upstream and the doors a real client talks to.

The strict upstream is `ScriptedOpenAIServer(refuse_native=True)`: it answers HTTP 400, as a
backend without native tool search does, to a ``tool_search``/``namespace`` tool type, a
``defer_loading`` key, a ``tool_search_call``/``tool_search_output`` item, a
``function_call.namespace`` and an ``item_reference`` to an id it never issued. Whatever a
client sends through a door, nothing of the dialect may reach it.

A door is the wrapper (`wrap_openai` over ``openai.AsyncOpenAI``), the proxy (``serve``'s
`ProxyApp`, served by uvicorn on 127.0.0.1 in a thread) or ``bot-toolsearch serve`` itself in
a subprocess; `door_client` is the real ``openai.AsyncOpenAI`` a client framework is handed,
parametrized over the first two (a test adds ``serve`` by parametrizing ``door``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest

from bot_toolsearch import BotSettings, wrap_openai
from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import Responder, ScriptedOpenAIServer
from tests.conformance._serve import serving
from tests.proxy._raw import served

TOOL_SEARCH_ON = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
"""The settings of every door: tool search on, everything else at its default."""

DIALECT = ('"defer_loading"', '"tool_search_call"', '"tool_search_output"', '"namespace"')
"""JSON fragments of the dialect that must never reach the strict upstream."""


@contextlib.contextmanager
def strict_upstream(responder: Responder | None = None) -> Iterator[ScriptedOpenAIServer]:
    """The strict upstream (answering from its script, then ``responder``); unexpected or
    unused turns fail at exit, and so does any request that carried the dialect (it was
    answered 400 anyway)."""
    with ScriptedOpenAIServer(responder, refuse_native=True) as srv:
        yield srv
        srv.assert_consumed()
        for request in srv.requests:
            raw = json.dumps(request.body)
            leaked = [fragment for fragment in DIALECT if fragment in raw]
            assert not leaked, f"{leaked} reached the strict upstream: {raw[:400]}"


@pytest.fixture
def strict() -> Iterator[ScriptedOpenAIServer]:
    """The scripted strict upstream (`strict_upstream`); a module overrides it to answer
    with a responder."""
    with strict_upstream() as srv:
        yield srv


@pytest.fixture
def proxy_url(strict: ScriptedOpenAIServer) -> Iterator[str]:
    """``serve`` in-process on 127.0.0.1 in front of `strict`: its ``.../v1`` base URL."""
    with served(ProxyApp(strict.base_url, settings=TOOL_SEARCH_ON)) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def serve_url(strict: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[str]:
    """``bot-toolsearch serve --upstream=<strict>`` as a user runs it, in a subprocess (no
    config file): its ``.../v1`` base URL once it answers ``/healthz``."""
    with serving(strict.base_url, tmp_path) as served:
        yield f"{served.root}/v1"


@pytest.fixture(params=["wrapper", "proxy"])
def door(request: pytest.FixtureRequest) -> str:
    """Which door the client goes through (``serve``, the subprocess, where a test asks for
    it by parametrizing ``door`` itself)."""
    value: str = request.param
    return value


@pytest.fixture
async def door_client(
    door: str, strict: ScriptedOpenAIServer, request: pytest.FixtureRequest
) -> AsyncIterator[openai.AsyncOpenAI]:
    """The ``openai.AsyncOpenAI`` a client is handed: wrapped around one on `strict`, or one
    on the proxy in front of `strict` (no retries, so every error surfaces)."""
    if door == "wrapper":
        raw = openai.AsyncOpenAI(base_url=strict.base_url, api_key="test", max_retries=0)
        async with raw:
            yield wrap_openai(raw, settings=TOOL_SEARCH_ON)
        return
    fixture = "serve_url" if door == "serve" else "proxy_url"
    base_url: str = request.getfixturevalue(fixture)
    async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
        yield client
