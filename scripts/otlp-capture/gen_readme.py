#!/usr/bin/env python3
"""Generate tests/fixtures/otlp/README.md from the captures' decoded dumps and headers.

Everything in the span tables comes from the <capture>.decoded.json files (via spans.py); the
versions come from the installed packages (importlib.metadata for PyPI, node_modules/*/package.json
for npm); the mock's canned usage comes from mock_openai.py. Only the prose about each library
(what the program does, what stood out) is written here by hand, in CAPTURES and NOTES.
Ids, timestamps, ports and uuids are left out, so a rerun that produced the same spans produces
the same README.

Usage: gen_readme.py FIXTURES_DIR --node-dir target/otlp-capture/node > README.md
"""
import argparse
import gzip
import importlib.metadata
import json
import os
import re
import sys

import mock_openai
from decode import is_capture, stem_of
from spans import load_spans

PY = "pypi"
NPM = "npm"

# name -> how it was made. "packages" are the libraries whose versions matter for the capture.
CAPTURES = {
    "python-sdk-genai": {
        "title": "OpenTelemetry Python SDK, manual GenAI spans, protobuf + gzip",
        "program": "python_sdk_genai.py --gzip",
        "packages": [(PY, "opentelemetry-sdk"), (PY, "opentelemetry-exporter-otlp-proto-http")],
        "how": "Spans made by hand with the current GenAI semantic conventions (no model is called), "
        "exported by `OTLPSpanExporter(compression=Compression.Gzip)` through a `BatchSpanProcessor`, "
        "flushed by `TracerProvider.shutdown()`.",
    },
    "python-sdk-genai-plain": {
        "title": "OpenTelemetry Python SDK, manual GenAI spans, protobuf uncompressed",
        "program": "python_sdk_genai.py",
        "packages": [(PY, "opentelemetry-sdk"), (PY, "opentelemetry-exporter-otlp-proto-http")],
        "how": "The same program and spans as `python-sdk-genai`, exported without compression.",
    },
    "js-sdk-genai": {
        "title": "OpenTelemetry JS SDK, manual GenAI spans, OTLP/JSON",
        "program": "js_sdk_genai.mjs",
        "packages": [(NPM, "@opentelemetry/sdk-trace-node"), (NPM, "@opentelemetry/sdk-trace-base"),
                     (NPM, "@opentelemetry/exporter-trace-otlp-http"), (NPM, "@opentelemetry/otlp-transformer")],
        "how": "Spans made by hand with the GenAI conventions in Node, exported as OTLP/JSON by "
        "`@opentelemetry/exporter-trace-otlp-http` (the Python SDK has no JSON-over-HTTP exporter).",
    },
    "openinference-openai": {
        "title": "OpenInference instrumentation of the openai Python client",
        "program": "openinference_openai.py", "also": "openai_calls.py",
        "packages": [(PY, "openinference-instrumentation-openai"), (PY, "openinference-semantic-conventions"),
                     (PY, "openai"), (PY, "opentelemetry-exporter-otlp-proto-http")],
        "how": "`OpenAIInstrumentor().instrument(tracer_provider=...)` with default settings, then six calls "
        "of the `openai` client against the mock: chat, streamed chat (`stream_options={\"include_usage\": True}`), "
        "chat with a tool (tool call), chat with the tool result, embeddings, and a chat with an unknown model (404).",
    },
    "openllmetry-openai": {
        "title": "OpenLLMetry (traceloop) instrumentation of the openai Python client",
        "program": "openllmetry_openai.py", "also": "openai_calls.py",
        "packages": [(PY, "opentelemetry-instrumentation-openai"), (PY, "opentelemetry-semantic-conventions-ai"),
                     (PY, "openai"), (PY, "opentelemetry-exporter-otlp-proto-http")],
        "how": "`opentelemetry.instrumentation.openai.OpenAIInstrumentor().instrument(tracer_provider=...)` with "
        "default settings (content as span attributes), then the same six calls as `openinference-openai`.",
    },
    "vercel-ai": {
        "title": "Vercel AI SDK telemetry",
        "program": "vercel_ai.mjs",
        "packages": [(NPM, "ai"), (NPM, "@ai-sdk/openai"), (NPM, "@opentelemetry/sdk-trace-node"),
                     (NPM, "@opentelemetry/exporter-trace-otlp-proto")],
        "how": "`experimental_telemetry: { isEnabled: true, functionId, metadata }` on `generateText` (one tool, "
        "`stopWhen: stepCountIs(2)`: a tool call then the answer), `streamText` and `embed`. The model is "
        "`@ai-sdk/openai`'s chat-completions model (`openai.chat('gpt-4o')`, `openai.embedding(...)`) with "
        "`baseURL` at the mock, so usage went through the real provider's mapping.",
    },
    "pydantic-ai": {
        "title": "Pydantic AI agent instrumentation",
        "program": "pydantic_ai_agent.py",
        "packages": [(PY, "pydantic-ai-slim"), (PY, "openai"), (PY, "genai-prices"),
                     (PY, "opentelemetry-exporter-otlp-proto-http")],
        "how": "An `Agent` with one tool, instrumented by `capabilities=[Instrumentation(settings="
        "InstrumentationSettings(tracer_provider=...))]` (no logfire; default data-format version), "
        "running once: model request (tool call), tool, model request (answer). The model is pydantic-ai's "
        "`OpenAIChatModel('gpt-4o')` with `OpenAIProvider(base_url=...)` at the mock, not `TestModel`: "
        "TestModel reports model and provider `test` and its own token counts, so it would show neither a "
        "priceable model, nor pydantic-ai's mapping of OpenAI's cached/reasoning tokens, nor its cost attribute.",
    },
}

