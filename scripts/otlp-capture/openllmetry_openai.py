#!/usr/bin/env python3
"""OpenLLMetry's opentelemetry-instrumentation-openai (traceloop) around the openai client,
exported as OTLP/HTTP protobuf.

Default settings: content is recorded (TRACELOOP_TRACE_CONTENT unset means true) as span
attributes (use_attributes=True, the default). No meter provider is configured, so its metrics
go to the no-op global one. The calls are in openai_calls.py.
"""
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

from openai_calls import make_client, run_calls
from otel_setup import make_provider, shutdown


def main():
    provider = make_provider("capture-openllmetry-openai")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    run_calls(make_client())
    shutdown(provider)


if __name__ == "__main__":
    main()
