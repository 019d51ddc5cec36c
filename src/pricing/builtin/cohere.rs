//! Cohere.

use super::*;

/// Cohere's pricing page.
const PRICING: Src = data_set("https://cohere.com/pricing");

pub(super) static MODELS: &[Entry] = &[
    m(
        "cohere/command-a",
        &["cohere/command-a-03-2025"],
        PRICING,
        io("2.5", "10"),
    ),
    m(
        "cohere/command-r-plus",
        &["cohere/command-r-plus-08-2024"],
        PRICING,
        io("2.5", "10"),
    ),
    m(
        "cohere/command-r",
        &["cohere/command-r-08-2024"],
        PRICING,
        io("0.15", "0.6"),
    ),
    m(
        "cohere/command-r7b",
        &["cohere/command-r7b-12-2024"],
        PRICING,
        io("0.0375", "0.15"),
    ),
    m("cohere/command", &[], PRICING, io("1", "2")),
    m("cohere/embed-v4.0", &[], PRICING, emb("0.12")),
];
