#!/usr/bin/env python3
"""Write a human-readable <capture>.decoded.json beside every capture in a directory.

Protobuf captures (.pb, .pb.gz) are gunzipped if needed, parsed as an
ExportTraceServiceRequest with the opentelemetry-proto classes (the whole body must parse)
and printed with google.protobuf.json_format.MessageToJson. Note that MessageToJson prints
bytes fields (traceId, spanId, parentSpanId) as base64 and 64-bit integers (timestamps, intValue)
as strings, which is the protobuf JSON mapping, not OTLP/JSON (which wants hex ids).

JSON captures (.json, .json.gz) are pretty-printed as sent (ids stay as the client encoded
them), after checking that they are valid OTLP/JSON: hex ids are turned into base64 and the
result must parse as an ExportTraceServiceRequest with json_format.Parse (unknown fields rejected).

Usage: decode.py DIR
"""
import base64
import copy
import gzip
import json
import os
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

CAPTURE_EXTS = (".pb", ".pb.gz", ".json", ".json.gz")


def is_capture(fn):
    return fn.endswith(CAPTURE_EXTS) and not fn.endswith(".decoded.json")


def stem_of(fn):
    for ext in sorted(CAPTURE_EXTS, key=len, reverse=True):
        if fn.endswith(ext):
            return fn[: -len(ext)]
    raise ValueError(fn)


def raw_body(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


def parse_protobuf(body):
    msg = ExportTraceServiceRequest()
    n = msg.ParseFromString(body)
    if n != len(body):
        raise ValueError(f"parsed {n} of {len(body)} bytes")
    return msg


def otlp_json_to_proto(doc):
    """Parse OTLP/JSON (hex ids) into the protobuf message, as a validity check."""
    doc = copy.deepcopy(doc)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64encode(bytes.fromhex(sp[key])).decode()
                for link in sp.get("links", []):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = base64.b64encode(bytes.fromhex(link[key])).decode()
    msg = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(doc), msg, ignore_unknown_fields=False)
    return msg


def decode_file(path):
    body = raw_body(path)
    if ".pb" in os.path.basename(path):
        return json_format.MessageToJson(parse_protobuf(body), indent=2) + "\n"
    doc = json.loads(body)
    otlp_json_to_proto(doc)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main():
    d = sys.argv[1]
    for fn in sorted(os.listdir(d)):
        if not is_capture(fn):
            continue
        out = os.path.join(d, stem_of(fn) + ".decoded.json")
        with open(out, "w") as f:
            f.write(decode_file(os.path.join(d, fn)))
        print(f"decoded {fn} -> {os.path.basename(out)}")


if __name__ == "__main__":
    main()
