//! A span's identity (session, user, agent) as its trace may take it, and a session or user
//! sent under a worse-ranked name with another value, which the span keeps in its metadata.

use super::{cut_utf16, limit, Found, Mapper};

/// A mapped span's trace and what its trace may take from it (kept beside the span, which is
/// large: spans are copied only when a trace's spans do not arrive together).
#[derive(Clone, Copy)]
pub(super) struct Ident<'a> {
    pub(super) trace: u128,
    pub(super) session: Option<&'a str>,
    pub(super) user: Option<&'a str>,
    pub(super) agent: Option<&'a str>,
    /// The ranks of the names `session` and `user` came under (`SESSION_KEYS`, `USER_KEYS`):
    /// a value its trace did not take is kept in the span's metadata under its own name.
    pub(super) session_rank: u8,
    pub(super) user_rank: u8,
    /// Whether the span sent a session or user under a worse-ranked name too, with another
    /// value (in `Mapper::outranked`). A byte of what was padding (`Ident` stays 80 bytes on
    /// 64-bit targets): the hot path only tests it.
    pub(super) outranked: bool,
}

/// A span's session or user sent under a worse-ranked name with another value than the
/// best-ranked name's (`session.id` = s1 and `gen_ai.conversation.id` = c1 on one span): not the
/// column's, but kept in the span's metadata unless its trace's column holds it (`Mapper::
/// finish`). Rare, so kept apart from `Ident` instead of widening every span's.
#[derive(Clone, Copy)]
pub(super) struct Outranked<'a> {
    /// The span's index in `Mapper::spans`.
    pub(super) span: usize,
    /// Which identity: `Identity::Session` or `Identity::User`.
    pub(super) of: Identity,
    /// The name it came under (`SESSION_KEYS`, `USER_KEYS`).
    pub(super) key: &'static str,
    /// As sent (cut when kept).
    pub(super) value: &'a str,
}

/// The identities a span may send under several ranked names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Identity {
    Session,
    User,
}

impl Identity {
    /// Its attribute names, by rank.
    pub(super) fn keys(self) -> [&'static str; NAMES] {
        match self {
            Identity::Session => SESSION_KEYS,
            Identity::User => USER_KEYS,
        }
    }

    /// The length its column takes (longer values are cut).
    pub(super) fn limit(self) -> usize {
        match self {
            Identity::Session => limit::SESSION_ID,
            Identity::User => limit::CUSTOMER_ID,
        }
    }
}

/// How many names an identity has (`SESSION_KEYS`, `USER_KEYS`, `Names`).
pub(super) const NAMES: usize = 2;

/// The attribute names of `Key::Session` and `Key::User`, by rank (`keys.rs`; a test checks
/// they agree).
pub(in crate::ingest::otlp) const SESSION_KEYS: [&str; NAMES] =
    ["session.id", "gen_ai.conversation.id"];
pub(in crate::ingest::otlp) const USER_KEYS: [&str; NAMES] = ["user.id", "enduser.id"];
pub(super) const AGENT_KEY: &str = "gen_ai.agent.name";

/// An identity's value under each of its names (`SESSION_KEYS`, `USER_KEYS`), by rank: the
/// best-ranked present is the one the trace may take; the others are not lost when they differ
/// from it (`Mapper::keep_outranked`).
#[derive(Clone, Copy, Default)]
pub(super) struct Names<'a>(pub(super) [Option<&'a str>; NAMES]);

impl<'a> Names<'a> {
    #[inline]
    pub(super) fn offer(&mut self, rank: u8, s: &'a str) -> bool {
        // Every rank of `Key::Session`/`Key::User` is below `NAMES` (tested in `keys.rs`).
        if let Some(slot) = self.0.get_mut(usize::from(rank)) {
            *slot = Some(s);
        }
        true
    }
    /// The best-ranked value, and its rank.
    #[inline]
    pub(super) fn best(&self) -> Option<(u8, &'a str)> {
        let rank = self.0.iter().position(Option::is_some)?;
        Some((rank as u8, self.0[rank]?))
    }
    /// Whether more than one name has a value.
    #[inline]
    pub(super) fn several(&self) -> bool {
        self.0.iter().filter(|v| v.is_some()).count() > 1
    }
}

impl<'a> Mapper<'a> {
    /// Records the sessions and users the span being mapped (the last pushed) sent under a
    /// worse-ranked name with a value the best-ranked name's does not have, compared as their
    /// columns would hold them (cut), a value once; whether there was one.
    #[cold]
    pub(super) fn keep_outranked(&mut self, f: &Found<'a>, ident: &Ident<'a>) -> bool {
        let span = self.spans.len() - 1;
        let before = self.outranked.len();
        let each = [
            (Identity::Session, f.session, ident.session),
            (Identity::User, f.user, ident.user),
        ];
        for (of, names, best) in each {
            let (keys, max) = (of.keys(), of.limit());
            let mut seen = [best; NAMES];
            for (rank, value) in names.0.into_iter().enumerate() {
                let Some(value) = value else { continue };
                let cut = Some(cut_utf16(value, max));
                if seen.contains(&cut) {
                    continue;
                }
                seen[rank] = cut;
                self.outranked.push(Outranked {
                    span,
                    of,
                    key: keys[rank],
                    value,
                });
            }
        }
        self.outranked.len() > before
    }
}
