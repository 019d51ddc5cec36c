//! Process-wide counters, updated lock-free on the request path and encoded for `/metrics`.
//!
//! Workers and the flush thread only ever touch plain atomics (a fixed array of answer
//! counters, a fixed-bucket latency histogram). A scrape reads them into a `Snapshot`, which a
//! `prometheus-client` registry encodes as OpenMetrics text: the crate writes the exposition
//! format (names, escaping of label values, `_total`/`_bucket` suffixes, `# EOF`), while its own
//! metric families, which take a lock on every update, stay off the request path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// The content type of the `/metrics` answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Answers counted individually, by status and code; anything else lands in `other`.
const ANSWERS: &[(u16, &str)] = &[
    (200, "ok"),
    (200, "exported"),
    (202, "accepted"),
    (400, "bad_request"),
    (400, "invalid_content_encoding"),
    (400, "invalid_json"),
    (400, "invalid_otlp"),
    (400, "validation_failed"),
    (401, "invalid_api_key"),
    (401, "invalid_authorization_scheme"),
    (401, "missing_api_key"),
    (404, "not_found"),
    (405, "method_not_allowed"),
    (408, "request_timeout"),
    (403, "quota_exceeded"),
    (413, "batch_too_large"),
    (413, "payload_too_large"),
    (414, "uri_too_long"),
    (415, "unsupported_content_encoding"),
    (415, "unsupported_media_type"),
    (417, "expectation_failed"),
    (429, "quota_exceeded"),
    (429, "rate_limited"),
    (431, "headers_too_large"),
    (501, "unsupported_transfer_encoding"),
    (503, "buffer_full"),
    (503, "connection_busy"),
    (503, "draining"),
    (503, "not_ready"),
    (503, "storage_unavailable"),
    (505, "http_version_not_supported"),
];

/// Counters of what the server answered and accepted.
#[derive(Debug, Default)]
pub struct Metrics {
    /// One per `ANSWERS` entry, then `other`.
    answers: [AtomicU64; ANSWERS.len() + 1],
    pub spans_accepted: AtomicU64,
    pub batches_accepted: AtomicU64,
    /// Request body bytes read on `/ingest` and `/v1/traces` (after authentication;
    /// de-chunked, before decompression).
    pub body_bytes: AtomicU64,
    /// Requests that found memory at its bound with the spool not full, and waited for the
    /// flush thread to make room (`server::conn`'s `wait_for_room`).
    pub room_waits: AtomicU64,
    /// Bytes of gRPC export messages being read or decoded, all connections, each at the
    /// length its prefix declares (`server::conn::grpc`'s `Held`).
    pub grpc_message_bytes: AtomicU64,
    /// OTLP exports: spans left out (bad ids, end before start, a cost too large), strings cut
    /// to a v1 limit, attributes left out of metadata.
    pub otlp_rejected_spans: AtomicU64,
    pub otlp_truncated_strings: AtomicU64,
    pub otlp_dropped_attributes: AtomicU64,
    /// The monthly usage counts so far (`add_usage`): counts made, parts whose rows they
    /// read, places they counted whole.
    pub usage_counts: AtomicU64,
    pub usage_parts_read: AtomicU64,
    pub usage_whole_reads: AtomicU64,
}

impl Metrics {
    /// Adds what usage counts read (a `Store`'s `count_stats` since the last time it was
    /// added): the count at start, then the control thread's after each of its counts.
    pub fn add_usage(&self, s: crate::sink::clickhouse::CountStats) {
        self.usage_counts
            .fetch_add(s.counts as u64, Ordering::Relaxed);
        self.usage_parts_read
            .fetch_add(s.parts_counted as u64, Ordering::Relaxed);
        self.usage_whole_reads
            .fetch_add(s.whole as u64, Ordering::Relaxed);
    }

