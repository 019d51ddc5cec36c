"""Shared tracer-provider setup for the Python capture programs.

One BatchSpanProcessor with a long schedule delay, so that every span of a run is exported in
one request when the provider is shut down (the batch is never sent early on a timer, which
keeps the number of requests the same from run to run). The endpoint comes from
OTLP_CAPTURE_ENDPOINT (the capture listener's http://127.0.0.1:PORT/v1/traces; for the gRPC
exporter, http://HOST:PORT). The gRPC exporter (grpc=True) is imported only when asked for: the
capture venv does not install it.
"""
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult


class _Checked:
    """Remembers whether any export failed, so the program can exit non-zero."""

    failed = False
    exported = 0

    @staticmethod
    def wrap(exporter_class):
        class Checked(exporter_class):
            def export(self, spans):
                result = super().export(spans)
                if result != SpanExportResult.SUCCESS:
                    _Checked.failed = True
                else:
                    _Checked.exported += len(spans)
                return result

        return Checked


def make_provider(service_name, compression=Compression.NoCompression, set_global=True, grpc=False):
    endpoint = os.environ["OTLP_CAPTURE_ENDPOINT"]
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if grpc:
        import grpc as grpc_lib
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        exporter = _Checked.wrap(GrpcSpanExporter)(
            endpoint=endpoint,
            insecure=True,
            compression=grpc_lib.Compression.Gzip
            if compression == Compression.Gzip
            else grpc_lib.Compression.NoCompression,
            timeout=10,
        )
    else:
        exporter = _Checked.wrap(OTLPSpanExporter)(endpoint=endpoint, compression=compression, timeout=10)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=600_000, max_export_batch_size=512, max_queue_size=2048)
    )
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def shutdown(provider):
    """Flush and shut down; raise if any span failed to export."""
    provider.force_flush()
    provider.shutdown()
    if _Checked.failed or _Checked.exported == 0:
        raise SystemExit(f"export failed (exported {_Checked.exported} spans)")
    print(f"exported {_Checked.exported} spans")
