//! Perplexity: token prices plus, where the data set gives one, a fee per request (its
//! high-context fee, the highest; the fee depends on the search context size, which spans do
//! not report).

use super::*;

/// Perplexity's pricing page.
const PRICING: Src = data_set("https://docs.perplexity.ai/docs/getting-started/pricing");

/// OpenRouter's Perplexity ids, as the data set lists them under Perplexity.
const DATA_SET: Src = data_set(
    "https://github.com/pydantic/genai-prices/blob/47df840a5ab10bbcffb8e5ac01b9899032245d1b/prices/new_data/v2/data.json",
);

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
    // The data set gives these token prices only, no fee per request or search: none is billed.
    // Sonar Pro Search is OpenRouter's id (the data set's figures are OpenRouter's); the Llama
    // 3.1 Sonar online models came before `sonar` and `sonar-pro`; R1 1776 searches nothing.
    m("perplexity/sonar-pro-search", &[], DATA_SET, io("3", "15")),
    m(
        "perplexity/llama-3.1-sonar-large-128k-online",
        &[],
        PRICING,
        io("1", "1"),
    ),
    m(
        "perplexity/llama-3.1-sonar-small-128k-online",
        &[],
        PRICING,
        io("0.2", "0.2"),
    ),
    m("perplexity/r1-1776", &[], PRICING, io("2", "8")),
];
