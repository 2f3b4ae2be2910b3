"""Every third-party module the package imports is declared in ``[project].dependencies``.

A dev extra installs much more than a user's ``pip install bot-toolsearch`` does, so an
undeclared import passes the suite and fails for every user (issue 20: ``httpx``, which openai 3
no longer brings). Read statically from the source, so a lazy or guarded import counts too; the
one exception is an import inside ``try: ... except ImportError`` of a distribution that an
optional extra other than ``dev`` declares (numpy, the ``semantic`` extra): the code runs
without it, and a user can ask for it by name.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Imported only through importlib.import_module behind a fallback (the `tokens` extra).
OPTIONAL = {"bpe_openai"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """The distributions `[project].dependencies` declares (a transitive one does not count)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_norm(re.split(r"[\[<>=!~; ]", dep, maxsplit=1)[0]) for dep in deps}


def _declared_optional() -> set[str]:
    """The distributions the optional extras declare, except the ``dev`` extra."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get(
        "optional-dependencies", {}
    )
    return {
        _norm(re.split(r"[\[<>=!~; ]", dep, maxsplit=1)[0])
        for name, deps in extras.items()
        if name != "dev"
        for dep in deps
    }


def _imports(nodes: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for node in (n for statement in nodes for n in ast.walk(statement)):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "bot_toolsearch"}


def _third_party_imports(path: Path) -> set[str]:
    return _imports(ast.parse(path.read_text(encoding="utf-8")).body)


def _guarded_imports(path: Path) -> set[str]:
    """Imports in the body of a ``try`` that catches ImportError (or ModuleNotFoundError)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            found |= _imports(node.body)
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(
        isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError"} for n in names
    )


def test_every_imported_distribution_is_declared() -> None:
    declared, optional = _declared(), _declared_optional()
    dists = packages_distributions()
    undeclared: dict[str, str] = {}
    files = sorted((ROOT / "bot_toolsearch").rglob("*.py"))
    assert len(files) > 20  # the package's own tree, not an empty glob
    for path in files:
        guarded = _guarded_imports(path)
        for module in _third_party_imports(path) - OPTIONAL:
            owners = {_norm(d) for d in dists.get(module, [module])}
            if owners & declared or (module in guarded and owners & optional):
                continue
            undeclared.setdefault(module, str(path.relative_to(ROOT)))
    assert undeclared == {}


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import yaml\nfrom pydantic import BaseModel\nimport json\n")
    assert _third_party_imports(source) == {"yaml", "pydantic"}
    assert "yaml" not in _declared()


def test_a_guarded_import_counts_as_optional_only_when_an_extra_declares_it(
    tmp_path: Path,
) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n"
        "    try:\n        import numpy\n    except ImportError:\n        return None\n"
        "    try:\n        import httpx\n    except (ValueError, ModuleNotFoundError):\n"
        "        pass\n"
        "    try:\n        import yaml\n    except ValueError:\n        pass\n"
    )
    assert _third_party_imports(source) == {"numpy", "httpx", "yaml"}
    assert _guarded_imports(source) == {"numpy", "httpx"}
    assert "numpy" in _declared_optional()  # the `semantic` extra
    assert "httpx" not in _declared_optional()
    assert "pytest" not in _declared_optional()  # the dev extra does not count
