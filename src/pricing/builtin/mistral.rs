//! Mistral AI (La Plateforme). `-latest` aliases point where Mistral's docs point them.

use super::*;

/// Mistral's pricing page.
const PRICING: Src = data_set("https://mistral.ai/pricing#api-pricing");

pub(super) static MODELS: &[Entry] = &[
    m(
        "mistralai/mistral-large-2512",
        &[
            "mistralai/mistral-large-latest",
            "mistralai/mistral-large-3",
        ],
        PRICING,
        icr("0.5", "0.05", "1.5"),
    )
    .over(&["mistralai/mistral-large"]),
    m(
        "mistralai/mistral-large",
        &[
            "mistralai/mistral-large-2407",
            "mistralai/mistral-large-2411",
        ],
        PRICING,
        io("2", "6"),
    ),
    m(
        "mistralai/mistral-medium-3.1",
        &[
            "mistralai/mistral-medium-2508",
            "mistralai/mistral-medium-latest",
            "mistralai/mistral-medium",
        ],
        PRICING,
        icr("0.4", "0.04", "2"),
    ),
    m(
        "mistralai/mistral-medium-3",
        &["mistralai/mistral-medium-2505"],
        PRICING,
        io("0.4", "2"),
    )
    .over(&["mistralai/mistral-medium-3.1"]),
    m(
        "mistralai/mistral-small-2603",
        &["mistralai/mistral-small-4"],
        PRICING,
        icr("0.15", "0.015", "0.6"),
    )
    .over(&["mistralai/mistral-small"]),
    m(
        "mistralai/mistral-small",
        &["mistralai/mistral-small-latest"],
        PRICING,
        io("0.1", "0.3"),
    ),
    m(
        "mistralai/codestral-2508",
        &["mistralai/codestral-latest"],
        PRICING,
        icr("0.3", "0.03", "0.9"),
    )
    .over(&["mistralai/codestral"]),
    m(
        "mistralai/codestral",
        &["mistralai/codestral-2501"],
        PRICING,
        io("0.3", "0.9"),
    ),
    m(
        "mistralai/devstral-2512",
        &["mistralai/devstral-2"],
        PRICING,
        icr("0.4", "0.04", "2"),
    ),
    m("mistralai/devstral-small", &[], PRICING, io("0.06", "0.12")),
    m("mistralai/magistral-medium", &[], PRICING, io("2", "5")),
    m("mistralai/magistral-small", &[], PRICING, io("0.5", "1.5")),
    // The Ministral 3 family (2512) replaced the 2410 models; `-latest` names it.
    m(
        "mistralai/ministral-14b-2512",
        &[
            "mistralai/ministral-14b-latest",
            "mistralai/ministral-3-14b-2512",
        ],
        PRICING,
        icr("0.2", "0.02", "0.2"),
    ),
    // Not in the data set under this id; Mistral's $0.15 per 1M as Amazon Bedrock lists it
    // for the same model (`mistral.ministral-3-8b-instruct`).
    m(
        "mistralai/ministral-8b-2512",
        &[
            "mistralai/ministral-8b-latest",
            "mistralai/ministral-3-8b-2512",
        ],
        data_set("https://aws.amazon.com/bedrock/pricing/"),
        io("0.15", "0.15"),
    )
    .over(&["mistralai/ministral-8b"]),
    m(
        "mistralai/ministral-3b-2512",
        &[
            "mistralai/ministral-3b-latest",
            "mistralai/ministral-3-3b-2512",
        ],
        PRICING,
        icr("0.1", "0.01", "0.1"),
    )
    .over(&["mistralai/ministral-3b"]),
    // The data set lists $0.10 / $1 for the 2410 Ministral 8B; Mistral priced it $0.10 / $0.10
    // and that is kept until the vendor's page can be checked.
    m(
        "mistralai/ministral-8b",
        &["mistralai/ministral-8b-2410"],
        PRICING,
        io("0.1", "0.1"),
    ),
    m(
        "mistralai/ministral-3b",
        &["mistralai/ministral-3b-2410"],
        PRICING,
        io("0.04", "0.04"),
    ),
    m(
        "mistralai/mistral-nemo",
        &["mistralai/open-mistral-nemo"],
        PRICING,
        io("0.15", "0.15"),
    ),
    m(
        "mistralai/pixtral-large",
        &["mistralai/pixtral-large-2411"],
        PRICING,
        io("2", "6"),
    ),
    m(
        "mistralai/pixtral-12b",
        &["mistralai/pixtral-12b-2409"],
        PRICING,
        io("0.15", "0.15"),
    ),
    m("mistralai/mistral-saba", &[], PRICING, io("0.2", "0.6")),
    m(
        "mistralai/mistral-7b",
        &["mistralai/open-mistral-7b"],
        PRICING,
        io("0.25", "0.25"),
    ),
    m(
        "mistralai/mixtral-8x7b",
        &["mistralai/open-mixtral-8x7b"],
        PRICING,
        io("0.7", "0.7"),
    ),
    m("mistralai/mistral-embed", &[], PRICING, emb("0.1")),
];
