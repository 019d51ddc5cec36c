"""Read the spans out of a decoded dump (<capture>.decoded.json), protobuf-JSON or OTLP/JSON.

Each span comes back as a dict: name, kind (CLIENT, INTERNAL, ...), parent (the parent span's
name, "" for a root, "(not in capture)" if the parent was not exported in this request), status
(UNSET, OK, ERROR), attributes as plain Python values (ints as int, arrays as lists), the
number of events, the scope name and the resource's service.name.
"""
import json

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def any_value(v):
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])  # a string in protobuf JSON, a number in the JS SDK's OTLP/JSON
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: any_value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    if "bytesValue" in v:
        return {"bytes": v["bytesValue"]}
    return None


def enum_name(value, table, prefix):
    if isinstance(value, int):
        return table[value]
    if value is None:
        return table[0]
    return value[len(prefix):] if value.startswith(prefix) else value


def attrs(kvs):
    return {kv["key"]: any_value(kv.get("value", {})) for kv in kvs or []}


def load_spans(path):
    with open(path) as f:
        doc = json.load(f)
    spans = []
    for rs in doc.get("resourceSpans", []):
        resource = attrs(rs.get("resource", {}).get("attributes"))
        for ss in rs.get("scopeSpans", []):
            scope = ss.get("scope", {}).get("name", "")
            for sp in ss.get("spans", []):
                spans.append({
                    "index": len(spans),
                    "trace_id": sp.get("traceId", ""),
                    "span_id": sp.get("spanId", ""),
                    "parent_id": sp.get("parentSpanId", ""),
                    "name": sp.get("name", ""),
                    "kind": enum_name(sp.get("kind"), KINDS, "SPAN_KIND_"),
                    "status": enum_name(sp.get("status", {}).get("code"), STATUS, "STATUS_CODE_"),
                    "start": int(sp.get("startTimeUnixNano", 0)),
                    "attributes": attrs(sp.get("attributes")),
                    "events": [e.get("name", "") for e in sp.get("events", [])],
                    "scope": scope,
                    "service": resource.get("service.name", ""),
                })
    by_id = {s["span_id"]: s for s in spans}
    for s in spans:
        if not s["parent_id"]:
            s["parent"] = ""
        elif s["parent_id"] in by_id:
            s["parent"] = by_id[s["parent_id"]]["name"]
        else:
            s["parent"] = "(not in capture)"
    return order(spans, by_id)


def order(spans, by_id):
    """Depth-first, parents before children, siblings and roots by start time, ties broken by
    the order in the request (the order the spans ended), so the order is the same on every run.
    (The JS SDK's start times have millisecond precision, so sequential siblings often tie.)"""
    children = {}
    roots = []
    for s in spans:
        if s["parent_id"] in by_id:
            children.setdefault(s["parent_id"], []).append(s)
        else:
            roots.append(s)
    out = []

    def walk(s, depth):
        s["depth"] = depth
        out.append(s)
        for c in sorted(children.get(s["span_id"], []), key=lambda x: (x["start"], x["index"])):
            walk(c, depth + 1)

    for r in sorted(roots, key=lambda x: (x["start"], x["index"])):
        walk(r, 0)
    return out
