//! API keys: their format, their SHA-256 hash, and the in-memory key set workers check against.
//!
//! A key is `prefix + 43 base62 characters` (256 bits of randomness). Only `sha256(key)` is
//! stored. Workers authenticate with a hash and one lock-free lookup in the current `KeySet`,
//! which the control thread replaces wholesale every refresh (`arc_swap`), so a request never
//! waits on I/O or a lock, and a revocation reaches every worker within one refresh period. A
//! well-formed key the set does not know may be new: `refresh.rs` lets the worker ask for an
//! early refresh and wait for it, bounded and coalesced.

pub mod refresh;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};

use crate::admission::rate::Bucket;
use crate::admission::Account;
use refresh::RefreshDemand;

/// Random characters after the prefix: 43 base62 digits carry 256 bits.
pub const KEY_RANDOM_LEN: usize = 43;
/// Characters of a key kept for display (`keys list`, `keys revoke PREFIX`).
pub const DISPLAY_PREFIX_LEN: usize = 12;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `sha256(key)`.
pub type KeyHash = [u8; 32];

/// Who a key belongs to, and the admission state its requests are checked against.
#[derive(Debug)]
pub struct Principal {
    pub org_id: Arc<str>,
    /// Empty when the key is not tied to a project.
    pub project_id: Arc<str>,
    /// This key's rate-limit bucket. The refresher hands the same bucket to the key's entry in
    /// every new key set, so a refresh never refills it.
    pub bucket: Arc<Bucket>,
    /// The organisation's plan and monthly usage, shared by all its keys and kept across
    /// refreshes.
    pub account: Arc<Account>,
}

impl Principal {
    /// A principal with a fresh bucket.
    pub fn new(org_id: Arc<str>, project_id: Arc<str>, account: Arc<Account>) -> Principal {
        Principal {
            org_id,
            project_id,
            bucket: Arc::default(),
            account,
        }
    }
}

impl Principal {
    /// A principal on an unlimited plan without a rate limit, for benches, tests and fuzz
    /// targets that run the pipeline without a server.
    pub fn unlimited(org_id: &str, project_id: &str) -> Principal {
        let plan = crate::admission::plan::Plan {
            name: "unlimited".into(),
            monthly_spans: None,
            rate: None,
        };
        let account = Arc::new(crate::admission::Account::new(org_id.into(), &plan));
        Principal::new(org_id.into(), project_id.into(), account)
    }
}

impl PartialEq for Principal {
    /// Same owner and the very same admission state.
    fn eq(&self, other: &Principal) -> bool {
        self.org_id == other.org_id
            && self.project_id == other.project_id
            && Arc::ptr_eq(&self.bucket, &other.bucket)
            && Arc::ptr_eq(&self.account, &other.account)
    }
}

impl Eq for Principal {}

/// Makes a new random key with the given prefix.
pub fn generate_key(prefix: &str) -> Result<String, getrandom::Error> {
    let mut key = String::with_capacity(prefix.len() + KEY_RANDOM_LEN);
    key.push_str(prefix);
    let mut pool = [0u8; 64];
    let mut used = pool.len();
    while key.len() < prefix.len() + KEY_RANDOM_LEN {
        if used == pool.len() {
            getrandom::fill(&mut pool)?;
            used = 0;
        }
        let b = pool[used];
        used += 1;
        // Rejection sampling keeps every character equally likely: 248 = 4 * 62.
        if b < 248 {
            key.push(BASE62[(b % 62) as usize] as char);
        }
    }
    Ok(key)
}

/// The hash stored for a key.
pub fn hash_key(key: &[u8]) -> KeyHash {
    Sha256::digest(key).into()
}

/// Lower-case hex of a hash, as stored in ClickHouse.
pub fn hex(hash: &KeyHash) -> String {
    crate::hex::encode(hash)
}

/// Parses 64 hex digits (either case).
pub fn parse_hex(s: &str) -> Option<KeyHash> {
    crate::hex::decode_array(s.as_bytes())
}

/// Whether `key` has the shape of one of our keys; anything else is refused without a lookup.
pub fn well_formed(key: &[u8], prefix: &str) -> bool {
    key.len() == prefix.len() + KEY_RANDOM_LEN
        && key.starts_with(prefix.as_bytes())
        && key[prefix.len()..].iter().all(u8::is_ascii_alphanumeric)
}

