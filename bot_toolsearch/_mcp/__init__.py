"""The MCP door (``bot-toolsearch mcp``): tool search in front of every tool source."""
