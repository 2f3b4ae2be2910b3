"""Helpers shared by test modules (fixtures live in ``conftest.py``)."""

from __future__ import annotations

import contextlib
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def write_config(path: Path, base_url: str, api: str, extra: str = "") -> Path:
    """Write ``config.toml`` atomically (temp file + rename, as editors do)."""
    text = f'[model]\nbase_url = "{base_url}"\napi_key = "test"\napi = "{api}"\n{extra}'
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return path


@contextlib.contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` (an ASGI app) served on 127.0.0.1 by uvicorn in a thread; its root URL."""
    import threading

    import uvicorn

    from bot_toolsearch._scripted.server import _bind, _serve, _ThreadServer

    sock = _bind(None)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
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
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        running.request_exit()
        thread.join(30)


_SPARE_PORTS = (20_000, 32_000)
"""Where `spare_port` looks: below Linux's ephemeral range (32768-60999), which every server
bound to port 0 (the scripted upstreams, uvicorn in a thread) draws from."""


def spare_port() -> int:
    """A free port of 127.0.0.1 for a server started as a subprocess. A port found by binding
    port 0 is free only until another test (in another xdist worker) binds port 0 and gets
    it: the subprocess then fails to start, and its readiness probe hits that test's server.
    A port outside the ephemeral range is never handed out by port 0."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(*_SPARE_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    low, high = _SPARE_PORTS
    raise RuntimeError(f"no spare port between {low} and {high}")
