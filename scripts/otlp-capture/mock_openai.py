#!/usr/bin/env python3
"""A canned, deterministic OpenAI-compatible model server for the OTLP captures.

Listens on 127.0.0.1 at a free port (written to --port-file once bound) and answers:

  POST /v1/chat/completions   non-streaming and streaming (SSE, chunked), text or one tool call
  POST /v1/embeddings         float or base64 vectors of 8 dimensions

Which answer a chat request gets depends only on the request:
  - model "nonexistent-model"            -> 404 model_not_found (to capture error spans)
  - a message with role "tool" present   -> final text answer after a tool result  ("after_tool")
  - "tools" present (tool_choice != none)-> one call of the first tool, args {"city": "Paris"} ("tool_call")
  - stream true                          -> streamed text                            ("stream")
  - otherwise                            -> text                                     ("text")

Every answer reports the model as gpt-4o-2024-08-06 (the dated snapshot behind "gpt-4o") and a usage
block with cached prompt tokens and reasoning tokens, the way OpenAI reports them: cached_tokens is
part of prompt_tokens and reasoning_tokens is part of completion_tokens.
Stdlib only.
"""
import argparse
import base64
import json
import os
import signal
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHAT_MODEL = "gpt-4o-2024-08-06"
EMBED_MODEL = "text-embedding-3-small"
CREATED = 1735689600  # 2025-01-01T00:00:00Z, fixed so responses are byte-identical across runs
FINGERPRINT = "fp_mock0806"

# scenario -> (prompt, cached, completion, reasoning)
USAGE = {
    "text": (2000, 1024, 300, 128),
    "stream": (1800, 1024, 200, 64),
    "tool_call": (1200, 1024, 40, 16),
    "after_tool": (1300, 1280, 60, 0),
}
TEXT = {
    "text": "Paris is the capital of France.",
    "stream": "Bonjour! Paris is lovely in spring.",
    "after_tool": "It is 18 degrees and sunny in Paris.",
}
EMBED_DIM = 8
EMBED_TOKENS_PER_INPUT = 8


def usage_block(scenario):
    prompt, cached, completion, reasoning = USAGE[scenario]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def scenario_of(req):
    msgs = req.get("messages") or []
    if any(m.get("role") == "tool" for m in msgs):
        return "after_tool"
    if req.get("tools") and req.get("tool_choice") != "none":
        return "tool_call"
    return "stream" if req.get("stream") else "text"


def tool_name_of(req):
    tool = req["tools"][0]
    return tool.get("function", {}).get("name") or tool.get("name")


def chat_completion(req, scenario):
    base = {
        "id": f"chatcmpl-mock-{scenario}",
        "object": "chat.completion",
        "created": CREATED,
        "model": CHAT_MODEL,
        "system_fingerprint": FINGERPRINT,
        "service_tier": "default",
    }
    if scenario == "tool_call":
        message = {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {
                    "id": "call_mock_weather_1",
                    "type": "function",
                    "function": {"name": tool_name_of(req), "arguments": json.dumps({"city": "Paris"})},
                }
            ],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": TEXT[scenario], "refusal": None}
        finish = "stop"
    base["choices"] = [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}]
    base["usage"] = usage_block(scenario)
    return base


def chat_chunks(req, scenario):
    """The SSE chunks of a streamed answer (without the final [DONE])."""

    def chunk(delta, finish=None, choices=True):
        c = {
            "id": f"chatcmpl-mock-{scenario}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": CHAT_MODEL,
            "system_fingerprint": FINGERPRINT,
            "service_tier": "default",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
        }
        return c

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if scenario == "tool_call":
        out.append(chunk({"tool_calls": [{"index": 0, "id": "call_mock_weather_1", "type": "function",
                                          "function": {"name": tool_name_of(req), "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"city": "Paris"})}}]}))
        out.append(chunk({}, "tool_calls"))
    else:
        words = TEXT[scenario].split(" ")
        for i, w in enumerate(words):
            out.append(chunk({"content": w if i == 0 else " " + w}))
        out.append(chunk({}, "stop"))
    if (req.get("stream_options") or {}).get("include_usage"):
        u = chunk({}, choices=False)
        u["usage"] = usage_block(scenario)
        out.append(u)
    return out


def embeddings(req):
    inputs = req.get("input")
    if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
        inputs = [inputs]
    dim = int(req.get("dimensions") or EMBED_DIM)
    fmt = req.get("encoding_format") or "float"
    data = []
    for i, _ in enumerate(inputs):
        vec = [round(((i + 1) * (j + 1) % 7) / 7 - 0.5, 6) for j in range(dim)]
        emb = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode() if fmt == "base64" else vec
        data.append({"object": "embedding", "index": i, "embedding": emb})
    n = EMBED_TOKENS_PER_INPUT * len(inputs)
    return {"object": "list", "data": data, "model": EMBED_MODEL,
            "usage": {"prompt_tokens": n, "total_tokens": n}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-openai/1"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("mock-openai: " + (fmt % args) + "\n")

    def _read_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw or b"{}")

    def _send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", "req_mock")
        self.end_headers()
        self.wfile.write(body)

    def _send_sse(self, chunks):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", "req_mock")
        self.end_headers()
        for c in chunks + ["[DONE]"]:
            data = (c if isinstance(c, str) else json.dumps(c))
            payload = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            req = self._read_json()
        except ValueError:
            return self._send_json(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
        if path.endswith("/chat/completions"):
            if req.get("model") == "nonexistent-model":
                return self._send_json(404, {"error": {
                    "message": "The model `nonexistent-model` does not exist or you do not have access to it.",
                    "type": "invalid_request_error", "param": None, "code": "model_not_found"}})
            scenario = scenario_of(req)
            self.server.log.append((path, scenario, bool(req.get("stream"))))
            if req.get("stream"):
                return self._send_sse(chat_chunks(req, scenario))
            return self._send_json(200, chat_completion(req, scenario))
        if path.endswith("/embeddings"):
            self.server.log.append((path, "embeddings", False))
            return self._send_json(200, embeddings(req))
        self._send_json(404, {"error": {"message": f"mock has no route {self.path}", "type": "invalid_request_error"}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.verbose = args.verbose
    srv.log = []
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
