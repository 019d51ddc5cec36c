//! Google Gemini (Gemini API and Vertex AI list prices, standard tier). Grounding with Google
//! Search: $35 per 1000 grounded prompts for Gemini 2.x, $14 per 1000 queries for Gemini 3.x.
//! Audio input, billed higher by some models, is priced as text input here.

use super::*;

/// The Gemini API pricing page.
const PRICING: Src = data_set("https://ai.google.dev/gemini-api/docs/pricing");

pub(super) static MODELS: &[Entry] = &[
    // Introductory prices until 2026-12-31; the standard ones from 2027-01-01.
    m(
        "google/gemini-3.7-flash",
        &[],
        PRICING,
        icr("0.75", "0.075", "3.75").search("0.014"),
    )
    .changes(&[from(
        "2027-01-01",
        icr("1.5", "0.15", "7.5").search("0.014"),
    )]),
    m(
        "google/gemini-3.6-flash",
        &[],
        PRICING,
        icr("0.75", "0.075", "3.75").search("0.014"),
    )
    .changes(&[from(
        "2027-01-01",
        icr("1.5", "0.15", "7.5").search("0.014"),
    )]),
    m(
        "google/gemini-3.5-flash",
        &[],
        PRICING,
        icr("1.5", "0.15", "9").search("0.014"),
    ),
    m(
        "google/gemini-3.5-flash-lite",
        &[],
        PRICING,
        icr("0.3", "0.03", "2.5").search("0.014"),
    ),
    tiered(
        "google/gemini-3.1-pro-preview",
        &["google/gemini-3.1-pro"],
        PRICING,
        icr("2", "0.2", "12").search("0.014"),
        200_000,
        icr("4", "0.4", "18"),
    ),
    tiered(
        "google/gemini-3-pro-preview",
        &["google/gemini-3-pro", "google/gemini-3-pro-text-preview"],
        PRICING,
        icr("2", "0.2", "12").search("0.014"),
        200_000,
        icr("4", "0.4", "18"),
    ),
    m(
        "google/gemini-3.1-flash-lite",
        &[],
        PRICING,
        icr("0.25", "0.025", "1.5").search("0.014"),
    ),
    m(
        "google/gemini-3-flash-preview",
        &["google/gemini-3-flash"],
        PRICING,
        icr("0.5", "0.05", "3").search("0.014"),
    ),
    tiered(
        "google/gemini-2.5-pro",
        &[],
        PRICING,
        icr("1.25", "0.125", "10").search("0.035"),
        200_000,
        icr("2.5", "0.25", "15"),
    ),
    m(
        "google/gemini-2.5-flash",
        &["google/gemini-2.5-flash-preview-09-2025"],
        PRICING,
        icr("0.3", "0.03", "2.5").search("0.035"),
    )
    .over(&["google/gemini-2.5-flash-preview"]),
    // The first 2.5 Flash previews (April and May 2025) had prices of their own.
    m(
        "google/gemini-2.5-flash-preview",
        &[
            "google/gemini-2.5-flash-preview-05-20",
            "google/gemini-2.5-flash-preview-04-17",
        ],
        PRICING,
        io("0.15", "0.6"),
    )
    .over(&["google/gemini-2.5-flash"]),
    m(
        "google/gemini-2.5-flash-lite",
        &[],
        PRICING,
        icr("0.1", "0.01", "0.4").search("0.035"),
    ),
    // Text output at Gemini 2.5 Flash's $2.50; image output $30 per 1M tokens, 1290 tokens per
    // 1024x1024 image ($0.0387 an image). No context caching for this model.
    m(
        "google/gemini-2.5-flash-image",
        &["google/gemini-2.5-flash-image-preview"],
        PRICING,
        io("0.3", "2.5").image_output("30", 1290),
    ),
    m(
        "google/gemini-2.0-flash",
        &[
            "google/gemini-2.0-flash-exp",
            "google/gemini-2.0-flash-thinking-exp",
        ],
        PRICING,
        icr("0.1", "0.025", "0.4").search("0.035"),
    ),
    m(
        "google/gemini-2.0-flash-lite",
        &[],
        PRICING,
        io("0.075", "0.3"),
    ),
    tiered(
        "google/gemini-1.5-pro",
        &["google/gemini-pro-1.5"],
        PRICING,
        icr("1.25", "0.3125", "5"),
        128_000,
        icr("2.5", "0.625", "10"),
    ),
    tiered(
        "google/gemini-1.5-flash",
        &["google/gemini-flash-1.5"],
        PRICING,
        icr("0.075", "0.01875", "0.3"),
        128_000,
        icr("0.15", "0.0375", "0.6"),
    ),
    tiered(
        "google/gemini-1.5-flash-8b",
        &["google/gemini-flash-1.5-8b"],
        PRICING,
        icr("0.0375", "0.01", "0.15"),
        128_000,
        icr("0.075", "0.02", "0.3"),
    ),
    m("google/gemini-embedding-001", &[], PRICING, emb("0.15")),
    // Text input; its audio, image and video input prices are not modelled.
    m("google/gemini-embedding-2", &[], PRICING, emb("0.2")),
];
