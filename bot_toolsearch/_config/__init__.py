"""``config.toml`` and its snapshots: the settings models, loading and validating the file and the
environment, precise diagnostics (file:line, did-you-mean), style-preserving edits, and the
watchdog-based hot reload that swaps one frozen ``BotSettings`` snapshot at a time."""
