"""The folders are the layers: imports point down the ranks, the core stays pure, and no cycles.

Every intra-package import counts, including lazy imports inside functions and imports under
``TYPE_CHECKING``. Each violation is named as ``a.b -> c.d``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "bot_toolsearch"

# The ranks of docs/architecture.md: a module may import its own folder or a lower rank.
# Equal ranks are siblings that import neither the other: ``_tools`` and ``_transports``, and
# the shells ``_runtime`` (the `Bot`) and ``_wrap`` (the drop-in client), over ``_services``.
RANKS: dict[str, int] = {
    "_errors": 0,
    "_core": 1,
    "_config": 2,
    "_tools": 3,
    "_transports": 3,
    "_protocol": 4,
    "_services": 5,
    "_runtime": 6,
    "_wrap": 6,
    "testing": 6,
    "_scripted": 6,
    "_proxy": 7,
    "_mcp": 7,
    "_demo": 7,
    "_cli": 8,
}
# Public doors: may import any layer.
DOORS = {"__init__", "__main__", "config", "conversations", "core", "middleware", "offline"}
DOORS |= {"testing", "tools"}
CORE_FORBIDDEN = {"openai", "pydantic_settings", "tomlkit", "watchdog", "mcp", "uvicorn"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def imports_of(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every module ``module`` imports: third-party tops and resolved in-package modules."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield target
            for alias in node.names:  # ``from pkg import submodule``
                if f"{target}.{alias.name}" in known:
                    yield f"{target}.{alias.name}"


def graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    return {
        name: {dep for dep in imports_of(name, path, known) if dep in known and dep != name}
        for name, path in modules.items()
    }


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rank_violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for module, deps in edges.items():
        layer = layer_of(module)
        if layer in DOORS:
            continue
        for dep in deps:
            target = layer_of(dep)
            if target == layer:
                continue
            if target in DOORS:
                found.append(f"{module} -> {dep} (a layer imports a public door)")
            elif layer == "testing":
                found.append(f"{module} -> {dep} (testing imports nothing from the package)")
            elif RANKS[target] >= RANKS[layer]:
                found.append(f"{module} -> {dep} ({layer} must not import {target})")
    return sorted(found)


def cycles(edges: dict[str, set[str]]) -> list[str]:
    """One path per cycle found by a depth-first search, as ``a -> b -> a``."""
    found: list[str] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                loop = [*stack[stack.index(dep) :], dep]
                found.append(" -> ".join(loop))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def test_every_layer_folder_is_ranked_and_documented() -> None:
    folders = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").exists()}
    assert folders <= set(RANKS), folders - set(RANKS)
    for folder in folders:
        doc = ast.get_docstring(ast.parse((PACKAGE_DIR / folder / "__init__.py").read_text()))
        assert doc, f"{folder}/__init__.py needs a docstring saying what belongs there"


def test_imports_only_point_down_the_ranks() -> None:
    assert rank_violations(graph()) == []


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize(
    "module", sorted(m for m in all_modules() if layer_of(m) in {"_core", "_errors"})
)
def test_the_core_imports_no_host_library(module: str) -> None:
    path = all_modules()[module]
    bad = sorted(
        f"{module} -> {name}"
        for name in imports_of(module, path, set(all_modules()))
        if name.split(".")[0] in CORE_FORBIDDEN
    )
    assert bad == []


def test_the_shells_are_siblings() -> None:
    edges = graph()
    crossing = sorted(
        f"{module} -> {dep}"
        for module, deps in edges.items()
        for dep in deps
        if {layer_of(module), layer_of(dep)} == {"_runtime", "_wrap"}
        # The MCP door is a shell over the protocol too: it uses the shared services only.
        or (layer_of(module) == "_mcp" and layer_of(dep) in ("_runtime", "_wrap", "_proxy"))
    )
    assert crossing == []


def test_the_checks_see_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bot_toolsearch._runtime.bot import Bot\n"
        "def f():\n    from . import other\n    import openai\n"
    )
    found = set(imports_of("pkg.sample", sample, {"pkg.other"}))
    assert {"bot_toolsearch._runtime.bot", "pkg.other", "openai"} <= found


def test_the_checks_name_violations_and_cycles() -> None:
    edges = {
        "bot_toolsearch._core.a": {"bot_toolsearch._runtime.b"},
        "bot_toolsearch._runtime.b": {"bot_toolsearch._core.a"},
        "bot_toolsearch._tools.c": {"bot_toolsearch._transports.d"},
        "bot_toolsearch._transports.d": set(),
    }
    assert rank_violations(edges) == [
        "bot_toolsearch._core.a -> bot_toolsearch._runtime.b (_core must not import _runtime)",
        "bot_toolsearch._tools.c -> bot_toolsearch._transports.d "
        "(_tools must not import _transports)",
    ]
    assert cycles(edges) == [
        "bot_toolsearch._core.a -> bot_toolsearch._runtime.b -> bot_toolsearch._core.a"
    ]
