// The Vercel AI SDK (npm `ai`) with experimental_telemetry, exported as OTLP/HTTP protobuf
// (@opentelemetry/exporter-trace-otlp-proto). The model is @ai-sdk/openai's chat-completions
// model pointed at the mock server (OPENAI_BASE_URL), so the usage the spans carry went
// through the real provider's mapping of OpenAI's usage block (cached_tokens, reasoning_tokens).
//
// Calls:
//   1. generateText with one tool (get_weather), two steps: tool call, then the answer
//   2. streamText, fully consumed
//   3. embed of one string
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, embed, tool, stepCountIs } from 'ai';
import { z } from 'zod';
import { makeProvider, shutdown } from './otel_setup.mjs';

const provider = await makeProvider('capture-vercel-ai', 'protobuf');
const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: 'sk-mock-capture' });

const telemetry = (functionId) => ({
  isEnabled: true,
  functionId,
  metadata: { capture: 'vercel-ai' },
});

const gen = await generateText({
  model: openai.chat('gpt-4o'),
  system: 'You are a weather bot.',
  prompt: 'What is the weather in Paris?',
  tools: {
    get_weather: tool({
      description: 'Current weather for a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, temperature_c: 18, sky: 'sunny' }),
    }),
  },
  stopWhen: stepCountIs(2),
  experimental_telemetry: telemetry('weather-agent'),
});
if (!gen.text.includes('18 degrees')) throw new Error(`unexpected answer: ${gen.text}`);
if (gen.steps.length !== 2) throw new Error(`expected 2 steps, got ${gen.steps.length}`);

const stream = streamText({
  model: openai.chat('gpt-4o'),
  prompt: 'Say hello in French.',
  experimental_telemetry: telemetry('greeter'),
});
let text = '';
for await (const part of stream.textStream) text += part;
if (!text.startsWith('Bonjour')) throw new Error(`unexpected stream: ${text}`);
await stream.usage;

const emb = await embed({
  model: openai.embedding('text-embedding-3-small'),
  value: 'The weather in Paris',
  experimental_telemetry: telemetry('embedder'),
});
if (emb.embedding.length !== 8) throw new Error(`unexpected embedding length ${emb.embedding.length}`);

console.log('usage', JSON.stringify({ generate: gen.totalUsage, stream: await stream.totalUsage, embed: emb.usage }));
await shutdown(provider);