# Hand-written observations about each library's encoding, as seen with the versions listed.
NOTES = {
    "python-sdk-genai": [
        "Written by this repository's program, so it shows the conventions as the program applies them: "
        "`gen_ai.usage.input_tokens` includes the cached tokens (`cache_read` + `cache_creation` are parts "
        "of it) and `gen_ai.usage.output_tokens` includes `gen_ai.usage.reasoning.output_tokens`.",
        "The error span has status ERROR, `error.type`, and an `exception` event (recorded by hand).",
        "Protobuf JSON mapping in the decoded dump: ids are base64, `intValue` and timestamps are strings.",
    ],
    "python-sdk-genai-plain": ["Same spans as `python-sdk-genai`; only the body encoding differs."],
    "js-sdk-genai": [
        "OTLP/JSON as the JS SDK writes it: see the *JSON encoding as sent* line above for ids, integers and "
        "enums. Every span also has `flags: 257` (sampled, plus the OTLP 1.x bit saying whether the parent "
        "was remote), `droppedAttributesCount`/`droppedEventsCount`/`droppedLinksCount: 0` and empty "
        "`events`/`links` arrays.",
        "**Timestamps**: start times have millisecond precision (`...108000000`) while end times are start + "
        "a high-resolution duration, so a parent can *end before its children start* by a fraction of a "
        "millisecond (while these captures were made, `invoke_agent` ended before some of its children "
        "in about one run in three): a decoder must not require children to lie within their parent.",
        "The resource has `telemetry.sdk.*` from `defaultResource()` merged by the program; the Python SDK's "
        "resource additionally has a random `service.instance.id`.",
    ],
    "openinference-openai": [
        "OpenInference names only (`llm.*`, `input.value`/`output.value`, `openinference.span.kind`); no "
        "`gen_ai.*` unless `OPENINFERENCE_ENABLE_GENAI_SEMCONV` is set (it was not).",
        "Every span is INTERNAL and named after the OpenAI resource (`ChatCompletion`, `CreateEmbeddings`). "
        "Successful spans have status OK (not UNSET).",
        "`llm.model_name` is the *response* model (`gpt-4o-2024-08-06`); the requested model (`gpt-4o`) is "
        "only inside the JSON of `llm.invocation_parameters` / `input.value`. No `llm.provider` attribute: "
        "only `llm.system=openai`.",
        "`llm.token_count.prompt` includes the cached tokens (`llm.token_count.prompt_details.cache_read`), "
        "`llm.token_count.completion` includes `llm.token_count.completion_details.reasoning`: they are "
        "OpenAI's `prompt_tokens`/`completion_tokens` copied through. The streamed call has the same "
        "counts as a non-streamed one (from the final usage chunk).",
        "The embeddings span counts its tokens as `llm.token_count.prompt`/`total` and stores the vector as a "
        "double array `embedding.embeddings.0.embedding.vector` (the openai client asked for base64; the "
        "instrumentation decoded it).",
        "The failed call (404) has status ERROR and an `exception` event, but no `error.type` attribute and "
        "no model name attribute.",
    ],
    "openllmetry-openai": [
        "Current `gen_ai.*` names for operation, provider, request/response model, input/output tokens and "
        "cache reads, plus non-standard extras: `gen_ai.usage.total_tokens`, `gen_ai.usage.reasoning_tokens` "
        "(the conventions' name is `gen_ai.usage.reasoning.output_tokens`), `gen_ai.is_streaming`, "
        "`gen_ai.openai.api_base`, `openai.response.service_tier`.",
        "`gen_ai.usage.input_tokens` includes the cached tokens; `gen_ai.usage.output_tokens` includes the "
        "reasoning tokens (OpenAI's counts copied through).",
        "The streamed span has **no reasoning-token attribute** although the usage chunk reported 64, and "
        "records one `gen_ai.content.completion.chunk` event per chunk; its status is OK while the "
        "non-streamed ones are UNSET.",
        "The embeddings span gets `gen_ai.usage.cache_read.input_tokens = 0` and records the embedded text "
        "as `gen_ai.input.messages`.",
        "The failed call (404) has status ERROR, `error.type=NotFoundError` and an `exception` event.",
    ],
    "vercel-ai": [
        "Every span is INTERNAL, including the `doGenerate`/`doStream`/`doEmbed` spans that make the HTTP "
        "calls. Names are `ai.*` operation ids, not `{operation} {model}`; there is no "
        "`gen_ai.operation.name`.",
        "Provider: `ai.model.provider=openai.chat` / `openai.embedding`, and on the call spans the older "
        "`gen_ai.system` with the same value (`openai.chat`, not `openai`). No `gen_ai.provider.name`.",
        "Usage on the call spans (`doGenerate`, `doStream`) in both `ai.usage.*` and `gen_ai.usage.input_tokens`/"
        "`output_tokens`; on the outer `ai.generateText`/`ai.streamText` spans only `ai.usage.*`, summed over "
        "the steps. **Counting the outer span and its steps double-counts.**",
        "`ai.usage.inputTokens` includes the cached tokens; the split is `ai.usage.inputTokenDetails."
        "noCacheTokens` + `cacheReadTokens` (+ `cacheWriteTokens`, absent for OpenAI). "
        "`ai.usage.outputTokens` includes reasoning: `outputTokenDetails.textTokens` + `reasoningTokens`. "
        "The deprecated `ai.usage.cachedInputTokens` / `ai.usage.reasoningTokens` repeat the same numbers.",
        "Embedding usage is `ai.usage.tokens` only (no `gen_ai.*` at all on embedding spans).",
        "`ai.response.model` / `gen_ai.response.model` are the response's model, `ai.model.id` / "
        "`gen_ai.request.model` the requested one.",
    ],
    "pydantic-ai": [
        "Current `gen_ai.*` names on the `chat` spans (`gen_ai.provider.name` and, also, the older "
        "`gen_ai.system`), with input tokens including the cached ones and `gen_ai.usage.cache_read.input_tokens`.",
        "Reasoning tokens are **not** `gen_ai.usage.reasoning.output_tokens` but pydantic-ai's own "
        "`gen_ai.usage.details.reasoning_tokens` (every key of OpenAI's usage details is copied as "
        "`gen_ai.usage.details.*`, including a repeat of the cache reads as `details.cache_read_tokens`).",
        "The agent-run span carries the run's totals under `gen_ai.aggregated_usage.*` (pydantic-ai's own "
        "namespace, default `use_aggregated_usage_attribute_names=True`) so a backend summing "
        "`gen_ai.usage.*` does not double-count; its model is in `model_name` and there is no provider.",
        "Each `chat` span has `operation.cost` (USD, a double) computed by pydantic-ai from its bundled "
        "`genai-prices` data; the agent-run span has no cost.",
        "Also `pydantic_ai.cache.hit_ratio` / `pydantic_ai.cache.established_tokens` (prompt-cache health) and "
        "logfire display attributes (`logfire.msg`, `logfire.json_schema`) even without logfire installed.",
    ],
}

