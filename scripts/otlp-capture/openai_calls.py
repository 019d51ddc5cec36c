"""The model calls both OpenAI-client captures make (openinference and openllmetry).

All calls go to the mock server (OPENAI_BASE_URL = http://127.0.0.1:PORT/v1), never out.
  1. chat, non-streaming, system + user message                 (mock scenario "text")
  2. chat, streamed, stream_options={"include_usage": True}      ("stream")
  3. chat with a tool -> tool call; 4. the same chat with the tool result -> answer
                                                                 ("tool_call", "after_tool")
  5. embeddings of one string                                    (8 dimensions, 8 tokens)
  6. chat with model "nonexistent-model" -> 404, caught           (an error span)
"""
import json
import os

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def make_client():
    return openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sk-mock-capture", max_retries=0)


def run_calls(client):
    r = client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "You answer in one sentence."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        temperature=0.2,
        max_tokens=512,
    )
    assert r.usage.prompt_tokens_details.cached_tokens == 1024, r.usage

    stream = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Say hello in French."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith("Bonjour"), text

    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    call = r.choices[0].message.tool_calls[0]
    messages.append(r.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id,
                     "content": json.dumps({"temperature_c": 18, "sky": "sunny"})})
    r = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
    assert "18 degrees" in r.choices[0].message.content

    e = client.embeddings.create(model="text-embedding-3-small", input="The weather in Paris")
    assert len(e.data[0].embedding) == 8

    try:
        client.chat.completions.create(model="nonexistent-model", messages=[{"role": "user", "content": "Hi"}])
        raise AssertionError("expected a 404")
    except openai.NotFoundError:
        pass