    /// Counts an OTLP export that was answered `200`: its spans as accepted, and what was
    /// left out or cut.
    pub fn count_export(&self, e: &crate::ingest::Exported) {
        self.spans_accepted
            .fetch_add(e.spans as u64, Ordering::Relaxed);
        for (counter, n) in [
            (&self.otlp_rejected_spans, e.rejected),
            (&self.otlp_truncated_strings, e.truncated_strings),
            (&self.otlp_dropped_attributes, e.dropped_attributes),
        ] {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Counts one answer.
    pub fn count_response(&self, status: u16, code: &str) {
        let i = ANSWERS
            .iter()
            .position(|&(s, c)| s == status && c == code)
            .unwrap_or(ANSWERS.len());
        self.answers[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Answers counted so far with this status and code.
    pub fn responses(&self, status: u16, code: &str) -> u64 {
        ANSWERS
            .iter()
            .position(|&(s, c)| s == status && c == code)
            .map_or(0, |i| self.answers[i].load(Ordering::Relaxed))
    }
}

/// Upper bounds, in seconds, of the flush latency histogram's buckets (then `+Inf`).
const LATENCY_BOUNDS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A latency histogram with fixed buckets, updated with two relaxed atomic adds.
#[derive(Debug, Default)]
pub struct Histogram {
    /// Per bucket (not cumulative), the last one `+Inf`.
    counts: [AtomicU64; LATENCY_BOUNDS.len() + 1],
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = LATENCY_BOUNDS
            .iter()
            .position(|&b| s <= b)
            .unwrap_or(LATENCY_BOUNDS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// (sum in seconds, count, per-bucket counts with their upper bounds).
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let buckets: Vec<(f64, u64)> = LATENCY_BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        (sum, count, buckets)
    }
}

/// Everything `/metrics` shows, read from the atomics at scrape time.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// (status, code, count), `other` last.
    answers: Vec<(String, &'static str, u64)>,
    spans_accepted: u64,
    batches_accepted: u64,
    body_bytes: u64,
    room_waits: u64,
    grpc_message_bytes: u64,
    otlp_rejected_spans: u64,
    otlp_truncated_strings: u64,
    otlp_dropped_attributes: u64,
    usage_counts: u64,
    usage_parts_read: u64,
    usage_whole_reads: u64,
    pub flush_batches: u64,
    pub flush_rows: u64,
    pub flush_errors: u64,
    pub flush_retries: u64,
    pub flush_rejected_rows: u64,
    pub lost_rows: u64,
    pub dead_letter_held_rows: u64,
    /// (sum s, count, buckets) of insert durations.
    flush_latency: (f64, u64, Vec<(f64, u64)>),
    /// Rows accepted and not yet written, in memory and in the spool.
    pub buffered_rows: u64,
    pub buffer_max_rows: u64,
    /// Heap bytes of the batches held in memory, and their bound.
    pub buffered_bytes: u64,
    pub buffer_max_bytes: u64,
    /// Memory and spool are both full: batches are refused.
    pub buffer_full: bool,
    pub spool_bytes: u64,
    pub spool_max_bytes: u64,
    pub spool_segments: u64,
    /// Rows waiting only in the spool.
    pub spool_rows: u64,
    pub spool_oldest_age_s: f64,
    pub spooled_rows: u64,
    pub replayed_rows: u64,
    pub spool_bad_records: u64,
    pub wal_batches: u64,
    pub wal_syncs: u64,
    /// The write-ahead log cannot write: batches are refused `503 storage_unavailable`.
    pub wal_failing: bool,
    /// Seconds since the key set was last loaded.
    pub key_set_age_s: f64,
    pub keys: u64,
    /// Key-set loads run early because a request brought a key the set did not know.
    pub key_refreshes_on_demand: u64,
    /// Key-set refreshes that succeeded, periodic and on demand: a new set put in place, or
    /// the tables found unchanged.
    pub key_set_loads: u64,
    /// Of those, the ones that read every key.
    pub key_set_rebuilds: u64,
    /// (organisation, batches refused with `quota_exceeded`), only organisations with refusals.
    pub quota_refusals: Vec<(String, u64)>,
    /// (provider label, accepted spans whose model has no price), every label.
    pub unpriced_spans: Vec<(&'static str, u64)>,
    /// Fleet-wide rate limits configured: (falling back to local buckets, failed rounds, spans
    /// granted by Redis).
    pub fleet: Option<(bool, u64, u64)>,
}

impl Snapshot {
    /// Reads the request counters and the flush latency; the caller fills in the rest.
    pub fn new(metrics: &Metrics, flush_latency: &Histogram) -> Snapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut answers: Vec<(String, &'static str, u64)> = ANSWERS
            .iter()
            .zip(&metrics.answers)
            .map(|(&(status, code), n)| (status.to_string(), code, load(n)))
            .collect();
        answers.push((
            "other".into(),
            "other",
            load(&metrics.answers[ANSWERS.len()]),
        ));
        Snapshot {
            answers,
            spans_accepted: load(&metrics.spans_accepted),
            batches_accepted: load(&metrics.batches_accepted),
            body_bytes: load(&metrics.body_bytes),
            room_waits: load(&metrics.room_waits),
            grpc_message_bytes: load(&metrics.grpc_message_bytes),
            otlp_rejected_spans: load(&metrics.otlp_rejected_spans),
            otlp_truncated_strings: load(&metrics.otlp_truncated_strings),
            otlp_dropped_attributes: load(&metrics.otlp_dropped_attributes),
            usage_counts: load(&metrics.usage_counts),
            usage_parts_read: load(&metrics.usage_parts_read),
            usage_whole_reads: load(&metrics.usage_whole_reads),
            flush_latency: flush_latency.snapshot(),
            ..Snapshot::default()
        }
    }

    /// The OpenMetrics text exposition.
    pub fn encode(self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(v).encode(m)
}

fn gauge<N>(enc: &mut DescriptorEncoder, name: &str, help: &str, v: N) -> std::fmt::Result
where
    ConstGauge<N>: EncodeMetric,
{
    let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(v).encode(m)
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let mut m = enc.encode_descriptor(
            "traceingest_responses",
            "HTTP answers by status and error code (accepted and ok for successes)",
            None,
            MetricType::Counter,
        )?;
        for (status, code, n) in &self.answers {
            let labels = [("status", status.as_str()), ("code", *code)];
            ConstCounter::new(*n).encode(m.encode_family(&labels)?)?;
        }
        counter(
            &mut enc,
            "traceingest_spans_accepted",
            "Spans accepted (answered 202 on /ingest, 200 on /v1/traces)",
            self.spans_accepted,
        )?;
        counter(
            &mut enc,
            "traceingest_batches_accepted",
            "Batches and exports accepted",
            self.batches_accepted,
        )?;
        counter(
            &mut enc,
            "traceingest_request_body_bytes",
            "Request body bytes read on /ingest and /v1/traces after authentication",
            self.body_bytes,
        )?;
        counter(
            &mut enc,
            "traceingest_usage_counts",
            "Monthly usage counts made for organisations with a quota (at start, then every INGEST_QUOTA_SYNC_MS and when asked; a sync counts again, up to 3 times, organisations whose rows were flushed while it counted)",
            self.usage_counts,
        )?;
        counter(
            &mut enc,
            "traceingest_usage_parts_read",
            "Parts of spans whose rows the usage counts read: those written or merged since the count before (a part's count is kept while it exists)",
            self.usage_parts_read,
        )?;
        counter(
            &mut enc,
            "traceingest_usage_whole_reads",
            "Servers or shards whose rows of the month a usage count read whole, because merges kept outrunning its listings of the parts",
            self.usage_whole_reads,
        )?;
        counter(
            &mut enc,
            "traceingest_room_waits",
            "Requests that waited for the flush thread to make room in memory (it was behind)",
            self.room_waits,
        )?;
        gauge(
            &mut enc,
            "traceingest_grpc_message_bytes",
            "Bytes of gRPC export messages being read or decoded, as their length prefixes declare (at most 4 x INGEST_OTLP_MAX_BODY_BYTES per connection)",
            self.grpc_message_bytes,
        )?;
        counter(
            &mut enc,
            "traceingest_otlp_rejected_spans",
            "OTLP spans left out of accepted exports (bad ids, end before start, a cost the cost columns cannot hold)",
            self.otlp_rejected_spans,
        )?;
        counter(
            &mut enc,
            "traceingest_otlp_truncated_strings",
            "Strings of OTLP spans cut to the v1 limits",
            self.otlp_truncated_strings,
        )?;
        counter(
            &mut enc,
            "traceingest_otlp_dropped_attributes",
            "OTLP attributes left out of metadata (past 64 keys, or a key over 128 units)",
            self.otlp_dropped_attributes,
        )?;
        counter(
            &mut enc,
            "traceingest_flush_batches",
            "Successful inserts into ClickHouse",
            self.flush_batches,
        )?;
        counter(
            &mut enc,
            "traceingest_flush_rows",
            "Rows written to ClickHouse",
            self.flush_rows,
        )?;
        counter(
            &mut enc,
            "traceingest_flush_errors",
            "Failed insert attempts (each retry counts)",
            self.flush_errors,
        )?;
        counter(
            &mut enc,
            "traceingest_flush_retries",
            "Backoff waits before the next insert attempt (after a failed insert, or a failed migration before one)",
            self.flush_retries,
        )?;
        counter(
            &mut enc,
            "traceingest_flush_rejected_rows",
            "Rows ClickHouse refused for good, written to the dead-letter file",
            self.flush_rejected_rows,
        )?;
        counter(
            &mut enc,
            "traceingest_lost_rows",
            "Accepted rows that could be kept nowhere (disk failures); each is logged",
            self.lost_rows,
        )?;
        gauge(
            &mut enc,
            "traceingest_dead_letter_held_rows",
            "Refused rows held in memory because the dead-letter file cannot be written",
            self.dead_letter_held_rows,
        )?;
        let (sum, count, buckets) = &self.flush_latency;
        let mut m = enc.encode_descriptor(
            "traceingest_flush_duration_seconds",
            "Duration of successful inserts into ClickHouse",
            None,
            MetricType::Histogram,
        )?;
        m.encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)?;
        gauge(
            &mut enc,
            "traceingest_buffered_rows",
            "Rows accepted and not yet written (memory and spool)",
            self.buffered_rows,
        )?;
        gauge(
            &mut enc,
            "traceingest_buffer_max_rows",
            "Rows the write buffer may hold in memory (INGEST_BUFFER_MAX_ROWS)",
            self.buffer_max_rows,
        )?;
        gauge(
            &mut enc,
            "traceingest_buffered_bytes",
            "Heap bytes of accepted batches held in memory",
            self.buffered_bytes,
        )?;
        gauge(
            &mut enc,
            "traceingest_buffer_max_bytes",
            "Heap bytes the write buffer may hold in memory (INGEST_BUFFER_MAX_BYTES)",
            self.buffer_max_bytes,
        )?;
        gauge(
            &mut enc,
            "traceingest_buffer_full",
            "1 while memory and spool are both full and batches are refused",
            u64::from(self.buffer_full),
        )?;
        gauge(
            &mut enc,
            "traceingest_spool_bytes",
            "Bytes of spool segment files on disk",
            self.spool_bytes,
        )?;
        gauge(
            &mut enc,
            "traceingest_spool_max_bytes",
            "Bytes the spool may hold (INGEST_SPOOL_MAX_BYTES)",
            self.spool_max_bytes,
        )?;
        gauge(
            &mut enc,
            "traceingest_spool_segments",
            "Spool segment files on disk",
            self.spool_segments,
        )?;
        gauge(
            &mut enc,
            "traceingest_spool_rows",
            "Rows waiting only in the spool",
            self.spool_rows,
        )?;
        gauge(
            &mut enc,
            "traceingest_spool_oldest_age_seconds",
            "Age of the oldest spool segment holding unwritten rows (0 when none)",
            self.spool_oldest_age_s,
        )?;
        counter(
            &mut enc,
            "traceingest_spooled_rows",
            "Rows moved from memory to the spool",
            self.spooled_rows,
        )?;
        counter(
            &mut enc,
            "traceingest_replayed_rows",
            "Rows read back from the spool",
            self.replayed_rows,
        )?;
        counter(
            &mut enc,
            "traceingest_spool_bad_records",
            "Spool records that could not be read back (torn or corrupt)",
            self.spool_bad_records,
        )?;
        counter(
            &mut enc,
            "traceingest_wal_batches",
            "Batches made durable by the write-ahead log",
            self.wal_batches,
        )?;
        counter(
            &mut enc,
            "traceingest_wal_syncs",
            "Write-ahead fsyncs (one per group of batches)",
            self.wal_syncs,
        )?;
        gauge(
            &mut enc,
            "traceingest_wal_failing",
            "1 while the write-ahead log cannot write to disk and batches are refused",
            u64::from(self.wal_failing),
        )?;
        gauge(
            &mut enc,
            "traceingest_key_set_age_seconds",
            "Seconds since the API keys were last loaded from ClickHouse",
            self.key_set_age_s,
        )?;
        gauge(
            &mut enc,
            "traceingest_keys",
            "Active API keys in the key set",
            self.keys,
        )?;
        counter(
            &mut enc,
            "traceingest_key_refreshes_on_demand",
            "Key-set loads run early because a request brought an unknown key (at most one per 100 ms)",
            self.key_refreshes_on_demand,
        )?;
        counter(
            &mut enc,
            "traceingest_key_set_loads",
            "Key-set refreshes that succeeded, periodic and on demand (a new set, or the tables found unchanged)",
            self.key_set_loads,
        )?;
        counter(
            &mut enc,
            "traceingest_key_set_rebuilds",
            "Key-set refreshes that read every key (the others read none, or only the key table's parts written or merged since the one before)",
            self.key_set_rebuilds,
        )?;
        if let Some((fallback, errors, granted)) = self.fleet {
            gauge(
                &mut enc,
                "traceingest_rate_limit_fallback",
                "1 while Redis is unreachable and this replica enforces rate limits alone",
                u64::from(fallback),
            )?;
            counter(
                &mut enc,
                "traceingest_rate_limit_redis_errors",
                "Lease rounds that could not reach Redis",
                errors,
            )?;
            counter(
                &mut enc,
                "traceingest_rate_limit_leased_spans",
                "Spans of rate-limit budget leased from Redis",
                granted,
            )?;
        }
        let mut m = enc.encode_descriptor(
            "traceingest_quota_refusals",
            "Batches refused because the organisation's monthly quota is used up",
            None,
            MetricType::Counter,
        )?;
        for (org, n) in &self.quota_refusals {
            ConstCounter::new(*n).encode(m.encode_family(&[("org", org.as_str())])?)?;
        }
        let mut m = enc.encode_descriptor(
            "traceingest_unpriced_spans",
            "Accepted spans whose model has no price (stored with null costs), by provider",
            None,
            MetricType::Counter,
        )?;
        for (provider, n) in &self.unpriced_spans {
            ConstCounter::new(*n).encode(m.encode_family(&[("provider", *provider)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_by_status_and_code() {
        let m = Metrics::default();
        m.count_response(202, "accepted");
        m.count_response(202, "accepted");
        m.count_response(429, "rate_limited");
        m.count_response(418, "teapot");
        assert_eq!(m.responses(202, "accepted"), 2);
        assert_eq!(m.responses(429, "rate_limited"), 1);
        assert_eq!(m.responses(429, "quota_exceeded"), 0);
        let text = Snapshot::new(&m, &Histogram::default()).encode();
        for line in [
            "traceingest_responses_total{status=\"202\",code=\"accepted\"} 2",
            "traceingest_responses_total{status=\"429\",code=\"rate_limited\"} 1",
            "traceingest_responses_total{status=\"other\",code=\"other\"} 1",
            "# TYPE traceingest_spans_accepted counter",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn storage_series_with_help() {
        let mut s = Snapshot::new(&Metrics::default(), &Histogram::default());
        s.flush_retries = 4;
        s.lost_rows = 0;
        s.buffered_rows = 30;
        s.buffered_bytes = 4096;
        s.buffer_max_bytes = 65536;
        s.buffer_full = true;
        s.spool_bytes = 1234;
        s.spool_max_bytes = 65536;
        s.spool_segments = 2;
        s.spool_rows = 20;
        s.spool_oldest_age_s = 1.5;
        s.spooled_rows = 25;
        s.replayed_rows = 5;
        s.spool_bad_records = 1;
        s.wal_batches = 7;
        s.wal_syncs = 3;
        s.wal_failing = true;
        let text = s.encode();
        for (series, kind, value) in [
            ("traceingest_flush_retries", "counter", "4"),
            ("traceingest_lost_rows", "counter", "0"),
            ("traceingest_buffered_rows", "gauge", "30"),
            ("traceingest_buffered_bytes", "gauge", "4096"),
            ("traceingest_buffer_max_bytes", "gauge", "65536"),
            ("traceingest_buffer_full", "gauge", "1"),
            ("traceingest_spool_bytes", "gauge", "1234"),
            ("traceingest_spool_max_bytes", "gauge", "65536"),
            ("traceingest_spool_segments", "gauge", "2"),
            ("traceingest_spool_rows", "gauge", "20"),
            ("traceingest_spool_oldest_age_seconds", "gauge", "1.5"),
            ("traceingest_spooled_rows", "counter", "25"),
            ("traceingest_replayed_rows", "counter", "5"),
            ("traceingest_spool_bad_records", "counter", "1"),
            ("traceingest_wal_batches", "counter", "7"),
            ("traceingest_wal_syncs", "counter", "3"),
            ("traceingest_wal_failing", "gauge", "1"),
        ] {
            let sample = if kind == "counter" {
                format!("{series}_total {value}")
            } else {
                format!("{series} {value}")
            };
            for line in [format!("# TYPE {series} {kind}"), sample] {
                assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
            }
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&format!("# HELP {series} ")) && l.len() > 20),
                "HELP of {series} in\n{text}"
            );
        }
    }

    #[test]
    fn histogram_and_escaped_labels() {
        let h = Histogram::default();
        for ms in [3, 7, 7, 40, 2_000, 60_000] {
            h.observe(Duration::from_millis(ms));
        }
        let mut s = Snapshot::new(&Metrics::default(), &h);
        s.quota_refusals = vec![("a\"b\\c".into(), 3)];
        let text = s.encode();
        for line in [
            "traceingest_flush_duration_seconds_count 6",
            "traceingest_flush_duration_seconds_sum 62.057",
            "traceingest_flush_duration_seconds_bucket{le=\"0.005\"} 1",
            "traceingest_flush_duration_seconds_bucket{le=\"0.01\"} 3",
            "traceingest_flush_duration_seconds_bucket{le=\"0.05\"} 4",
            "traceingest_flush_duration_seconds_bucket{le=\"2.5\"} 5",
            "traceingest_flush_duration_seconds_bucket{le=\"30.0\"} 5",
            "traceingest_flush_duration_seconds_bucket{le=\"+Inf\"} 6",
            "traceingest_quota_refusals_total{org=\"a\\\"b\\\\c\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }

    fn docs() -> String {
        let root = env!("CARGO_MANIFEST_DIR");
        [
            "README.md",
            "ARCHITECTURE.md",
            "docs/fleet.md",
            "docs/otlp.md",
        ]
        .iter()
        .map(|f| std::fs::read_to_string(format!("{root}/{f}")).expect(f))
        .collect()
    }

    /// Every series `/metrics` can show is named in the docs as a scrape shows it (`_total`
    /// on counters), and every `traceingest_*` name the docs give is one of them.
    #[test]
    fn the_docs_name_every_series_and_no_other() {
        let mut s = Snapshot::new(&Metrics::default(), &Histogram::default());
        s.fleet = Some((false, 0, 0));
        s.quota_refusals = vec![("org".into(), 1)];
        s.unpriced_spans = vec![("openai", 1)];
        let text = s.encode();
        let series: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| match l.split_once(' ') {
                Some((name, "counter")) => format!("{name}_total"),
                Some((name, _)) => name.to_string(),
                None => panic!("{l}"),
            })
            .collect();
        assert!(series.len() > 40, "{text}");
        let docs = docs();
        for name in &series {
            assert!(
                docs.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| w == name),
                "{name} is not in README.md or docs/"
            );
        }
        for word in docs.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("traceingest_") {
                assert!(
                    series.iter().any(|s| s == word),
                    "the docs name {word}, which /metrics never shows"
                );
            }
        }
    }

    /// Every error code an answer can carry (each is counted by its status and code) is in
    /// README, as a `code`.
    #[test]
    fn readme_names_every_error_code() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        for (status, code) in ANSWERS {
            if !matches!(*code, "ok" | "accepted" | "exported") {
                assert!(
                    readme.contains(&format!("`{code}`")),
                    "{status} {code} is not in README"
                );
            }
        }
    }
}
