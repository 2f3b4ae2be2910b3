"""The examples run as a newcomer runs them: as subprocesses, against the embedded model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_own_loop_searches_loads_and_answers() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "own_loop.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The first request carries only tool_search; the loaded schemas arrive in the next one.
    assert lines[1] == "  sending 1 tools"
    assert lines[2].startswith('  tool_search -> {"loaded":[')
    assert "  sending 6 tools" in lines
    assert "reply: 10 km is 6.21371 mi." in done.stdout
    assert "reply: 查到了（示例数据）：nickname：小明" in done.stdout  # noqa: RUF001
    assert "小明" in done.stdout
    assert "Traceback" not in done.stderr
