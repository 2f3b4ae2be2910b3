"""Where tools come from: the ``Tool``/``Agent`` values and the ``@tool`` decorator, JSON Schema
derived from signatures, and the ``ToolRegistry`` that merges code tools, tool folders and MCP
servers into immutable, generation-stamped snapshots."""