OP_KEYS = ["gen_ai.operation.name", "openinference.span.kind", "ai.operationId", "llm.request.type",
           "traceloop.span.kind"]
PROVIDER_KEYS = ["gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system", "ai.model.provider"]
AGENT_TOOL_KEYS = ["gen_ai.agent.name", "agent_name", "gen_ai.tool.name", "ai.toolCall.name", "tool.name",
                   "ai.telemetry.functionId"]
MODEL_KEYS = ["gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "embedding.model_name",
              "ai.model.id", "ai.response.model", "model_name"]
# Attributes that hold prompts, completions, tool arguments/results or embedded text/vectors.
CONTENT_EXACT = {
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value",
    "ai.prompt", "ai.prompt.messages", "ai.prompt.tools", "ai.prompt.toolChoice", "ai.response.text",
    "ai.response.toolCalls", "ai.response.object", "ai.response.reasoning", "ai.toolCall.args",
    "ai.toolCall.result", "ai.value", "ai.values", "ai.embedding", "ai.embeddings", "pydantic_ai.all_messages",
    "final_result", "model_request_parameters", "tool_arguments", "tool_response", "llm.invocation_parameters",
}
CONTENT_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.",
                    "llm.tools.", "llm.prompts.", "embedding.embeddings.")


def is_token_count(key, value):
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    if key.startswith(("gen_ai.request.", "ai.settings.", "llm.invocation_parameters")):
        return False
    return "token" in key.lower()


