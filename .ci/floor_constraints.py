"""Print a pip constraints file pinning each `[project].dependencies` entry to its declared floor.

`requirement>=X` becomes `requirement==X`, so installing with `-c` proves the floor is true.
An entry with no `>=` floor is an error: every runtime dependency must state the oldest
version that works, or this check could pass without testing it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_FLOOR = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)")


def main() -> int:
    pyproject = Path(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml")
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    if not deps:
        print("no [project].dependencies to pin", file=sys.stderr)
        return 1
    for dep in deps:
        match = _FLOOR.match(dep)
        if match is None:
            print(f"dependency without a '>=' floor: {dep!r}", file=sys.stderr)
            return 1
        print(f"{match[1]}=={match[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
