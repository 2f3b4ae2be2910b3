"""Command-line entry point ``bot-toolsearch`` (``python -m bot_toolsearch``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["demo"]:
        print("bot-toolsearch demo: not yet available (see the CLI/demo issue).")
        return 0
    print("usage: bot-toolsearch demo", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
