"""The README's core example runs as written (with a small catalog for ``schemas``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"


def _block_after(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no python block after {heading!r}"
    return match.group(1)


def test_the_core_example_runs_and_loads_for_the_next_round() -> None:
    schemas = [
        {"type": "function", "function": {"name": name, "description": text}}
        for name, text in [
            ("send_message", "Send a message."),
            ("end", "End the turn."),
            ("weather.forecast", "Forecast the weather for a city."),
            ("music.play", "Play a song."),
        ]
    ]
    namespace: dict[str, Any] = {"schemas": schemas}
    exec(_block_after("## The core on its own"), namespace)  # our own README, not input
    names = [t["function"]["name"] for t in namespace["tools"]]
    assert '"loaded":["weather.forecast"]' in namespace["result"]
    assert names == ["send_message", "end", "tool_search", "weather.forecast"]
    assert "music.play" in namespace["system"]
