"""docs/architecture.md names every module of the package under its folder's heading."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bot_toolsearch"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def documented() -> dict[str, set[str]]:
    """``{folder heading: {module file names in its table}}``."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### `bot_toolsearch/(\w*)/?`", line)
        if heading:
            current = heading.group(1)
            sections[current] = set()
        elif current is not None and (row := re.match(r"\| `(\w+\.py)` \|", line)):
            sections[current].add(row.group(1))
    return sections


def test_every_module_is_named_under_its_folder() -> None:
    sections = documented()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        folder = path.parent.relative_to(PACKAGE).as_posix()
        folder = "" if folder == "." else folder
        if path.name == "__init__.py" and folder:
            continue  # a layer's docstring is the section's introduction
        if path.name not in sections.get(folder, set()):
            missing.append(path.relative_to(REPO).as_posix())
    assert missing == []


def test_no_module_is_named_that_does_not_exist() -> None:
    stale = [
        f"{folder}/{name}"
        for folder, names in documented().items()
        for name in names
        if not (PACKAGE / folder / name).exists()
    ]
    assert stale == []
