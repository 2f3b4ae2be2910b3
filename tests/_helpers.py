"""Helpers shared by test modules (fixtures live in ``conftest.py``)."""

from __future__ import annotations

import os
from pathlib import Path


def write_config(path: Path, base_url: str, api: str, extra: str = "") -> Path:
    """Write ``config.toml`` atomically (temp file + rename, as editors do)."""
    text = f'[model]\nbase_url = "{base_url}"\napi_key = "test"\napi = "{api}"\n{extra}'
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return path
