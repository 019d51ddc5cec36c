// Manual GenAI spans with the OpenTelemetry JS SDK, exported as OTLP/HTTP JSON
// (@opentelemetry/exporter-trace-otlp-http), so the capture shows how the JS SDK encodes
// OTLP/JSON: ids, integer and array attribute values, enums. The same conventions as
// python_sdk_genai.py (input_tokens includes cached tokens, output_tokens includes reasoning).
//
// Traces recorded (2 traces, 5 spans):
//   invoke_agent weather-agent          INTERNAL
//     chat gpt-4o                       CLIENT  1200 in (1024 cache read), 40 out
//     execute_tool get_weather          INTERNAL
//     chat gpt-4o                       CLIENT  1300 in (1280 cache read), 300 out (128 reasoning)
//   chat gpt-4o                         CLIENT  status ERROR, error.type
import { trace, context, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { makeProvider, shutdown } from './otel_setup.mjs';

// The capture sends OTLP/HTTP JSON; the live exporter test (tests/it/otlp.rs) also runs it with
// --grpc (OTLP over gRPC) and --gzip.
const provider = await makeProvider(
  'capture-js-sdk-genai',
  process.argv.includes('--grpc') ? 'grpc' : 'json',
  process.argv.includes('--gzip'),
);
const tracer = trace.getTracer('capture.genai.manual', '1.0.0');

function inSpan(name, kind, attributes, fn = () => {}) {
  return tracer.startActiveSpan(name, { kind, attributes }, (span) => {
    try {
      return fn(span);
    } finally {
      span.end();
    }
  });
}

inSpan(
  'invoke_agent weather-agent',
  SpanKind.INTERNAL,
  {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.provider.name': 'openai',
    'gen_ai.agent.name': 'weather-agent',
    'gen_ai.request.model': 'gpt-4o',
  },
  () => {
    inSpan('chat gpt-4o', SpanKind.CLIENT, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.max_tokens': 512,
      'gen_ai.response.model': 'gpt-4o-2024-08-06',
      'gen_ai.response.id': 'chatcmpl-mock-tool_call',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 1200,
      'gen_ai.usage.cache_read.input_tokens': 1024,
      'gen_ai.usage.output_tokens': 40,
    });
    inSpan('execute_tool get_weather', SpanKind.INTERNAL, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'call_mock_weather_1',
      'gen_ai.tool.call.arguments': JSON.stringify({ city: 'Paris' }),
      'gen_ai.tool.call.result': JSON.stringify({ temperature_c: 18, sky: 'sunny' }),
    });
    inSpan('chat gpt-4o', SpanKind.CLIENT, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o-2024-08-06',
      'gen_ai.response.id': 'chatcmpl-mock-after_tool',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 1300,
      'gen_ai.usage.cache_read.input_tokens': 1280,
      'gen_ai.usage.output_tokens': 300,
      'gen_ai.usage.reasoning.output_tokens': 128,
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
      ]),
      'gen_ai.output.messages': JSON.stringify([
        {
          role: 'assistant',
          finish_reason: 'stop',
          parts: [{ type: 'text', content: 'It is 18 degrees and sunny in Paris.' }],
        },
      ]),
    });
  },
);

inSpan(
  'chat gpt-4o',
  SpanKind.CLIENT,
  {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o',
  },
  (span) => {
    span.recordException({ name: 'RateLimitError', message: 'Rate limit reached for gpt-4o' });
    span.setAttribute('error.type', 'RateLimitError');
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'Rate limit reached for gpt-4o' });
  },
);

await shutdown(provider);
