//! Perplexity: token prices plus a fee per request (its high-context fee, the highest; the fee
//! depends on the search context size, which spans do not report).

use super::*;

/// Perplexity's pricing page.
const PRICING: Src = data_set("https://docs.perplexity.ai/docs/getting-started/pricing");

pub(super) static MODELS: &[Entry] = &[
    m(
        "perplexity/sonar",
        &[],
        PRICING,
        io("1", "1").request("0.012"),
    ),
    m(
        "perplexity/sonar-pro",
        &[],
        PRICING,
        io("3", "15").request("0.014"),
    ),
    m(
        "perplexity/sonar-reasoning",
        &[],
        PRICING,
        io("1", "5").request("0.012"),
    ),
    m(
        "perplexity/sonar-reasoning-pro",
        &[],
        PRICING,
        io("2", "8").request("0.014"),
    ),
    // Reasoning tokens $3 per 1M apart from output; searches $5 per 1000. Its citation tokens
    // ($2 per 1M) are not reported apart and are billed as output.
    m(
        "perplexity/sonar-deep-research",
        &[],
        PRICING,
        io("2", "8").reasoning("3").search("0.005"),
    ),
];
