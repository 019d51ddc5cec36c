//! Amazon (Nova and Titan on Bedrock, global endpoints; regional Nova 2 endpoints cost 10% more
//! and are not modelled).
//!
//! Not priced (their spans stay unpriced): Nova Sonic and Nova 2 Sonic, speech-to-speech models
//! whose audio tokens, most of what they bill, cost 4.4 to 57 times their text tokens and are
//! not counted apart.

use super::*;

/// Amazon Bedrock's pricing page.
const PRICING: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

pub(super) static MODELS: &[Entry] = &[
    m(
        "amazon/nova-premier",
        &["amazon/nova-premier-v1"],
        PRICING,
        icr("2.5", "0.625", "12.5"),
    ),
    m(
        "amazon/nova-pro",
        &["amazon/nova-pro-v1"],
        PRICING,
        icr("0.8", "0.2", "3.2"),
    ),
    m(
        "amazon/nova-lite",
        &["amazon/nova-lite-v1"],
        PRICING,
        icr("0.06", "0.015", "0.24"),
    ),
    m(
        "amazon/nova-micro",
        &["amazon/nova-micro-v1"],
        PRICING,
        icr("0.035", "0.00875", "0.14"),
    ),
    m(
        "amazon/nova-2-lite",
        &["amazon/nova-2-lite-v1"],
        PRICING,
        icr("0.3", "0.075", "2.5"),
    ),
    m(
        "amazon/titan-text-express",
        &["amazon/titan-text-express-v1"],
        PRICING,
        io("0.2", "0.6"),
    ),
    m(
        "amazon/titan-text-lite",
        &["amazon/titan-text-lite-v1"],
        PRICING,
        io("0.15", "0.2"),
    ),
    // Departs from the data set, whose one Titan embeddings entry matches both versions at
    // V1's $0.10: AWS lists Titan Text Embeddings V2 at $0.02 per 1M.
    m(
        "amazon/titan-embed-text-v2",
        &[],
        departs(
            "https://aws.amazon.com/bedrock/pricing/",
            "AWS's price for V2 ($0.02 per 1M), not re-read for this revision; the genai-prices \
             data set (47df840, 2026-08-21) prices it as V1 ($0.10)",
        ),
        emb("0.02"),
    ),
    m("amazon/titan-embed-text-v1", &[], PRICING, emb("0.1")),
];
