// The Vercel AI SDK (ai + @ai-sdk/openai) with OpenAI's tool search, `store` at its default.
// usage: node vercel.mjs BASE_URL [stream]
// Prints one JSON line: the final text, the tools the SDK ran and each step's content types.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const [baseURL, mode] = process.argv.slice(2);
const openai = createOpenAI({ baseURL, apiKey: 'test' });
const ran = [];
const options = {
  model: openai.responses('m'),
  prompt: 'Weather in Oslo?',
  stopWhen: stepCountIs(6),
  maxRetries: 0,
  tools: {
    toolSearch: openai.tools.toolSearch(),
    get_weather_forecast: tool({
      description: 'Forecast the weather for a city.',
      inputSchema: z.object({ city: z.string() }),
      providerOptions: { openai: { deferLoading: true } },
      execute: async ({ city }) => {
        ran.push(['get_weather_forecast', { city }]);
        return `Sunny in ${city}`;
      },
    }),
  },
};
let result;
if (mode === 'stream') {
  result = streamText({ ...options, onError: ({ error }) => { throw error; } });
  await result.consumeStream();
} else {
  result = await generateText(options);
}
const steps = await result.steps;
console.log(
  JSON.stringify({
    text: await result.text,
    ran,
    steps: steps.map((step) => step.content.map((part) => part.type + (part.toolName ? `:${part.toolName}` : ''))),
  }),
);
