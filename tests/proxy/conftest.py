"""The proxy served on 127.0.0.1 by uvicorn in a thread, in front of the scripted server."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import uvicorn

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch._scripted.server import _bind, _serve, _ThreadServer
from bot_toolsearch.testing import ScriptedOpenAIServer


@pytest.fixture
def proxy_url(server: ScriptedOpenAIServer) -> Iterator[str]:
    """The proxy's base URL (``.../v1``), its upstream being ``server``."""
    sock = _bind(None)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        ProxyApp(server.base_url),
        host="127.0.0.1",
        port=port,
        loop="asyncio",
        http="h11",
        ws="none",
        lifespan="on",
        log_config=None,
        access_log=False,
    )
    running = _ThreadServer(config)
    thread = threading.Thread(target=_serve, args=(running, sock), daemon=True)
    thread.start()
    assert running.ready.wait(30)
    assert running.started
    yield f"http://127.0.0.1:{port}/v1"
    running.request_exit()
    thread.join(30)
