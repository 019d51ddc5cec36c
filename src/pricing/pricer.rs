//! The per-worker pricer: a match cache in front of the table, so pricing a span whose
//! (provider, modelId) was seen before costs one hash lookup and allocates nothing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::costs::CostColumns;
use crate::ingest::wire::{Span, Usage};

use super::money::PriceError;
use super::table::{ModelPrice, PriceTable};
use super::unpriced::{self, UnpricedTally};

/// Most cached pairs; past it the cache starts over, so a client inventing model ids cannot
/// grow a worker's memory.
const CACHE_CAPACITY: usize = 4096;

/// One priced span: what the row needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priced<'t> {
    pub costs: CostColumns,
    /// The table id that priced it, borrowed from the table.
    pub model_id: &'t str,
    /// `"builtin"` or `"file"`.
    pub source: &'static str,
}

/// Cache counters, for tests and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Pairs held now.
    pub entries: usize,
}

/// Prices spans against a [`PriceTable`], remembering which model each (provider, modelId)
/// matched. One per worker thread: it is `&mut`, never shared, never locked.
#[derive(Debug, Default)]
pub struct Pricer {
    /// Generation of the table the cache was filled from; another table empties it.
    generation: u64,
    /// Keyed by a hash of the two strings, which the entry keeps to confirm a hit.
    cache: HashMap<u64, CacheEntry, BuildHasherDefault<KeyIsHash>>,
    stats: CacheStats,
    /// Spans whose model has no price, and pairs first seen without one, since last taken.
    unpriced: UnpricedTally,
}

/// A remembered match.
#[derive(Debug)]
struct CacheEntry {
    provider: Option<Box<str>>,
    model_id: Box<str>,
    /// Index into the table's models; `None` = unknown model (also worth remembering).
    model: Option<u32>,
    /// For an unknown model: its `unpriced::PROVIDER_LABELS` index (worked out once, here).
    unpriced_label: u8,
}

impl Pricer {
    /// An empty pricer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Prices one model call that started at `start_ms` (epoch milliseconds, UTC), with the
    /// prices in force then. `Ok(None)`: no model id, or a model the table does not know (all
    /// costs null). `Ok(Some)`: total is always `Some`. `Err(Overflow)`: a cost does not fit
    /// `Decimal(18, 10)`. No I/O; no allocation once the pair is cached.
    #[inline]
    pub fn price<'t>(
        &mut self,
        table: &'t PriceTable,
        provider: Option<&str>,
        model_id: Option<&str>,
        usage: Option<&Usage>,
        start_ms: u64,
    ) -> Result<Option<Priced<'t>>, PriceError> {
        let Some(model_id) = model_id else {
            return Ok(None);
        };
        let Some(model) = self.lookup(table, provider, model_id) else {
            return Ok(None);
        };
        let mut priced = Priced {
            costs: CostColumns::default(),
            model_id: &model.id,
            source: model.source.as_str(),
        };
        model.costs_into(usage, start_ms, &mut priced.costs)?;
        Ok(Some(priced))
    }

    /// Prices a span at its `startTime`: only `llm` and `embedding` spans are priced, others
    /// give `Ok(None)`.
    #[inline]
    pub fn price_span<'t>(
        &mut self,
        table: &'t PriceTable,
        span: &Span<'_>,
    ) -> Result<Option<Priced<'t>>, PriceError> {
        if !span.span_type.is_priced() {
            return Ok(None);
        }
        self.price(
            table,
            span.provider,
            span.model_id,
            span.usage.as_ref(),
            span.start_time,
        )
    }

    /// The model (provider, modelId) matches in `table`, through the cache. A pair that matches
    /// none is counted in the `unpriced` tally (and, on a cache miss, remembered as new).
    #[inline]
    pub fn lookup<'t>(
        &mut self,
        table: &'t PriceTable,
        provider: Option<&str>,
        model_id: &str,
    ) -> Option<&'t ModelPrice> {
        if self.generation != table.generation() {
            self.cache.clear();
            self.generation = table.generation();
        }
        let key = key_hash(provider, model_id);
        if let Some(e) = self.cache.get(&key) {
            if &*e.model_id == model_id && e.provider.as_deref() == provider {
                self.stats.hits += 1;
                if e.model.is_none() {
                    self.unpriced.count(e.unpriced_label);
                }
                return e.model.map(|i| table.model(i));
            }
        }
        self.stats.misses += 1;
        let found = table.resolve(provider, model_id);
        let mut unpriced_label = unpriced::NOT_COUNTED;
        if found.is_none() {
            unpriced_label = unpriced::label_of(provider, model_id);
            if unpriced_label != unpriced::NOT_COUNTED {
                self.unpriced.count(unpriced_label);
                self.unpriced.first_seen(provider, model_id);
            }
        }
        if self.cache.len() >= CACHE_CAPACITY && !self.cache.contains_key(&key) {
            self.cache.clear();
        }
        // A different pair with the same hash is simply replaced.
        self.cache.insert(
            key,
            CacheEntry {
                provider: provider.map(Into::into),
                model_id: model_id.into(),
                model: found,
                unpriced_label,
            },
        );
        found.map(|i| table.model(i))
    }

    /// Spans priced since the tally was last cleared whose model had no price (counted in
    /// `lookup`), for the owner to publish and then clear.
    pub fn unpriced(&mut self) -> &mut UnpricedTally {
        &mut self.unpriced
    }

    /// Hits, misses and size of the match cache.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            entries: self.cache.len(),
            ..self.stats
        }
    }
}

