//! Meta Llama. Meta sells no API of its own: these are Amazon Bedrock's on-demand list prices
//! (the creator's prices the contract prices Bedrock ids at).

use super::*;

/// Amazon Bedrock's pricing page.
const PRICING: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

pub(super) static MODELS: &[Entry] = &[
    m(
        "meta-llama/llama-4-maverick",
        &[
            "meta-llama/llama-4-maverick-17b-instruct",
            "meta-llama/llama-4-maverick-17b-128e-instruct",
        ],
        PRICING,
        io("0.24", "0.97"),
    ),
    m(
        "meta-llama/llama-4-scout",
        &[
            "meta-llama/llama-4-scout-17b-instruct",
            "meta-llama/llama-4-scout-17b-16e-instruct",
        ],
        PRICING,
        io("0.17", "0.66"),
    ),
    m(
        "meta-llama/llama-3.3-70b-instruct",
        &[],
        PRICING,
        io("0.72", "0.72"),
    ),
    m(
        "meta-llama/llama-3.2-90b-instruct",
        &["meta-llama/llama-3.2-90b-vision-instruct"],
        PRICING,
        io("0.72", "0.72"),
    ),
    m(
        "meta-llama/llama-3.2-11b-instruct",
        &["meta-llama/llama-3.2-11b-vision-instruct"],
        PRICING,
        io("0.16", "0.16"),
    ),
    m(
        "meta-llama/llama-3.2-3b-instruct",
        &[],
        PRICING,
        io("0.15", "0.15"),
    ),
    m(
        "meta-llama/llama-3.2-1b-instruct",
        &[],
        PRICING,
        io("0.1", "0.1"),
    ),
    m(
        "meta-llama/llama-3.1-70b-instruct",
        &[],
        PRICING,
        io("0.72", "0.72"),
    ),
    m(
        "meta-llama/llama-3.1-8b-instruct",
        &[],
        PRICING,
        io("0.22", "0.22"),
    ),
    m(
        "meta-llama/llama-3-70b-instruct",
        &[],
        PRICING,
        io("2.65", "3.5"),
    ),
    m(
        "meta-llama/llama-3-8b-instruct",
        &[],
        PRICING,
        io("0.3", "0.6"),
    ),
];
