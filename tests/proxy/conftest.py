"""The proxy served on 127.0.0.1 by uvicorn in a thread, in front of the scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot_toolsearch._proxy.app import ProxyApp
from bot_toolsearch.testing import ScriptedOpenAIServer
from tests._helpers import served


@pytest.fixture
def proxy_url(server: ScriptedOpenAIServer) -> Iterator[str]:
    """The proxy's base URL (``.../v1``), its upstream being ``server``."""
    with served(ProxyApp(server.base_url)) as root:
        yield f"{root}/v1"
