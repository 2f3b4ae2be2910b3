// The official TypeScript MCP SDK (@modelcontextprotocol/sdk, handshake era) over streamable
// HTTP against `bot-toolsearch mcp --http` under append loading.
// usage: node mcp_client.mjs URL [KEY]
// Prints one JSON line: the lists before and after a search, what it loaded, the
// list_changed notifications heard, a loaded tool's result and a hidden tool's error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, key] = process.argv.slice(2);
const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : undefined;
const client = new Client({ name: 'ts-sdk', version: '1' });
let changed = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed += 1;
});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
const names = async () => (await client.listTools()).tools.map((t) => t.name);
const out = { first: await names() };
const found = await client.callTool({
  name: 'tool_search',
  arguments: { query: 'select:notes.shout' },
});
out.loaded = JSON.parse(found.content[0].text).loaded;
out.changed = changed;
out.after = await names();
const ran = await client.callTool({ name: 'notes.shout', arguments: { text: 'hi' } });
out.ran = [ran.content[0].text, Boolean(ran.isError)];
const hidden = await client.callTool({ name: 'notes.secret', arguments: { text: 'x' } });
out.hidden = [hidden.content[0].text, Boolean(hidden.isError)];
await client.close();
console.log(JSON.stringify(out));
