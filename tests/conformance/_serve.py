"""``bot-toolsearch serve`` as a user runs it: a subprocess on a free port of 127.0.0.1, its
stderr (banner, round records, access log) in a file the test can read."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests._cli_runner import clean_env
from tests._helpers import spare_port

SERVE_START = 120
"""Seconds ``serve`` may take to start or stop (a loaded 2-core machine)."""


@dataclass(frozen=True)
class Served:
    """A running ``serve``: its root URL (``http://127.0.0.1:PORT``) and its stderr file."""

    root: str
    log: Path


@contextlib.contextmanager
def serving(upstream: str, folder: Path, *options: str) -> Iterator[Served]:
    """``bot-toolsearch serve --upstream=<upstream> <options>`` started in ``folder`` (no config
    file unless ``options`` names one), yielded once it answers ``/healthz``; stopped with
    SIGINT on exit."""
    port = spare_port()
    command = [sys.executable, "-m", "bot_toolsearch", "serve", f"--upstream={upstream}"]
    log = folder / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*command, f"--port={port}", *options],
            cwd=folder,
            env=clean_env(),
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    try:
        deadline = time.monotonic() + SERVE_START
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "serve did not answer /healthz in time"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield Served(f"http://127.0.0.1:{port}", log)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=SERVE_START)