def is_cost(key):
    k = key.lower()
    return "cost" in k or "price" in k


def is_content(key):
    return key in CONTENT_EXACT or key.startswith(CONTENT_PREFIXES)


def collapse(key):
    """llm.input_messages.1.message.content -> llm.input_messages.N.message.content"""
    return re.sub(r"\.\d+(?=\.|$)", ".N", key)


def fmt_value(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def code(s):
    s = str(s).replace("|", "\\|")
    return f"`{s}`"


def cell(items):
    return "<br>".join(items) if items else ""


def version(eco, name, node_dir):
    try:
        if eco == PY:
            return importlib.metadata.version(name)
        with open(os.path.join(node_dir, "node_modules", name, "package.json")) as f:
            return json.load(f)["version"]
    except (OSError, importlib.metadata.PackageNotFoundError, KeyError):
        return "?"


def read_headers(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    out[k.strip().lower()] = v.strip()
    return out


def json_encoding_facts(path):
    """How an OTLP/JSON body encodes ids, ints and enums (for JSON captures)."""
    with open(path, "rb") as f:
        body = f.read()
    if path.endswith(".gz"):
        body = gzip.decompress(body)
    doc = json.loads(body)
    sp = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    facts = []
    tid = sp.get("traceId", "")
    facts.append(f"`traceId`/`spanId` are {'lowercase hex' if re.fullmatch(r'[0-9a-f]{32}', tid) else 'not hex'} "
                 f"(e.g. {len(tid)} characters for a trace id)")
    ints = [a["value"]["intValue"] for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
            for a in s.get("attributes", []) if "intValue" in a.get("value", {})]
    if ints:
        facts.append("`intValue` is a JSON " + ("string" if isinstance(ints[0], str) else "number"))
    facts.append("`startTimeUnixNano`/`endTimeUnixNano` are JSON "
                 + ("strings" if isinstance(sp.get("startTimeUnixNano"), str) else "numbers"))
    facts.append("`kind` is " + ("an integer" if isinstance(sp.get("kind"), int) else "a string")
                 + f" (e.g. `{json.dumps(sp.get('kind'))}`)")
    statuses = [s.get("status") for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"] if s.get("status")]
    codes = [st.get("code") for st in statuses if "code" in st]
    if codes:
        facts.append("`status.code` is " + ("an integer" if isinstance(codes[0], int) else "a string")
                     + f"; spans with status UNSET carry `{json.dumps(next((st for st in statuses if st.get('code') in (0, None, 'STATUS_CODE_UNSET')), {}))}`")
    return facts


def span_rows(spans):
    rows = []
    for i, s in enumerate(spans, 1):
        a = s["attributes"]
        op = [f"{code(k)}={code(a[k])}" for k in OP_KEYS if k in a]
        prov = [f"{code(k)}={code(a[k])}" for k in PROVIDER_KEYS if k in a]
        models = [f"{code(k)}={code(a[k])}" for k in MODEL_KEYS if k in a]
        agent_tool = [f"{code(k)}={code(a[k])}" for k in AGENT_TOOL_KEYS if k in a]
        tokens = [f"{code(k)}={a[k]}" for k in a if is_token_count(k, a[k])]
        cost = [f"{code(k)}={fmt_value(a[k])}" for k in a if is_cost(k)]
        content = []
        for k in a:
            if is_content(k):
                c = collapse(k)
                if code(c) not in content:
                    content.append(code(c))
        status = s["status"]
        if "error.type" in a:
            status += f"<br>{code('error.type')}={code(a['error.type'])}"
        events = {}
        for e in s["events"]:
            events[e] = events.get(e, 0) + 1
        ev = [f"{code(e)}" + (f" ×{n}" if n > 1 else "") for e, n in events.items()]
        name = ("&nbsp;&nbsp;" * s["depth"]) + code(s["name"])
        parent = code(s["parent"]) if s["parent"] else "(root)"
        rows.append([str(i), name, s["kind"], parent, status, cell(op), cell(prov), cell(models), cell(agent_tool), cell(tokens),
                     cell(cost), cell(content), cell(ev)])
    return rows


def other_keys(spans):
    keys = set()
    for s in spans:
        for k, v in s["attributes"].items():
            if (k in OP_KEYS or k in PROVIDER_KEYS or k in MODEL_KEYS or k in AGENT_TOOL_KEYS
                    or is_token_count(k, v) or is_cost(k)
                    or is_content(k) or k == "error.type"):
                continue
            keys.add(collapse(k))
    return sorted(keys)


def namespaces(spans):
    ns = set()
    for s in spans:
        for k in s["attributes"]:
            ns.add(k.split(".", 1)[0] + ("." if "." in k else ""))
    return sorted(ns)


def dialect(spans):
    keys = {k for s in spans for k in s["attributes"]}
    out = []
    if "gen_ai.provider.name" in keys or any(k.startswith("gen_ai.usage.") for k in keys):
        out.append("gen_ai.* (current: " + ", ".join(sorted(
            {k for k in keys if k in ("gen_ai.provider.name", "gen_ai.operation.name")}) or ["usage only"]) + ")")
    if "gen_ai.system" in keys:
        out.append("gen_ai.system (older)")
    if any(k.startswith("llm.") for k in keys) or "openinference.span.kind" in keys:
        out.append("OpenInference llm.*")
    if any(k.startswith("ai.") for k in keys):
        out.append("Vercel ai.*")
    if any(k.startswith(("gen_ai.aggregated_usage.", "pydantic_ai.", "gen_ai.usage.details.")) for k in keys):
        out.append("pydantic-ai extras (gen_ai.aggregated_usage.*, gen_ai.usage.details.*, pydantic_ai.*)")
    return "; ".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--node-dir", required=True)
    args = ap.parse_args()
    d = args.dir

    files = sorted(fn for fn in os.listdir(d) if is_capture(fn))
    by_capture = {}
    for fn in files:
        stem = stem_of(fn)
        base = re.sub(r"-\d+$", "", stem) if stem not in CAPTURES else stem
        if base not in CAPTURES:
            sys.exit(f"gen_readme: {fn} belongs to no known capture")
        by_capture.setdefault(base, []).append((stem, fn))

    out = []
    w = out.append
    w("# OTLP/HTTP trace captures from real client libraries")
    w("")
    w("<!-- Generated by scripts/otlp-capture/gen_readme.py from the decoded dumps; do not edit by hand. -->")
    w("")
    w("Request bodies of `POST /v1/traces` exactly as real OpenTelemetry clients sent them, for testing an "
      "OTLP/HTTP decoder and its mapping of LLM semantic conventions. Recreate them all with "
      "`scripts/capture-otlp.sh` (or some: `scripts/capture-otlp.sh vercel-ai pydantic-ai`); it installs "
      "the pinned packages (`scripts/otlp-capture/requirements.txt`, `package.json` + `package-lock.json`) "
      "into `target/otlp-capture/`, runs a mock OpenAI server and a capture listener on 127.0.0.1 (nothing "
      "leaves the machine), runs one program per library, and regenerates the dumps and this file. "
      "Ids, timestamps, ports and `service.instance.id` change on every run; the span structure, names, "
      "models, token counts and costs do not.")
    w("")
    w("Files per capture `NAME` (`NAME-1`, `NAME-2`, ... if a client sent several requests):")
    w("")
    w("- `NAME.pb`, `NAME.pb.gz`, `NAME.json`: the raw body as received (still gzip-compressed if it was sent so).")
    w("- `NAME.headers`: the request's `content-type`, `content-encoding` (only if sent) and `user-agent`, "
      "one `name: value` a line.")
    w("- `NAME.decoded.json`: protobuf bodies parsed as `ExportTraceServiceRequest` (opentelemetry-proto) and "
      "printed by `google.protobuf.json_format.MessageToJson` (the protobuf JSON mapping: ids in **base64**, "
      "64-bit integers as strings, enums as names); JSON bodies pretty-printed as sent, after checking that they "
      "parse as OTLP/JSON.")
    w("")
    w("The listener answered every request with 200 and an empty body of the request's content type "
      "(empty bytes for protobuf, `{}` for JSON).")
    w("")

    # ---- summary
    w("## Summary")
    w("")
    w("| capture | library | content-type | content-encoding | requests | spans | attribute dialect |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    details = []
    for name in CAPTURES:
        if name not in by_capture:
            continue
        meta = CAPTURES[name]
        reqs = by_capture[name]
        all_spans = []
        per_req = []
        for stem, fn in reqs:
            spans = load_spans(os.path.join(d, stem + ".decoded.json"))
            hdr = read_headers(os.path.join(d, stem + ".headers"))
            per_req.append((stem, fn, spans, hdr))
            all_spans += spans
        hdr0 = per_req[0][3]
        w(f"| [{name}](#{name}) | {meta['title']} | {code(hdr0.get('content-type', '?'))} | "
          f"{code(hdr0['content-encoding']) if 'content-encoding' in hdr0 else 'none'} | {len(reqs)} | "
          f"{len(all_spans)} | {dialect(all_spans)} |")
        details.append((name, meta, per_req, all_spans))
    w("")

    # ---- mock usage
    w("## What the mock model server answered")
    w("")
    w(f"`scripts/otlp-capture/mock_openai.py` answers every chat completion with model `{mock_openai.CHAT_MODEL}` "
      f"(clients request `gpt-4o`) and embeddings with `{mock_openai.EMBED_MODEL}`, "
      f"{mock_openai.EMBED_DIM} dimensions, {mock_openai.EMBED_TOKENS_PER_INPUT} tokens per input. "
      "Which answer a chat request gets depends only on the request. Usage is reported the way OpenAI does: "
      "`cached_tokens` is a part of `prompt_tokens`, `reasoning_tokens` a part of `completion_tokens`.")
    w("")
    w("| scenario | when | prompt_tokens | cached_tokens | completion_tokens | reasoning_tokens | total_tokens |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    when = {"text": "plain chat", "stream": "`stream: true` (usage in the last chunk if `include_usage`)",
            "tool_call": "request has `tools`: calls the first tool with `{\"city\": \"Paris\"}`",
            "after_tool": "a `role: tool` message is present: final answer"}
    for sc, (p, c, o, r) in mock_openai.USAGE.items():
        w(f"| `{sc}` | {when[sc]} | {p} | {c} | {o} | {r} | {p + o} |")
    w("")
    w("A chat request for model `nonexistent-model` gets a 404 `model_not_found` error (used for error spans).")
    w("")

    # ---- per capture
    for name, meta, per_req, all_spans in details:
        w(f"## {name}")
        w("")
        also = f" (the calls are in `scripts/otlp-capture/{meta['also']}`)" if meta.get("also") else ""
        w(f"**{meta['title']}.** Program: `scripts/otlp-capture/{meta['program']}`{also}.")
        w("")
        w("Versions: " + ", ".join(f"{code(p)} {version(eco, p, args.node_dir)}" for eco, p in meta["packages"])
          + ".")
        w("")
        w(meta["how"])
        w("")
        for stem, fn, spans, hdr in per_req:
            traces = len({s["trace_id"] for s in spans})
            services = sorted({s["service"] for s in spans})
            scopes = sorted({s["scope"] for s in spans})
            w(f"`{fn}`: content-type {code(hdr.get('content-type', '?'))}, content-encoding "
              f"{code(hdr['content-encoding']) if 'content-encoding' in hdr else 'none'}, user-agent "
              f"{code(hdr.get('user-agent', '?'))}; **{len(spans)} spans** in {traces} trace(s); "
              f"`service.name` {', '.join(code(x) for x in services)}; scope {', '.join(code(x) for x in scopes)}.")
            w("")
            if fn.endswith((".json", ".json.gz")):
                w("JSON encoding as sent: " + "; ".join(json_encoding_facts(os.path.join(d, fn))) + ".")
                w("")
            w("| # | span | kind | parent | status | operation / span kind | provider / system | models | "
              "agent / tool | token counts | cost | content attributes | events |")
            w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for r in span_rows(spans):
                w("| " + " | ".join(r) + " |")
            w("")
        w("Other attribute keys in this capture (`N` stands for an index): "
          + ", ".join(code(k) for k in other_keys(all_spans)) + ".")
        w("")
        w("Attribute namespaces: " + ", ".join(code(n) for n in namespaces(all_spans)) + ".")
        w("")
        if NOTES.get(name):
            w("Observations:")
            w("")
            for n in NOTES[name]:
                w(f"- {n}")
            w("")

    w("## Table legend")
    w("")
    w("Spans are listed depth-first (children indented under their parent, siblings by start time), so the "
      "order does not depend on the export order. *parent* is the parent span's name. *operation / span kind*, "
      "*provider / system*, *models* and *agent / tool* show each of these attributes that is present, with "
      "its value: " + ", ".join(code(k) for k in OP_KEYS + PROVIDER_KEYS + MODEL_KEYS + AGENT_TOOL_KEYS)
      + ". *token counts* is every integer attribute whose key contains `token` (request limits such as "
      "`gen_ai.request.max_tokens` excluded), *cost* every attribute whose key contains `cost` or `price`; "
      "*content attributes* lists (keys only, indices collapsed to `N`) the attributes that carry prompts, "
      "completions, tool definitions, tool arguments/results, invocation parameters or embedded text and "
      "vectors. *status* adds `error.type` when present.")
    w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
