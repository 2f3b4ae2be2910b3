"""The host runtime: the ``Bot`` and its ``ask()`` loop, the middleware pipeline (tool search is one
middleware), the per-ask context and results, tool execution, prefetch, sub-agents and
announcements."""
