#!/usr/bin/env python3
"""openinference-instrumentation-openai around the openai client, exported as OTLP/HTTP protobuf.

Default settings (no TraceConfig, so content is recorded and the opt-in
OPENINFERENCE_ENABLE_GENAI_SEMCONV is off: only OpenInference's llm.* / openinference.* names).
The calls are in openai_calls.py.
"""
from openinference.instrumentation.openai import OpenAIInstrumentor

from openai_calls import make_client, run_calls
from otel_setup import make_provider, shutdown


def main():
    provider = make_provider("capture-openinference-openai")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    run_calls(make_client())
    shutdown(provider)


if __name__ == "__main__":
    main()
