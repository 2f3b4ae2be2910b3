"""Print a pip constraints file pinning each `[project].dependencies` entry to its declared floor.

`requirement>=X` becomes `requirement==X`, so installing with `-c` proves the floor is true.
An entry with no `>=` floor is an error: every runtime dependency must state the oldest
version that works, or this check could pass without testing it. `--extra NAME` (repeatable)
pins that optional extra's entries too. Usage: floor_constraints.py [pyproject] [--extra NAME]
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

_FLOOR = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("pyproject", nargs="?", default="pyproject.toml", type=Path)
    parser.add_argument("--extra", action="append", default=[], help="an optional extra to pin")
    args = parser.parse_args()
    project = tomllib.loads(args.pyproject.read_text())["project"]
    deps = list(project["dependencies"])
    if not deps:
        print("no [project].dependencies to pin", file=sys.stderr)
        return 1
    for extra in args.extra:
        if extra not in project.get("optional-dependencies", {}):
            print(f"no optional extra {extra!r}", file=sys.stderr)
            return 1
        deps += project["optional-dependencies"][extra]
    for dep in deps:
        match = _FLOOR.match(dep)
        if match is None:
            print(f"dependency without a '>=' floor: {dep!r}", file=sys.stderr)
            return 1
        print(f"{match[1]}=={match[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
