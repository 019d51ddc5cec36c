#!/usr/bin/env python3
"""pydantic-ai's own OpenTelemetry instrumentation, exported as OTLP/HTTP protobuf.

One agent run with one tool call: the agent asks the model (request 1 -> tool call), runs the
tool, asks again (request 2 -> answer). Instrumented with the Instrumentation capability and
InstrumentationSettings (no logfire; this pydantic-ai version has no Agent(instrument=...)
argument any more, capabilities=[Instrumentation(...)] is its replacement), the default
data-format version and the default gen_ai.aggregated_usage.* names on the agent-run span.

The model is pydantic-ai's OpenAIChatModel pointed at the mock server (OPENAI_BASE_URL) rather
than TestModel/FunctionModel: that way the spans carry a real provider (openai) and a priceable
model id (gpt-4o / gpt-4o-2024-08-06), pydantic-ai's real mapping of OpenAI's usage block
(cached and reasoning tokens), and whatever cost pydantic-ai computes from its bundled price
data, none of which TestModel produces (it reports model "test", provider "test" and its own
made-up token counts).
"""
import os

from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from otel_setup import make_provider, shutdown


def main():
    provider = make_provider("capture-pydantic-ai")
    model = OpenAIChatModel(
        "gpt-4o",
        provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-mock-capture"),
    )
    agent = Agent(
        model,
        name="weather-agent",
        instructions="You are a weather bot.",
        capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))],
    )

    @agent.tool_plain
    def get_weather(city: str) -> dict:
        """Current weather for a city."""
        return {"city": city, "temperature_c": 18, "sky": "sunny"}

    result = agent.run_sync("What is the weather in Paris?")
    assert "18 degrees" in result.output, result.output
    print("usage", result.usage)
    shutdown(provider)


if __name__ == "__main__":
    main()
