"""The core modules import nothing from HTTP, config, host or runtime layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bot_toolsearch"
CORE = [
    "_errors", "_tokens", "_index", "_catalog", "_query", "_result", "_session", "_prompt",
    "_unicode",
]  # fmt: skip
FORBIDDEN_PACKAGES = {"openai", "tomlkit", "watchdog", "pydantic_settings", "uvicorn", "mcp"}
FORBIDDEN_PREFIXES = (
    "_bot", "_middleware", "_transport", "_settings", "_config", "_reload", "_edit", "_cli",
)  # fmt: skip


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.add(base)
            if node.level and not node.module:
                found.update("." + alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_only_the_core(module: str) -> None:
    for name in imported_modules(PACKAGE / f"{module}.py"):
        top = name.lstrip(".").split(".")[0]
        if name.startswith("."):
            assert not top.startswith(FORBIDDEN_PREFIXES), (module, name)
            assert top in CORE, (module, name)
        else:
            assert top not in FORBIDDEN_PACKAGES, (module, name)
            assert top != "bot_toolsearch", (module, name)


def test_the_scanner_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import openai\nfrom ._bot import Bot\nfrom . import _edit\n")
    assert imported_modules(sample) >= {"openai", "._bot", "._edit"}
