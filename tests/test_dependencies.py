"""Every third-party module the package imports is declared in ``[project].dependencies``.

A dev extra installs much more than a user's ``pip install bot-toolsearch`` does, so an
undeclared import passes the suite and fails for every user (issue 20: ``httpx``, which openai 3
no longer brings). Read statically from the source, so a lazy or guarded import counts too.
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


def _third_party_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "bot_toolsearch"}


def test_every_imported_distribution_is_declared() -> None:
    declared = _declared()
    dists = packages_distributions()
    undeclared: dict[str, str] = {}
    files = sorted((ROOT / "bot_toolsearch").rglob("*.py"))
    assert len(files) > 20  # the package's own tree, not an empty glob
    for path in files:
        for module in _third_party_imports(path) - OPTIONAL:
            owners = {_norm(d) for d in dists.get(module, [module])}
            if not owners & declared:
                undeclared.setdefault(module, str(path.relative_to(ROOT)))
    assert undeclared == {}


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import httpx\nfrom pydantic import BaseModel\nimport json\n")
    assert _third_party_imports(source) == {"httpx", "pydantic"}
    assert "httpx" not in _declared()