/// Hashes (provider, modelId) without building a key string: 16 bytes per folded 64x64->128
/// multiply (the wyhash/foldhash step), lengths mixed in so ("ab", "c") and ("a", "bc") differ.
#[inline]
fn key_hash(provider: Option<&str>, model_id: &str) -> u64 {
    let h = match provider {
        Some(p) => mix_bytes(SEED[0], p.as_bytes()),
        None => SEED[1],
    };
    mix_bytes(h, model_id.as_bytes())
}

/// Arbitrary odd constants (digits of pi), one per role.
const SEED: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The high and low halves of a full product, xored: every input bit reaches many output bits.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    (p as u64) ^ ((p >> 64) as u64)
}

/// Mixes `bytes` (and their length) into `h`, 16 bytes per multiply. Short tails are read as
/// overlapping whole words (as wyhash does), never copied byte by byte.
#[inline]
fn mix_bytes(mut h: u64, bytes: &[u8]) -> u64 {
    let len = bytes.len();
    let (a, b) = if len <= 16 {
        if len >= 8 {
            (read8(bytes, 0), read8(bytes, len - 8))
        } else if len >= 4 {
            (read4(bytes, 0), read4(bytes, len - 4))
        } else if len > 0 {
            let spread = (bytes[0] as u64) << 16 | (bytes[len / 2] as u64) << 8;
            (spread | bytes[len - 1] as u64, 0)
        } else {
            (0, 0)
        }
    } else {
        let mut i = 0;
        while i + 16 < len {
            h = fold(read8(bytes, i) ^ SEED[2], read8(bytes, i + 8) ^ h);
            i += 16;
        }
        (read8(bytes, len - 16), read8(bytes, len - 8))
    };
    h = fold(a ^ SEED[2], b ^ h ^ SEED[3]);
    fold(h ^ len as u64, SEED[3])
}

/// The little-endian u64 at `at` (callers keep `at + 8 <= b.len()`).
#[inline(always)]
fn read8(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The little-endian u32 at `at`, widened (callers keep `at + 4 <= b.len()`).
#[inline(always)]
fn read4(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w) as u64
}

/// The cache's keys are already hashes: pass them through.
#[derive(Debug, Default, Clone, Copy)]
struct KeyIsHash(u64);

