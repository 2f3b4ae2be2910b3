"""The demo's data files under ``_demo/data/``: sample tool specs, units, places, glossary."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["SAMPLE_GROUPS", "load_json"]

SAMPLE_GROUPS = ("en", "office", "zh", "more")
"""The sample-spec files, ``data/samples_<group>.json``, in catalog order."""


def load_json(name: str) -> Any:
    """The parsed JSON file ``data/<name>`` shipped inside the package."""
    path = resources.files(__package__ or "bot_toolsearch._demo") / "data" / name
    return json.loads(path.read_text(encoding="utf-8"))