/// Extracts the key from the `Authorization` value (`Bearer <key>`, scheme case-insensitive)
/// or else from `x-api-key`. `Authorization` wins when both are present: an empty one or an
/// empty bearer credential is `Missing`, any other scheme (or a bare key) is `NotBearer`.
pub fn key_from_headers<'a>(
    authorization: Option<&'a [u8]>,
    x_api_key: Option<&'a [u8]>,
) -> Result<&'a [u8], AuthError> {
    if let Some(v) = authorization {
        let v = trim(v);
        if v.len() >= 6 && v[..6].eq_ignore_ascii_case(b"bearer") {
            if v.len() == 6 {
                return Err(AuthError::Missing);
            }
            if v[6] == b' ' || v[6] == b'\t' {
                let key = trim(&v[7..]);
                return if key.is_empty() {
                    Err(AuthError::Missing)
                } else {
                    Ok(key)
                };
            }
        }
        return if v.is_empty() {
            Err(AuthError::Missing)
        } else {
            Err(AuthError::NotBearer)
        };
    }
    x_api_key
        .map(trim)
        .filter(|k| !k.is_empty())
        .ok_or(AuthError::Missing)
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end]
}

/// The first 8 bytes of a SHA-256 digest are already a uniform hash.
#[derive(Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for (i, b) in bytes.iter().take(8).enumerate() {
            self.0 |= u64::from(*b) << (i * 8);
        }
    }
    /// A `[u8; 32]` writes its length before its bytes: the same for every key, so left out
    /// (mixed in, it set bit 5 of every hash).
    fn write_usize(&mut self, _: usize) {}
}

/// Active keys by hash. Principals are shared so that a request takes one reference count.
pub type KeySet = HashMap<KeyHash, Arc<Principal>, BuildHasherDefault<DigestHasher>>;

/// The current key set, shared by all workers and replaced by the refresher.
pub struct KeyStore {
    current: ArcSwap<KeySet>,
    /// Bumped after each `replace`: a request that looked its key up at its head looks it up
    /// again once its body is in only when the set changed in between (one SHA-256 saved on
    /// nearly every request).
    generation: AtomicU64,
    /// Unix milliseconds of the last successful refresh (for `/metrics` and `/ready`).
    refreshed_at_ms: AtomicU64,
    /// Successful refreshes so far, whether they rebuilt the set or found the tables
    /// unchanged (for `/metrics`).
    loads: AtomicU64,
    /// Refreshes that read every key (for `/metrics`); the others read none, or only the
    /// keys written since the refresh before.
    rebuilds: AtomicU64,
    prefix: String,
    /// Workers' requests for an early refresh (an unknown key may be a new one).
    pub demand: RefreshDemand,
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError {
    /// No key sent.
    Missing,
    /// An `Authorization` header that is not `Bearer <key>` (a bare key, `Basic ...`).
    NotBearer,
    /// A key of the wrong shape.
    Invalid,
    /// A well-formed key the key set does not hold: unknown, revoked, or created since the
    /// last refresh. Answered like `Invalid`, after one early refresh (`refresh.rs`).
    Unknown,
}

impl KeyStore {
    pub fn new(prefix: &str) -> KeyStore {
        KeyStore {
            current: ArcSwap::from_pointee(KeySet::default()),
            generation: AtomicU64::new(0),
            refreshed_at_ms: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            rebuilds: AtomicU64::new(0),
            prefix: prefix.to_string(),
            demand: RefreshDemand::default(),
        }
    }

    /// Replaces the key set (called by the refresher), built from every key (`read_all`) or
    /// from the set in force and the keys written since.
    pub fn replace(&self, keys: KeySet, now_ms: u64, read_all: bool) {
        self.current.store(Arc::new(keys));
        self.generation.fetch_add(1, Ordering::Release);
        if read_all {
            self.rebuilds.fetch_add(1, Ordering::Relaxed);
        }
        self.confirm(now_ms);
    }

    /// The refresher found the tables as the set in force was built from: the set is as fresh
    /// as a new load would make it.
    pub fn confirm(&self, now_ms: u64) {
        self.refreshed_at_ms.store(now_ms, Ordering::Relaxed);
        self.loads.fetch_add(1, Ordering::Relaxed);
    }

    /// Successful refreshes so far (`replace` and `confirm` calls): a refresh counted here
    /// began after the one before it ended.
    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// Refreshes that read every key.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds.load(Ordering::Relaxed)
    }

    /// The key set in force (the refresher carries each key's bucket over from it).
    pub fn current(&self) -> Arc<KeySet> {
        self.current.load_full()
    }