impl Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; any mixing will do.
        self.0 = mix_bytes(self.0, bytes);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::SharedPrices;

    #[test]
    fn repeated_lookups_hit_and_a_table_swap_invalidates() {
        let shared = SharedPrices::builtin();
        let mut p = Pricer::new();
        let t = shared.current();
        let usage = Usage {
            input_tokens: Some(1000),
            ..Usage::default()
        };
        for _ in 0..3 {
            let r = p
                .price(&t, Some("azure"), Some("gpt-4o"), Some(&usage), 0)
                .unwrap();
            assert_eq!(r.unwrap().model_id, "openai/gpt-4o");
            assert_eq!(p.price(&t, Some("azure"), Some("nope"), None, 0), Ok(None));
        }
        assert_eq!(
            p.cache_stats(),
            CacheStats {
                hits: 4,
                misses: 2,
                entries: 2
            }
        );
        // Same strings under another provider are another pair.
        p.price(&t, Some("openai"), Some("gpt-4o"), None, 0)
            .unwrap();
        assert_eq!(p.cache_stats().misses, 3);

        // A new table (even with the same content) empties the cache on first use.
        shared.replace(PriceTable::builtin());
        let t2 = shared.current();
        assert_ne!(t.generation(), t2.generation());
        p.price(&t2, Some("azure"), Some("gpt-4o"), None, 0)
            .unwrap();
        assert_eq!(p.cache_stats().misses, 4);
        assert_eq!(p.cache_stats().entries, 1);
        p.price(&t2, Some("azure"), Some("gpt-4o"), None, 0)
            .unwrap();
        assert_eq!(p.cache_stats().hits, 5);
    }

    #[test]
    fn unknown_models_are_tallied_by_provider_and_new_pairs_noted_once() {
        use crate::pricing::unpriced::PROVIDER_LABELS;
        let t = PriceTable::builtin();
        let mut p = Pricer::new();
        for _ in 0..3 {
            assert_eq!(
                p.price(&t, Some("openai.chat"), Some("gpt-x9"), None, 0),
                Ok(None)
            );
        }
        assert_eq!(p.price(&t, Some("acme"), Some("acme-1"), None, 0), Ok(None));
        assert!(p
            .price(&t, Some("openai"), Some("gpt-4o"), None, 0)
            .unwrap()
            .is_some());
        assert_eq!(p.price(&t, Some("openai"), Some(""), None, 0), Ok(None));
        let at = |label: &str| PROVIDER_LABELS.iter().position(|&l| l == label).unwrap();
        let tally = p.unpriced();
        assert_eq!(tally.spans[at("openai")], 3);
        assert_eq!(tally.spans[at("other")], 1);
        assert_eq!(
            tally.spans.iter().sum::<u32>(),
            4,
            "priced and blank ids are not counted"
        );
        let pairs: Vec<_> = tally
            .new_pairs
            .iter()
            .map(|(p, m)| (p.as_deref(), &**m))
            .collect();
        assert_eq!(
            pairs,
            [(Some("openai.chat"), "gpt-x9"), (Some("acme"), "acme-1")]
        );
        tally.clear();
        p.price(&t, Some("acme"), Some("acme-1"), None, 0).unwrap();
        assert_eq!(p.unpriced().spans[at("other")], 1);
        assert!(p.unpriced().new_pairs.is_empty(), "a cache hit is not new");
    }

    #[test]
    fn none_and_empty_model_ids_are_unpriced() {
        let t = PriceTable::builtin();
        let mut p = Pricer::new();
        assert_eq!(p.price(&t, Some("openai"), None, None, 0), Ok(None));
        assert_eq!(p.price(&t, Some("openai"), Some(""), None, 0), Ok(None));
    }

    #[test]
    fn the_cache_stays_bounded() {
        let t = PriceTable::builtin();
        let mut p = Pricer::new();
        for i in 0..(CACHE_CAPACITY + 10) {
            p.lookup(&t, None, &format!("model-{i}"));
        }
        assert!(p.cache_stats().entries <= CACHE_CAPACITY);
    }

    #[test]
    fn hash_separates_provider_and_model() {
        assert_ne!(key_hash(Some("ab"), "c"), key_hash(Some("a"), "bc"));
        assert_ne!(key_hash(None, "gpt-4o"), key_hash(Some(""), "gpt-4o"));
        assert_eq!(
            key_hash(Some("azure"), "gpt-4o"),
            key_hash(Some("azure"), "gpt-4o")
        );
    }
}
