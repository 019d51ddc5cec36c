//! Spans accepted without a price, process-wide: counted by provider for `/metrics`
//! (`traceingest_unpriced_spans_total{provider}`), and each (provider, model) pair logged once,
//! so operators see which prices they are missing.
//!
//! Workers publish their pricer's tally after each accepted batch: one relaxed atomic add per
//! provider that had unpriced spans. A pair a worker's pricer met for the first time is looked
//! up in a fixed, lock-free set of hashes shared by all workers; only the worker that inserts
//! it logs it, so each pair is logged once per process however many workers (or cache resets)
//! meet it. The set remembers `MAX_LOGGED` pairs; past them one line says that more are not
//! logged, and the counters go on.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::pricing::{UnpricedTally, PROVIDER_LABELS};

/// Pairs logged at most per process.
pub const MAX_LOGGED: usize = 1000;
/// Slots of the set of logged pairs: twice `MAX_LOGGED` (rounded to a power of two), so probes
/// stay short.
const SLOTS: usize = 2048;
/// Characters of a provider or model id written to the log at most.
const LOG_CHARS: usize = 128;

/// The process-wide record of unpriced spans.
pub struct UnpricedModels {
    /// Unpriced spans accepted, per `PROVIDER_LABELS` entry.
    spans: [AtomicU64; PROVIDER_LABELS.len()],
    /// Hashes of the pairs logged (0 = empty slot); open addressing, linear probing.
    logged: Box<[AtomicU64]>,
    /// Pairs logged so far.
    count: AtomicUsize,
    /// The line saying that no more pairs are logged was written.
    full: AtomicBool,
}

impl Default for UnpricedModels {
    fn default() -> UnpricedModels {
        UnpricedModels {
            spans: Default::default(),
            logged: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicUsize::new(0),
            full: AtomicBool::new(false),
        }
    }
}

impl UnpricedModels {
    /// Adds a pricer's tally of an accepted batch, logs the pairs no worker logged before, and
    /// clears the tally. No lock; allocates nothing unless it logs.
    pub fn publish(&self, tally: &mut UnpricedTally) {
        if tally.is_empty() {
            return;
        }
        for (total, &n) in self.spans.iter().zip(&tally.spans) {
            if n > 0 {
                total.fetch_add(u64::from(n), Ordering::Relaxed);
            }
        }
        for (provider, model) in &tally.new_pairs {
            let provider = provider.as_deref();
            if self.first_time(provider, model) {
                tracing::warn!(
                    provider = clip(provider.unwrap_or("")),
                    model = clip(model),
                    "no price for this model: its spans are stored with null costs; add it to \
                     the pricing file (INGEST_PRICING_FILE) to price them"
                );
            }
        }
        tally.clear();
    }

    /// (label, unpriced spans) for every label, in `PROVIDER_LABELS` order.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        PROVIDER_LABELS
            .iter()
            .zip(&self.spans)
            .map(|(&label, n)| (label, n.load(Ordering::Relaxed)))
            .collect()
    }

    /// Whether this call is the first to see the pair (and it may be logged).
    fn first_time(&self, provider: Option<&str>, model: &str) -> bool {
        if self.count.load(Ordering::Relaxed) >= MAX_LOGGED {
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "{MAX_LOGGED} models without a price logged; further ones are only counted \
                     (traceingest_unpriced_spans_total)"
                );
            }
            return false;
        }
        // 0 marks an empty slot: no pair hashes to it.
        let hash = pair_hash(provider, model) | 1;
        let mut slot = (hash as usize) & (SLOTS - 1);
        for _ in 0..SLOTS {
            match self.logged[slot].compare_exchange(0, hash, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.count.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                Err(seen) if seen == hash => return false,
                Err(_) => slot = (slot + 1) & (SLOTS - 1),
            }
        }
        false
    }
}

/// A 64-bit hash of (provider, model) with fixed keys, the same in every thread. Two pairs
/// with the same hash are logged once between them, a price worth paying for a lock-free set.
fn pair_hash(provider: Option<&str>, model: &str) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one((provider, model))
}

/// At most `LOG_CHARS` characters of a client's string, for the log.
fn clip(s: &str) -> &str {
    match s.char_indices().nth(LOG_CHARS) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(pairs: &[(Option<&str>, &str)], openai_spans: u32) -> UnpricedTally {
        let mut t = UnpricedTally::default();
        t.spans[0] = openai_spans;
        for (p, m) in pairs {
            t.new_pairs.push((p.map(Into::into), (*m).into()));
        }
        t
    }

    #[test]
    fn each_pair_is_new_once_and_counts_add_up() {
        let u = UnpricedModels::default();
        assert!(u.first_time(Some("openai"), "gpt-x"));
        assert!(!u.first_time(Some("openai"), "gpt-x"));
        assert!(u.first_time(None, "gpt-x"));
        assert!(u.first_time(Some("openai"), "gpt-y"));
        let mut t = tally(&[(Some("openai"), "gpt-x")], 3);
        u.publish(&mut t);
        assert!(t.is_empty(), "publishing clears the tally");
        u.publish(&mut tally(&[], 2));
        assert_eq!(u.counts()[0], ("openai", 5));
        assert_eq!(u.counts().len(), PROVIDER_LABELS.len());
    }

    #[test]
    fn the_set_of_logged_pairs_is_bounded() {
        let u = UnpricedModels::default();
        let new = (0..MAX_LOGGED + 50)
            .filter(|i| u.first_time(Some("acme"), &format!("model-{i}")))
            .count();
        assert_eq!(new, MAX_LOGGED);
        assert!(u.full.load(Ordering::Relaxed));
        assert!(!u.first_time(Some("acme"), "model-0"));
    }

    #[test]
    fn clipped_on_a_character_boundary() {
        let long = "é".repeat(200);
        assert_eq!(clip(&long).chars().count(), LOG_CHARS);
        assert_eq!(clip("short"), "short");
    }
}
