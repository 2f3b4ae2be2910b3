"""The MCP door (``bot-toolsearch mcp``): tool search in front of every tool source, for any
MCP client, on the same protocol engine as the `Bot`, the wrapper and the proxy."""
