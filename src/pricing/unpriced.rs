//! Spans whose model has no price, as one pricer saw them: counted by provider over a bounded
//! set of labels, and the (provider, modelId) pairs that missed its cache for the first time.
//!
//! The pricer fills an `UnpricedTally` as it prices (one array increment per unpriced span: the
//! label is worked out once, on the cache miss, and kept in the cache entry); whoever owns the
//! pricer takes the tally after each batch and publishes it (`ingest::unpriced`). Nothing here
//! does I/O or takes a lock.

use super::matching::{is_bedrock, vendor_alias};

/// The `provider` label values of `traceingest_unpriced_spans_total`: the vendors the model
/// matching knows (a provider id is folded to its vendor: `azure` counts as `openai`), Amazon
/// Bedrock, `none` (no provider given) and `other`. A fixed set, so clients cannot grow it.
pub const PROVIDER_LABELS: [&str; 13] = [
    "openai",
    "anthropic",
    "google",
    "mistralai",
    "x-ai",
    "deepseek",
    "meta-llama",
    "cohere",
    "amazon",
    "perplexity",
    "bedrock",
    "none",
    "other",
];

/// The label of a span without a model id: not counted (nothing to price, nothing to add).
pub(crate) const NOT_COUNTED: u8 = u8::MAX;

/// Most new pairs a tally keeps between two takes; a batch inventing more model ids than this
/// is still counted, only its pairs past the cap are not reported (and not logged).
const MAX_NEW_PAIRS: usize = 256;

/// What one pricer saw since the tally was last taken.
#[derive(Debug, Default)]
pub struct UnpricedTally {
    /// Unpriced spans, per `PROVIDER_LABELS` entry.
    pub spans: [u32; PROVIDER_LABELS.len()],
    /// (provider, modelId) pairs that missed the cache and matched no model.
    pub new_pairs: Vec<(Option<Box<str>>, Box<str>)>,
}

impl UnpricedTally {
    /// Counts one unpriced span under `label` (from `label_of`).
    #[inline]
    pub(crate) fn count(&mut self, label: u8) {
        if let Some(n) = self.spans.get_mut(usize::from(label)) {
            *n = n.saturating_add(1);
        }
    }

    /// Remembers a pair seen for the first time by this pricer (up to `MAX_NEW_PAIRS`).
    pub(crate) fn first_seen(&mut self, provider: Option<&str>, model_id: &str) {
        if self.new_pairs.len() < MAX_NEW_PAIRS {
            self.new_pairs
                .push((provider.map(Into::into), model_id.into()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.spans.iter().all(|&n| n == 0) && self.new_pairs.is_empty()
    }

    /// Forgets everything (keeps the memory).
    pub fn clear(&mut self) {
        self.spans = [0; PROVIDER_LABELS.len()];
        self.new_pairs.clear();
    }
}

/// The index in `PROVIDER_LABELS` that (provider, modelId) counts under, or `NOT_COUNTED` for
/// a blank model id. Runs on a cache miss only: it may allocate.
pub(crate) fn label_of(provider: Option<&str>, model_id: &str) -> u8 {
    if model_id.trim().is_empty() {
        return NOT_COUNTED;
    }
    let provider = provider.unwrap_or("").trim().to_ascii_lowercase();
    let seg = provider.split('.').next().unwrap_or("");
    let label = if seg.is_empty() {
        "none"
    } else if is_bedrock(seg) {
        "bedrock"
    } else {
        vendor_alias(seg).unwrap_or("other")
    };
    index(label)
}

fn index(label: &str) -> u8 {
    let other = PROVIDER_LABELS.len() - 1;
    PROVIDER_LABELS
        .iter()
        .position(|&l| l == label)
        .unwrap_or(other) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_fold_into_a_fixed_set_of_labels() {
        let cases: &[(Option<&str>, &str, &str)] = &[
            (Some("openai.chat"), "gpt-9", "openai"),
            (Some("Azure"), "my-deployment", "openai"),
            (Some("anthropic.messages"), "claude-9", "anthropic"),
            (Some("vertex_ai"), "gemini-9", "google"),
            (Some("aws.bedrock"), "x", "bedrock"),
            (Some("bedrock"), "x", "bedrock"),
            (Some("acme"), "acme-1", "other"),
            (Some("evil\"label}"), "x", "other"),
            (None, "mystery", "none"),
            (Some("  "), "mystery", "none"),
        ];
        for &(provider, model, want) in cases {
            let label = label_of(provider, model);
            assert_eq!(PROVIDER_LABELS[usize::from(label)], want, "{provider:?}");
        }
        assert_eq!(label_of(Some("openai"), " "), NOT_COUNTED);
        // Every vendor the matching can name has its own label.
        for seg in [
            "openai",
            "anthropic",
            "google",
            "mistral",
            "xai",
            "deepseek",
            "meta",
            "cohere",
            "amazon",
            "perplexity",
        ] {
            let v = vendor_alias(seg).unwrap();
            assert!(PROVIDER_LABELS.contains(&v), "{v}");
        }
    }

    #[test]
    fn a_tally_counts_keeps_pairs_up_to_its_cap_and_clears() {
        let mut t = UnpricedTally::default();
        assert!(t.is_empty());
        t.count(label_of(Some("openai"), "x"));
        t.count(label_of(Some("openai"), "y"));
        t.count(NOT_COUNTED);
        assert_eq!(t.spans[0], 2);
        for i in 0..MAX_NEW_PAIRS + 5 {
            t.first_seen(Some("acme"), &format!("m{i}"));
        }
        assert_eq!(t.new_pairs.len(), MAX_NEW_PAIRS);
        t.clear();
        assert!(t.is_empty());
    }
}
