"""The tool-search protocol, sans-IO: one engine below both hosts, the ``Bot`` and the wrapper."""
