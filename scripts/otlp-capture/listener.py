#!/usr/bin/env python3
"""Capture listener: a minimal OTLP/HTTP trace receiver that records what clients send.

Listens on 127.0.0.1 at a free port (written to --port-file once bound) and accepts
POST /v1/traces. Each request's body is saved exactly as received (still compressed if it was)
as OUT/NAME-<n>.<ext>, with ext pb or json from the content type plus .gz when
Content-Encoding is gzip, and its content-type, content-encoding and user-agent headers as
OUT/NAME-<n>.headers. It answers 200 with an empty response of the request's content type:
empty bytes for protobuf (a valid empty ExportTraceServiceResponse) and {} for JSON.

On SIGTERM/SIGINT it stops, and if exactly one request arrived it renames NAME-1.* to NAME.*.
Stdlib only.
"""
import argparse
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEPT_HEADERS = ("content-type", "content-encoding", "user-agent")


def ext_for(content_type, content_encoding):
    ct = (content_type or "").split(";")[0].strip().lower()
    ext = {"application/x-protobuf": "pb", "application/protobuf": "pb", "application/json": "json"}.get(ct, "bin")
    enc = (content_encoding or "").strip().lower()
    if enc == "gzip":
        ext += ".gz"
    elif enc and enc != "identity":
        ext += "." + enc
    return ext


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "otlp-capture/1"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _reply(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self._read_body()
        if self.path.split("?", 1)[0] != "/v1/traces":
            sys.stderr.write(f"listener[{self.server.name}]: unexpected POST {self.path}\n")
            return self._reply(404, "text/plain", b"not found\n")
        ct = self.headers.get("Content-Type") or ""
        enc = self.headers.get("Content-Encoding") or ""
        with self.server.lock:
            self.server.count += 1
            n = self.server.count
        stem = os.path.join(self.server.out, f"{self.server.name}-{n}")
        ext = ext_for(ct, enc)
        with open(f"{stem}.{ext}", "wb") as f:
            f.write(body)
        with open(f"{stem}.headers", "w") as f:
            for h in KEPT_HEADERS:
                v = self.headers.get(h)
                if v is not None:
                    f.write(f"{h}: {v}\n")
        self.server.files.append((n, ext))
        sys.stderr.write(f"listener[{self.server.name}]: request {n}: {len(body)} bytes, {ct} {enc}\n")
        if ct.split(";")[0].strip().lower() == "application/json":
            self._reply(200, "application/json", b"{}")
        else:
            self._reply(200, ct.split(";")[0].strip() or "application/x-protobuf", b"")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.name, srv.out, srv.count, srv.files, srv.lock = args.name, args.out, 0, [], threading.Lock()
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
    srv.server_close()
    if len(srv.files) == 1:
        (_, ext), stem = srv.files[0], os.path.join(args.out, args.name)
        os.replace(f"{stem}-1.{ext}", f"{stem}.{ext}")
        os.replace(f"{stem}-1.headers", f"{stem}.headers")
    sys.stderr.write(f"listener[{args.name}]: stopped after {len(srv.files)} request(s)\n")


if __name__ == "__main__":
    main()