    /// How many times the set was replaced. Read before a lookup: unchanged after it, no set
    /// replaced since has finished, so the set the lookup read is still in force (but for a
    /// replacement under way at that very moment).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn refreshed_at_ms(&self) -> u64 {
        self.refreshed_at_ms.load(Ordering::Relaxed)
    }

    pub fn len(&self) -> usize {
        self.current.load().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Authenticates a request from its two possible key headers. No I/O, no lock.
    pub fn authenticate(
        &self,
        authorization: Option<&[u8]>,
        x_api_key: Option<&[u8]>,
    ) -> Result<Arc<Principal>, AuthError> {
        let key = key_from_headers(authorization, x_api_key)?;
        if !well_formed(key, &self.prefix) {
            return Err(AuthError::Invalid);
        }
        let hash = hash_key(key);
        self.current
            .load()
            .get(&hash)
            .cloned()
            .ok_or(AuthError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = generate_key("ti_").unwrap();
        let b = generate_key("ti_").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 46);
        assert!(well_formed(a.as_bytes(), "ti_"));
        assert!(!well_formed(a.as_bytes(), "tk_"));
        assert!(!well_formed(&a.as_bytes()[..45], "ti_"));
        let mut bad = a.clone().into_bytes();
        bad[10] = b'-';
        assert!(!well_formed(&bad, "ti_"));
    }

    #[test]
    fn header_precedence() {
        use AuthError::{Missing, NotBearer};
        type Case = (
            Option<&'static str>,
            Option<&'static str>,
            Result<&'static str, AuthError>,
        );
        let cases: &[Case] = &[
            (Some("Bearer abc"), None, Ok("abc")),
            (Some("  bearer   abc  "), None, Ok("abc")),
            (Some("BEARER\tabc"), Some("xyz"), Ok("abc")),
            (None, Some(" xyz "), Ok("xyz")),
            (Some("Basic abc"), Some("xyz"), Err(NotBearer)),
            (Some("ti_abc"), None, Err(NotBearer)),
            (Some("Bearerabc"), None, Err(NotBearer)),
            (Some("Bearer "), None, Err(Missing)),
            (Some("bearer"), Some("xyz"), Err(Missing)),
            (Some("  "), Some("xyz"), Err(Missing)),
            (None, Some(""), Err(Missing)),
            (None, None, Err(Missing)),
        ];
        for (auth, x, want) in cases {
            let got = key_from_headers(auth.map(str::as_bytes), x.map(str::as_bytes));
            assert_eq!(got, want.map(str::as_bytes), "auth={auth:?} x={x:?}");
        }
    }

    /// Found in review: a `[u8; 32]` hashes its length first (8 bytes of `32usize`), and the
    /// hasher OR-ed that into the digest's bytes, so bit 5 of every key's hash was set: half the
    /// table's home buckets went unused. The hash is the digest's first 8 bytes, nothing more.
    #[test]
    fn a_key_set_hashes_by_the_digest_alone() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<DigestHasher>::default();
        assert_eq!(build.hash_one([0u8; 32]), 0);
        let mut hash = [0xffu8; 32];
        hash[..8].copy_from_slice(&0x0123_4567_89ab_cd00u64.to_le_bytes());
        assert_eq!(build.hash_one(hash), 0x0123_4567_89ab_cd00);
    }

    #[test]
    fn lookup() {
        let store = KeyStore::new("ti_");
        let key = generate_key("ti_").unwrap();
        let mut set = KeySet::default();
        let plans = crate::admission::plan::Plans::resolve(None, "self-hosted", None).unwrap();
        let account = Arc::new(Account::new("org1".into(), plans.default_plan()));
        set.insert(
            hash_key(key.as_bytes()),
            Arc::new(Principal::new("org1".into(), "".into(), account)),
        );
        assert_eq!(
            store.authenticate(None, Some(key.as_bytes())),
            Err(AuthError::Unknown)
        );
        assert_eq!(
            store.authenticate(None, Some(&key.as_bytes()[1..])),
            Err(AuthError::Invalid),
            "malformed: no lookup"
        );
        store.replace(set, 1, true);
        let p = store.authenticate(None, Some(key.as_bytes())).unwrap();
        assert_eq!(&*p.org_id, "org1");
        assert_eq!(store.authenticate(None, None), Err(AuthError::Missing));
        let other = generate_key("ti_").unwrap();
        assert_eq!(
            store.authenticate(None, Some(other.as_bytes())),
            Err(AuthError::Unknown)
        );
        assert_eq!(parse_hex(&hex(&hash_key(b"x"))), Some(hash_key(b"x")));
        assert_eq!(parse_hex(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(parse_hex(&"AB".repeat(32)), Some([0xab; 32]));
        assert_eq!(parse_hex(&"zz".repeat(32)), None);
        assert_eq!(parse_hex("ab"), None);
    }
}
