#!/usr/bin/env python3
"""Manual GenAI spans with the plain OpenTelemetry Python SDK, exported as OTLP/HTTP protobuf.

No model is called: the spans are what an application (or a framework without its own
instrumentation) would record by hand following the current GenAI semantic conventions
(gen_ai.operation.name, gen_ai.provider.name, gen_ai.usage.*, including the cache and reasoning
token attributes). Token counts follow the conventions: gen_ai.usage.input_tokens includes the
cached tokens (cache_read + cache_creation are a part of it) and gen_ai.usage.output_tokens
includes the reasoning tokens.

Traces recorded (4 traces, 7 spans):
  invoke_agent weather-agent          INTERNAL
    chat gpt-4o                       CLIENT   tool call, 1200 in (1024 cache read), 40 out
    execute_tool get_weather          INTERNAL
    chat gpt-4o                       CLIENT   final answer, 1300 in (1280 cache read), 300 out (128 reasoning), content attrs
  chat gpt-4o                         CLIENT   status ERROR, error.type, exception event
  chat claude-sonnet-4-20250514       CLIENT   anthropic: 3000 in (1024 cache read, 512 cache creation), 250 out
  embeddings text-embedding-3-small   CLIENT   8 in

Usage: python_sdk_genai.py [--gzip] [--grpc]   (--grpc: the OTLP gRPC exporter, for the live test)
"""
import json
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_setup import make_provider, shutdown


def main():
    gzip = "--gzip" in sys.argv[1:]
    provider = make_provider(
        "capture-python-sdk-genai",
        compression=Compression.Gzip if gzip else Compression.NoCompression,
        grpc="--grpc" in sys.argv[1:],
    )
    tracer = trace.get_tracer("capture.genai.manual", "1.0.0")

    # 1. An agent run: a tool-calling chat, the tool, and the final chat.
    with tracer.start_as_current_span(
        "invoke_agent weather-agent",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": "weather-agent",
            "gen_ai.agent.id": "agent_weather_1",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.conversation.id": "conv_capture_1",
        },
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.request.temperature": 0.2,
                "gen_ai.request.max_tokens": 512,
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.response.id": "chatcmpl-mock-tool_call",
                "gen_ai.response.finish_reasons": ["tool_calls"],
                "gen_ai.usage.input_tokens": 1200,
                "gen_ai.usage.cache_read.input_tokens": 1024,
                "gen_ai.usage.output_tokens": 40,
                "server.address": "api.openai.com",
                "server.port": 443,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": "call_mock_weather_1",
                "gen_ai.tool.description": "Current weather for a city",
                "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
                "gen_ai.tool.call.result": json.dumps({"temperature_c": 18, "sky": "sunny"}),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.response.id": "chatcmpl-mock-after_tool",
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.output.type": "text",
                "gen_ai.usage.input_tokens": 1300,
                "gen_ai.usage.cache_read.input_tokens": 1280,
                "gen_ai.usage.output_tokens": 300,
                "gen_ai.usage.reasoning.output_tokens": 128,
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "You are a weather bot."}]),
                "gen_ai.input.messages": json.dumps([
                    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
                    {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_mock_weather_1",
                                                     "name": "get_weather", "arguments": {"city": "Paris"}}]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_mock_weather_1",
                                                "response": {"temperature_c": 18, "sky": "sunny"}}]},
                ]),
                "gen_ai.output.messages": json.dumps([
                    {"role": "assistant", "finish_reason": "stop",
                     "parts": [{"type": "text", "content": "It is 18 degrees and sunny in Paris."}]},
                ]),
                "server.address": "api.openai.com",
                "server.port": 443,
            },
        ):
            pass

    # 2. A failed chat call.
    with tracer.start_as_current_span(
        "chat gpt-4o",
        kind=SpanKind.CLIENT,
        record_exception=False,
        set_status_on_exception=False,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "server.address": "api.openai.com",
            "server.port": 443,
        },
    ) as span:
        try:
            raise RuntimeError("Rate limit reached for gpt-4o: 30000 tokens per minute")
        except RuntimeError as exc:
            span.record_exception(exc, attributes={"exception.type": "openai.RateLimitError"})
        span.set_attribute("error.type", "openai.RateLimitError")
        span.set_attribute("http.response.status_code", 429)
        span.set_status(Status(StatusCode.ERROR, "Rate limit reached for gpt-4o"))

    # 3. Another provider, with prompt-cache writes (cache_creation).
    with tracer.start_as_current_span(
        "chat claude-sonnet-4-20250514",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4-20250514",
            "gen_ai.response.model": "claude-sonnet-4-20250514",
            "gen_ai.response.id": "msg_mock_1",
            "gen_ai.response.finish_reasons": ["end_turn"],
            "gen_ai.usage.input_tokens": 3000,
            "gen_ai.usage.cache_read.input_tokens": 1024,
            "gen_ai.usage.cache_creation.input_tokens": 512,
            "gen_ai.usage.output_tokens": 250,
        },
    ):
        pass

    # 4. Embeddings.
    with tracer.start_as_current_span(
        "embeddings text-embedding-3-small",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "embeddings",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "text-embedding-3-small",
            "gen_ai.response.model": "text-embedding-3-small",
            "gen_ai.embeddings.dimension.count": 8,
            "gen_ai.request.encoding_formats": ["float"],
            "gen_ai.usage.input_tokens": 8,
        },
    ):
        pass

    shutdown(provider)


if __name__ == "__main__":
    main()
