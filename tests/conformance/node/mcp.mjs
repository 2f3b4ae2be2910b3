// The TypeScript MCP SDK's client against the MCP door (`bot-toolsearch mcp`).
// usage: node mcp.mjs stdio COMMAND ARG...   |   node mcp.mjs http URL
// Lists the tools, loads text.reverse with tool_search (listed as text-_-reverse, its wire name), waits for tools/list_changed, lists
// again and calls it. Prints one JSON line of what it saw.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, target, ...args] = process.argv.slice(2);
const transport =
  mode === 'stdio'
    ? new StdioClientTransport({ command: target, args, env: process.env, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: 'conformance-node', version: '1.0.0' });
let changed;
const listChanged = new Promise((resolve) => {
  changed = resolve;
});
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
await client.connect(transport);

const names = (listed) => listed.tools.map((tool) => tool.name);
const first = await client.listTools();
const found = await client.callTool({
  name: 'tool_search',
  arguments: { query: 'select:text.reverse' },
});
await Promise.race([
  listChanged,
  new Promise((_, reject) => setTimeout(() => reject(new Error('no tools/list_changed')), 20000)),
]);
const second = await client.listTools();
const reversed = await client.callTool({ name: 'text-_-reverse', arguments: { text: 'abc' } });
console.log(
  JSON.stringify({
    server: client.getServerVersion(),
    first: names(first),
    directory: first.tools[0].description,
    found: JSON.parse(found.content[0].text),
    second: names(second),
    reversed: reversed.content.map((part) => part.text).join(''),
    isError: reversed.isError ?? false,
  }),
);
await client.close();
