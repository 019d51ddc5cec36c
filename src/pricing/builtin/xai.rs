//! xAI. Live Search: $25 per 1000 sources used (Grok 4 and 3).

use super::*;

/// xAI's models and pricing page.
const PRICING: Src = data_set("https://docs.x.ai/docs/models");

pub(super) static MODELS: &[Entry] = &[
    m(
        "x-ai/grok-4.5",
        &["x-ai/grok-latest"],
        PRICING,
        icr("2", "0.5", "6"),
    ),
    // A stored copy of the vendor's page confirms these figures and says requests above 200K
    // tokens cost more, without the figure (neither has the data set): not modelled.
    m(
        "x-ai/grok-4.3",
        &[],
        vendor_copy("https://docs.x.ai/docs/models"),
        icr("1.25", "0.2", "2.5"),
    ),
    m("x-ai/grok-4.20", &[], PRICING, icr("1.25", "0.2", "2.5")),
    m(
        "x-ai/grok-4.20-multi-agent",
        &[],
        PRICING,
        icr("2", "0.2", "6"),
    ),
    // Departs from the data set, which lists Grok 4 flat: xAI's models page prices requests
    // above 128K input tokens at twice the rate, $6 / $30.
    tiered(
        "x-ai/grok-4",
        &["x-ai/grok-4-0709"],
        departs(
            "https://docs.x.ai/docs/models",
            "base prices: the genai-prices data set (47df840, 2026-08-21); the tier above 128K \
             input tokens: xAI's models page, not re-read for this revision (the data set \
             has none)",
        ),
        icr("3", "0.75", "15").search("0.025"),
        128_000,
        r().input("6").cache_write("6").output("30"),
    ),
    m(
        "x-ai/grok-4-fast-reasoning",
        &["x-ai/grok-4-fast"],
        PRICING,
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4-fast-non-reasoning",
        &[],
        PRICING,
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4.1-fast-reasoning",
        &["x-ai/grok-4.1-fast"],
        PRICING,
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4.1-fast-non-reasoning",
        &[],
        PRICING,
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-code-fast-1",
        &["x-ai/grok-code-fast", "x-ai/grok-code-fast-1-0825"],
        PRICING,
        icr("0.2", "0.02", "1.5"),
    ),
    m("x-ai/grok-build-0.1", &[], PRICING, icr("1", "0.2", "2")),
    m(
        "x-ai/grok-3",
        &["x-ai/grok-3-beta"],
        PRICING,
        icr("3", "0.75", "15").search("0.025"),
    ),
    m(
        "x-ai/grok-3-fast",
        &["x-ai/grok-3-fast-beta"],
        PRICING,
        icr("5", "1.25", "25").search("0.025"),
    ),
    m(
        "x-ai/grok-3-mini",
        &["x-ai/grok-3-mini-beta"],
        PRICING,
        icr("0.3", "0.075", "0.5").search("0.025"),
    ),
    m(
        "x-ai/grok-3-mini-fast",
        &["x-ai/grok-3-mini-fast-beta"],
        PRICING,
        icr("0.6", "0.15", "4").search("0.025"),
    ),
    m("x-ai/grok-2-1212", &["x-ai/grok-2"], PRICING, io("2", "10")),
    m(
        "x-ai/grok-2-vision-1212",
        &["x-ai/grok-2-vision"],
        PRICING,
        io("2", "10"),
    ),
];
