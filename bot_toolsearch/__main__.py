"""``python -m bot_toolsearch`` runs the CLI."""

from bot_toolsearch._cli.main import main

raise SystemExit(main())
