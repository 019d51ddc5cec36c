//! Process-wide counters, updated lock-free by workers and rendered as Prometheus text.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Statuses counted individually; anything else lands in `other`.
const STATUSES: [u16; 15] = [
    200, 202, 400, 401, 404, 405, 408, 413, 417, 429, 431, 500, 501, 503, 505,
];

/// Counters of what the server answered and accepted.
#[derive(Default)]
pub struct Metrics {
    responses: [AtomicU64; STATUSES.len() + 1],
    pub spans_accepted: AtomicU64,
    pub batches_accepted: AtomicU64,
    pub body_bytes: AtomicU64,
}

impl Metrics {
    pub fn count_response(&self, status: u16) {
        let i = STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(STATUSES.len());
        self.responses[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn responses(&self, status: u16) -> u64 {
        STATUSES
            .iter()
            .position(|&s| s == status)
            .map_or(0, |i| self.responses[i].load(Ordering::Relaxed))
    }

    /// Appends the counters in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP traceingest_responses_total HTTP answers by status."
        );
        let _ = writeln!(out, "# TYPE traceingest_responses_total counter");
        for (i, s) in STATUSES.iter().enumerate() {
            let n = self.responses[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "traceingest_responses_total{{status=\"{s}\"}} {n}");
        }
        let other = self.responses[STATUSES.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "traceingest_responses_total{{status=\"other\"}} {other}"
        );
        for (name, help, v) in [
            (
                "traceingest_spans_accepted_total",
                "Spans answered with 202.",
                &self.spans_accepted,
            ),
            (
                "traceingest_batches_accepted_total",
                "Batches answered with 202.",
                &self.batches_accepted,
            ),
            (
                "traceingest_request_body_bytes_total",
                "Request body bytes read on /ingest.",
                &self.body_bytes,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
        }
    }
}
