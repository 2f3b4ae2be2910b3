"""The host runtime: the ``Bot`` and its ``ask()`` loop, the middleware pipeline (tool search is one
middleware), the per-ask context and results, the call values, tool execution, prefetch, sub-agents,
announcements and every host text a model or the chat reads."""
