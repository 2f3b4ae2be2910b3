"""``python -m bot_toolsearch`` runs the CLI."""

from ._cli import main

raise SystemExit(main())
