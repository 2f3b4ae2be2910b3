"""The pure core of tool search: the catalog index, the query engine, the per-ask session and every
text the model reads about tool search. It knows nothing of HTTP, config files or the host: it
imports no openai, pydantic-settings, tomlkit, watchdog, mcp or uvicorn, only the standard library
and ``bot_toolsearch._errors``."""
