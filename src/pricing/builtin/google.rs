//! Google Gemini (Gemini API and Vertex AI list prices, standard tier). Grounding with Google
//! Search: $35 per 1000 grounded prompts for Gemini 2.x, $14 per 1000 queries for Gemini 3.x.
//! Audio input, billed higher by some models, is priced as text input here.
//!
//! Not priced (their spans stay unpriced): the Live API and native-audio models
//! (`gemini-live-2.5-flash`, `gemini-2.5-flash-native-audio-*`, `gemini-3.1-flash-live-preview`),
//! whose audio tokens cost 2.7 to 6 times their text tokens and are not counted apart;
//! `gemini-omni-flash-preview`, whose video output has a price of its own; and the Gemini API's
//! free Gemma 3 and 3n, which the data set lists without a price.

use super::*;

/// The Gemini API pricing page.
const PRICING: Src = data_set("https://ai.google.dev/gemini-api/docs/pricing");

/// The Gemini 3 image models: token prices from the data set; the output tokens a (1K) image
/// takes are not in it.
const IMAGE: Src = departs(
    "https://ai.google.dev/gemini-api/docs/pricing",
    "token prices: the genai-prices data set (47df840, 2026-08-21); 1120 output tokens per \
     1K image: not in the data set, from third-party copies of the vendor page (which was not \
     read)",
);

/// Gemma 4 as the data set lists it (hosted providers' prices; the Gemini API's own free
/// tier is not a price).
const GEMMA: Src = data_set(
    "https://github.com/pydantic/genai-prices/blob/47df840a5ab10bbcffb8e5ac01b9899032245d1b/prices/new_data/v2/data.json",
);

/// Amazon Bedrock's pricing page, for Google's models under their Bedrock ids.
const BEDROCK: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

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
    // Image output $120 per 1M tokens, 1120 tokens per 1K or 2K image ($0.134); a 4K image
    // takes 2000 tokens, and spans do not say the size: the 880 beyond 1120 stay in the
    // completion count at the text rate.
    m(
        "google/gemini-3-pro-image-preview",
        &["google/gemini-3-pro-image"],
        IMAGE,
        io("2", "12").image_output("120", 1120),
    ),
    // Image output $60 per 1M tokens, 1120 tokens per 1K image ($0.067); larger images take
    // more (2K about 1680, 4K about 2520), billed beyond 1120 at the text rate.
    m(
        "google/gemini-3.1-flash-image-preview",
        &["google/gemini-3.1-flash-image"],
        IMAGE,
        io("0.5", "3").image_output("60", 1120),
    ),
    // Image output $30 per 1M tokens; its images are 1K only, 1120 tokens ($0.034).
    m(
        "google/gemini-3.1-flash-lite-image",
        &[],
        IMAGE,
        io("0.25", "1.5").image_output("30", 1120),
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
    // Departs from the data set's `gemini-1.5-pro` entry, which has no cache-read price (cached
    // input billed as input); its `gemini-pro-1.5` entry for the same model gives Google's
    // context-caching price, a quarter of the input price, as here.
    tiered(
        "google/gemini-1.5-pro",
        &["google/gemini-pro-1.5"],
        departs(
            "https://ai.google.dev/gemini-api/docs/pricing",
            "the genai-prices data set's gemini-pro-1.5 entry (47df840, 2026-08-21); its \
             gemini-1.5-pro entry lacks the cache-read price; the vendor page was not read",
        ),
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
    // Departs from the data set for its own id: the data set's `gemini-1.5-flash` rule (any
    // id containing it) catches `gemini-1.5-flash-8b` first; its `gemini-flash-1.5-8b` entry
    // for the same model gives these figures.
    tiered(
        "google/gemini-1.5-flash-8b",
        &["google/gemini-flash-1.5-8b"],
        departs(
            "https://ai.google.dev/gemini-api/docs/pricing",
            "the genai-prices data set's gemini-flash-1.5-8b entry (47df840, 2026-08-21), which \
             its gemini-1.5-flash rule shadows for the id gemini-1.5-flash-8b; the vendor page \
             was not read",
        ),
        icr("0.0375", "0.01", "0.15"),
        128_000,
        icr("0.075", "0.02", "0.3"),
    ),
    m("google/gemini-embedding-001", &[], PRICING, emb("0.15")),
    // Text input; its audio, image and video input prices are not modelled.
    m("google/gemini-embedding-2", &[], PRICING, emb("0.2")),
    m(
        "google/gemma-4-31b-it",
        &[],
        GEMMA,
        icr("0.12", "0.09", "0.36"),
    ),
    m("google/gemma-4-26b-a4b-it", &[], GEMMA, io("0.06", "0.33")),
    // Gemma 3 as Amazon Bedrock sells it, under Bedrock's ids (`google.gemma-3-27b-it`): the
    // Gemini API's Gemma 3 is free of charge, not at these prices.
    m(
        "bedrock/google.gemma-3-27b-it",
        &[],
        BEDROCK,
        io("0.23", "0.38"),
    ),
    m(
        "bedrock/google.gemma-3-12b-it",
        &[],
        BEDROCK,
        io("0.09", "0.29"),
    ),
    m(
        "bedrock/google.gemma-3-4b-it",
        &[],
        BEDROCK,
        io("0.04", "0.08"),
    ),
];
