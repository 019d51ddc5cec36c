//! The `/ingest` pipeline: body bytes -> decoded, validated batch -> priced rows -> write buffer.
//!
//! Everything here is synchronous and does no I/O: a worker calls `Pipeline::ingest` with the
//! body buffer its connection owns and gets back either the rows handed over (`Handed`, to
//! await in write-ahead mode) or the refusal to answer with. Admission (rate limit, quota) is
//! `crate::admission`, called between the schema and the write buffer.

pub mod compress;
pub mod decode;
mod fuzz;
pub mod handoff;
pub mod issue;
pub mod otlp;
pub mod rows;
pub mod validate;
pub mod wire;

use bumpalo::Bump;

use crate::admission;
use crate::auth::Principal;
use crate::http::response::{LimitHeaders, Refusal};
use crate::ingest::decode::{DecodeError, Decoder};
use crate::ingest::handoff::{Handed, Handoff};
use crate::ingest::rows::BuildError;
use crate::pricing::Pricer;
use crate::row::{RowBatch, TooLarge};
use crate::server::Shared;

pub use fuzz::fuzz_decode;

/// Per-worker state reused by every request the worker serves.
pub struct Pipeline {
    decoder: Decoder,
    /// Holds the decoded batch of the request being served; reset after each request.
    arena: Bump,
    /// The worker's model-match cache.
    pricer: Pricer,
    /// This worker's end of the hand-off to the flush (or write-ahead) thread; dropping the
    /// last one tells the storage side that intake is over.
    handoff: Handoff,
}

impl Pipeline {
    pub fn new(handoff: Handoff) -> Pipeline {
        Pipeline {
            decoder: Decoder::new(),
            arena: Bump::with_capacity(1 << 20),
            pricer: Pricer::new(),
            handoff,
        }
    }

    /// Checks 4 to 8 of the contract's order (the caller did size, drain and key) and hands
    /// the rows over. The caller answers `202` with the spans `Handed::settle` returns (at
    /// once in `buffer` mode, after the fsync in `wal` mode); `limits` gets the rate-limit and
    /// quota state the answer reports.
    pub fn ingest(
        &mut self,
        shared: &Shared,
        principal: &Principal,
        body: &mut [u8],
        now_ms: u64,
        limits: &mut LimitHeaders,
    ) -> Result<Handed, Refusal> {
        let rows = self.decode_and_build(shared, principal, body, now_ms)?;
        let n = rows.len() as u64;
        // 6 and 7: the key's rate limit, then the organisation's monthly quota.
        let admitted = admission::admit(principal, n, shared.clock.mono_ns(), now_ms, limits)?;
        // 8: reserve room in the write buffer (refuse rather than grow without bound) and hand
        // the rows over; a refusal from here on gives the rate-limit credit and quota back.
        self.handoff.send(shared, principal, rows, admitted)
    }

    /// Decodes, validates and prices a body into rows without handing them over.
    pub fn decode_and_build(
        &mut self,
        shared: &Shared,
        principal: &Principal,
        body: &mut [u8],
        now_ms: u64,
    ) -> Result<RowBatch, Refusal> {
        self.arena.reset();
        let body_len = body.len();
        let batch = match self.decoder.decode(body, &self.arena) {
            Ok(b) => b,
            Err(DecodeError::InvalidJson(msg)) => {
                return Err(Refusal::new(400, "invalid_json", msg));
            }
            Err(DecodeError::Schema(issues)) => return Err(schema_refusal(issues)),
        };
        // One table for the whole batch, even if a reload lands meanwhile.
        let table = shared.prices.current();
        rows::build(
            &batch,
            principal,
            &table,
            &mut self.pricer,
            (now_ms / 1000) as u32,
            batch_limit(shared.config.buffer_max_bytes),
            &self.arena,
        )
        .map_err(|e| match e {
            BuildError::Issues(issues) => schema_refusal(issues),
            BuildError::TooLarge(t) => too_large_refusal(t, body_len),
        })
    }
}

/// The most one batch's rows may take in the write buffer: a quarter of it, so that a batch
/// always fits beside others. Real batches take about 1.6 times their body (strings of a
/// trace are stored with each of its spans), far below this for any body under the body cap;
/// only trace-level strings repeated over thousands of spans come near it.
pub fn batch_limit(buffer_max_bytes: u64) -> u64 {
    buffer_max_bytes / 4
}

#[cold]
fn too_large_refusal(t: TooLarge, body_len: usize) -> Refusal {
    Refusal::new(
        413,
        "batch_too_large",
        format!(
            "the batch's spans would take {} bytes as rows ({body_len} bytes of body), more than \
             the {} bytes one batch may take; send fewer spans per batch, or repeat less \
             trace-level data (trace metadata and names are stored with every span)",
            t.bytes, t.limit
        ),
    )
}

#[cold]
fn schema_refusal(issues: Vec<validate::Issue>) -> Refusal {
    let n = issues.len();
    let mut r = Refusal::new(
        400,
        "validation_failed",
        format!(
            "the batch does not match the v1 schema ({n} issue{})",
            if n == 1 { "" } else { "s" }
        ),
    );
    r.issues = issues;
    r
}
