// Shared tracer-provider setup for the Node capture programs (mirrors otel_setup.py).
// One BatchSpanProcessor with a long schedule delay, so every span of a run goes out in one
// request when the provider is shut down. The endpoint comes from OTLP_CAPTURE_ENDPOINT, the
// headers (the API key) from OTEL_EXPORTER_OTLP_HEADERS as the exporters read it.
//
// encoding: 'json' or 'protobuf' over OTLP/HTTP, or 'grpc' (OTLP over gRPC, @grpc/grpc-js, to
// http://HOST:PORT), imported only when asked for: the capture programs' node_modules do not
// have it, the live exporter test's (scripts/otlp-node.sh) does. gzip: compress the exports.
import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';

const stats = { exported: 0, failed: false };

export async function makeProvider(serviceName, encoding, gzip = false) {
  const url = process.env.OTLP_CAPTURE_ENDPOINT;
  if (!url) throw new Error('OTLP_CAPTURE_ENDPOINT is not set');
  const Exporter =
    encoding === 'grpc'
      ? (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter
      : encoding === 'json'
        ? JsonExporter
        : ProtoExporter;
  const exporter = new Exporter({
    url,
    timeoutMillis: 10000,
    ...(gzip ? { compression: 'gzip' } : {}),
  });
  const exportOriginal = exporter.export.bind(exporter);
  exporter.export = (spans, done) =>
    exportOriginal(spans, (result) => {
      if (result.code === 0) stats.exported += spans.length;
      else {
        stats.failed = true;
        console.error('export failed:', result.error);
      }
      done(result);
    });
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName })),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: 600000,
        maxExportBatchSize: 512,
        maxQueueSize: 2048,
      }),
    ],
  });
  provider.register();
  return provider;
}

export async function shutdown(provider) {
  await provider.forceFlush();
  await provider.shutdown();
  if (stats.failed || stats.exported === 0) {
    throw new Error(`export failed (exported ${stats.exported} spans)`);
  }
  console.log(`exported ${stats.exported} spans`);
}
