"""The conformance suite's Node clients: installed once, run by the tests as subprocesses.

``tests/conformance/node/package.json`` pins every npm package (and its ``package-lock.json``
every transitive one); `ensure` installs them with ``npm ci`` into ``node/node_modules``
(ignored by git) once per lock: a stamp holding the lock's hash says it is done, and a file
lock makes the pytest-xdist workers wait for the one that installs. A test skips only where
``node`` or ``npm`` is missing, and says so; a failed install fails it. ``python -m
tests.conformance._node`` installs them before the suite (``make node-clients``, `.ci/run`),
and there a missing ``node`` is an error, so CI never skips.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).parent / "node"
"""The JS scripts, ``package.json`` and ``package-lock.json``."""
MODULES = NODE_DIR / "node_modules"
STAMP = MODULES / ".bot-toolsearch-lock.sha256"
LOCK = NODE_DIR / ".install.lock"
INSTALL_TIMEOUT = 900
"""``npm ci`` of the pinned set (the Codex and Claude Code binaries are most of its 770 MB) from a
cold cache."""
RUN_TIMEOUT = 120


class NodeMissing(RuntimeError):
    """``node`` or ``npm`` is not on ``PATH``."""


def _lock_hash() -> str:
    return hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes()).hexdigest()


def install() -> Path:
    """Install the pinned clients unless this lock's are there; ``node_modules``.

    Raises:
        NodeMissing: no ``node`` or no ``npm``.
        subprocess.CalledProcessError: ``npm ci`` failed (its output in the message).
    """
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise NodeMissing(f"{' and '.join(missing)} not found on PATH")
    want = _lock_hash()
    with LOCK.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker may be installing: wait for it
        if STAMP.is_file() and STAMP.read_text().strip() == want:
            return MODULES
        # --ignore-scripts: none runs on install. Claude Code's postinstall only copies its
        # platform package's binary over the stub in its bin/; the test runs that binary.
        done = subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, f"npm ci failed:\n{done.stderr}"
            )
        STAMP.write_text(want + "\n")
    return MODULES


def ensure() -> Path:
    """`install` for a test: skips it (saying why) only where ``node``/``npm`` is missing."""
    try:
        return install()
    except NodeMissing as missing:
        pytest.skip(f"the Node clients need Node.js and npm: {missing}")


def node_env(**extra: str) -> dict[str, str]:
    """The environment of a client script: no proxy, no key of the caller's, no telemetry."""
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(
        OPENAI_API_KEY="test",
        OPENAI_AGENTS_DISABLE_TRACING="1",
        NO_COLOR="1",
        NODE_NO_WARNINGS="1",
    )
    env.update(extra)
    return env


def run_node(
    script: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = RUN_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """Run ``node/<script>`` with ``args``; fails the test with its output when it exits
    non-zero."""
    ensure()
    done = subprocess.run(
        ["node", str(NODE_DIR / script), *args],
        cwd=NODE_DIR,
        env=dict(env) if env is not None else node_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


if __name__ == "__main__":
    try:
        sys.stdout.write(f"Node clients installed in {install()}\n")
    except (NodeMissing, subprocess.CalledProcessError) as failed:
        sys.exit(f"error: {failed}\n{getattr(failed, 'stderr', '') or ''}")
