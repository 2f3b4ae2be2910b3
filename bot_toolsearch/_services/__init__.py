"""What the sibling shells share (the `Bot` runtime, the wrapper, the proxy and the MCP door):
permissions, the keyword index built ahead, the semantic stage, argument refusals, and running
work off the event loop. A service two shells use lives here, below both, never inside one."""
