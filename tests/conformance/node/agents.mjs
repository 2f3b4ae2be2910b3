// The JS Agents SDK's tool search against an OpenAI-compatible base URL.
// usage: node agents.mjs BASE_URL server|client
// Prints one JSON line: the final output, the tools the SDK ran and the run's item types.
import OpenAI from 'openai';
import { z } from 'zod';
import {
  Agent,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
  tool,
  toolNamespace,
  toolSearchTool,
} from '@openai/agents';

const [baseURL, execution] = process.argv.slice(2);
setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: 'test', maxRetries: 0 }));

const ran = [];
const forecast = tool({
  name: 'get_weather_forecast',
  description: 'Forecast the weather for a city.',
  parameters: z.object({ city: z.string() }),
  deferLoading: true,
  execute: async ({ city }) => {
    ran.push(['get_weather_forecast', { city }]);
    return `Sunny in ${city}`;
  },
});
const crm = toolNamespace({
  name: 'crm',
  description: 'Customer records: look up and update customers.',
  tools: [
    tool({
      name: 'lookup_customer',
      description: 'Look up a customer by email.',
      parameters: z.object({ email: z.string() }),
      deferLoading: true,
      execute: async ({ email }) => {
        ran.push(['crm.lookup_customer', { email }]);
        return `customer ${email}`;
      },
    }),
  ],
});

const agent = new Agent({
  name: 'assistant',
  instructions: 'Answer with the tools.',
  model: 'm',
  tools: [toolSearchTool(execution === 'client' ? { execution: 'client' } : {}), forecast, ...crm],
});
const result = await run(agent, 'Weather in Oslo?', { maxTurns: 8 });
console.log(
  JSON.stringify({
    finalOutput: result.finalOutput,
    ran,
    items: result.newItems.map((item) => item.rawItem?.type ?? item.type),
  }),
);
