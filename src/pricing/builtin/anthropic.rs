//! Anthropic (cache write = the 5-minute cache; the 1-hour write, 2x input, is not modelled).
//! Web search $10 per 1000 searches. Claude on Bedrock and Vertex AI is priced at these prices
//! (their regional endpoints' premium is not modelled).

use super::*;

/// Anthropic's pricing page.
const PRICING: Src = data_set("https://www.anthropic.com/pricing#api");

/// The docs' pricing page; a stored copy (undated; it lists the models up to Claude Opus 4.1)
/// agrees with the data set on these models.
const DOCS: Src = vendor_copy("https://docs.anthropic.com/en/docs/about-claude/pricing");

pub(super) static MODELS: &[Entry] = &[
    m(
        "anthropic/claude-opus-5",
        &["anthropic/claude-5-opus"],
        PRICING,
        claude("5", "6.25", "0.5", "25"),
    ),
    // Introductory prices until 2026-08-31; the standard ones from 2026-09-01.
    m(
        "anthropic/claude-sonnet-5",
        &["anthropic/claude-5-sonnet"],
        data_set("https://www.anthropic.com/news/claude-sonnet-5"),
        claude("2", "2.5", "0.2", "10"),
    )
    .changes(&[from("2026-09-01", claude("3", "3.75", "0.3", "15"))]),
    m(
        "anthropic/claude-fable-5",
        &[],
        PRICING,
        claude("10", "12.5", "1", "50"),
    ),
    m(
        "anthropic/claude-opus-4.8",
        &["anthropic/claude-4.8-opus"],
        PRICING,
        claude("5", "6.25", "0.5", "25"),
    ),
    m(
        "anthropic/claude-opus-4.7",
        &["anthropic/claude-4.7-opus"],
        PRICING,
        claude("5", "6.25", "0.5", "25"),
    ),
    // The 4.6 models charged more above 200K input tokens until 2026-03-13.
    tiered(
        "anthropic/claude-opus-4.6",
        &["anthropic/claude-4.6-opus"],
        PRICING,
        claude("5", "6.25", "0.5", "25"),
        200_000,
        claude("10", "12.5", "1", "37.5"),
    )
    .changes(&[from("2026-03-13", claude("5", "6.25", "0.5", "25"))]),
    tiered(
        "anthropic/claude-sonnet-4.6",
        &[],
        PRICING,
        claude("3", "3.75", "0.3", "15"),
        200_000,
        claude("6", "7.5", "0.6", "22.5"),
    )
    .changes(&[from("2026-03-13", claude("3", "3.75", "0.3", "15"))]),
    m(
        "anthropic/claude-opus-4.5",
        &["anthropic/claude-4.5-opus"],
        PRICING,
        claude("5", "6.25", "0.5", "25"),
    ),
    tiered(
        "anthropic/claude-sonnet-4.5",
        &["anthropic/claude-4.5-sonnet"],
        DOCS,
        claude("3", "3.75", "0.3", "15"),
        200_000,
        claude("6", "7.5", "0.6", "22.5"),
    ),
    m(
        "anthropic/claude-haiku-4.5",
        &["anthropic/claude-4.5-haiku"],
        PRICING,
        claude("1", "1.25", "0.1", "5"),
    ),
    m(
        "anthropic/claude-opus-4.1",
        &[],
        DOCS,
        claude("15", "18.75", "1.5", "75"),
    ),
    m(
        "anthropic/claude-opus-4",
        &["anthropic/claude-opus-4.0", "anthropic/claude-4-opus"],
        DOCS,
        claude("15", "18.75", "1.5", "75"),
    ),
    // Departs from the data set, which lists Sonnet 4 flat: the vendor's page prices it above
    // 200K input tokens (1M context) at $6 / $22.50. The vendor's page wins.
    tiered(
        "anthropic/claude-sonnet-4",
        &["anthropic/claude-sonnet-4.0", "anthropic/claude-4-sonnet"],
        departs(
            "https://docs.anthropic.com/en/docs/about-claude/pricing",
            "base prices: the genai-prices data set (47df840, 2026-08-21) and an undated \
             stored copy of the vendor page; the tier above 200K input tokens: that copy only \
             (the data set has none)",
        ),
        claude("3", "3.75", "0.3", "15"),
        200_000,
        claude("6", "7.5", "0.6", "22.5"),
    ),
    m(
        "anthropic/claude-3.7-sonnet",
        &["anthropic/claude-sonnet-3.7"],
        DOCS,
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-3.5-sonnet",
        &[],
        DOCS,
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-3.5-haiku",
        &[],
        DOCS,
        claude("0.8", "1", "0.08", "4"),
    ),
    m(
        "anthropic/claude-3-opus",
        &[],
        DOCS,
        r().input("15")
            .cache_write("18.75")
            .cache_read("1.5")
            .output("75"),
    ),
    m(
        "anthropic/claude-3-sonnet",
        &[],
        PRICING,
        r().input("3")
            .cache_write("3.75")
            .cache_read("0.3")
            .output("15"),
    ),
    m(
        "anthropic/claude-3-haiku",
        &[],
        DOCS,
        r().input("0.25")
            .cache_write("0.3")
            .cache_read("0.03")
            .output("1.25"),
    ),
    m(
        "anthropic/claude-2",
        &["anthropic/claude-2.0", "anthropic/claude-2.1"],
        PRICING,
        io("8", "24"),
    ),
];
