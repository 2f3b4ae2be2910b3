"""The OpenAI-compatible HTTP proxy over the wrapped client (``bot-toolsearch serve``)."""
