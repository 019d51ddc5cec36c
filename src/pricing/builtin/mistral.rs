//! Mistral AI (La Plateforme), then Mistral's models as Amazon Bedrock sells them.
//! `-latest` aliases point where Mistral's docs point them (the newest release), which is not
//! always where the data set points them; each such alias says so.

use super::*;

/// Mistral's pricing page.
const PRICING: Src = data_set("https://mistral.ai/pricing#api-pricing");

/// Amazon Bedrock's pricing page, for Mistral's models under their Bedrock ids.
const BEDROCK: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

/// Open-weight checkpoints under their Hugging Face / OpenRouter ids: the data set lists them
/// at hosted providers' prices, not La Plateforme's.
const OPEN_WEIGHTS: Src = data_set(
    "https://github.com/pydantic/genai-prices/blob/47df840a5ab10bbcffb8e5ac01b9899032245d1b/prices/new_data/v2/data.json",
);

pub(super) static MODELS: &[Entry] = &[
    // Departs from the data set for one alias: it matches `mistral-large-latest` to Mistral
    // Large 2 ($2 / $6); Mistral's models page (https://docs.mistral.ai/getting-started/models/)
    // points `-latest` at the newest release, Mistral Large 3 (2512).
    m(
        "mistralai/mistral-large-2512",
        &[
            "mistralai/mistral-large-latest",
            "mistralai/mistral-large-3",
        ],
        departs(
            "https://mistral.ai/pricing#api-pricing",
            "figures: the genai-prices data set (47df840, 2026-08-21); the alias \
             mistral-large-latest departs from it (it prices that alias as Mistral Large 2 at \
             $2 / $6) and follows Mistral's models page, which was not read for this revision",
        ),
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
    // The data set prices every `mistral-medium*` id alike, without a cache-read price: cached
    // input tokens are billed as input.
    m(
        "mistralai/mistral-medium-3.1",
        &[
            "mistralai/mistral-medium-2508",
            "mistralai/mistral-medium-latest",
            "mistralai/mistral-medium",
        ],
        PRICING,
        io("0.4", "2"),
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
    // The data set's `mistral-small-latest` is Mistral Small 3.2, whose dated id is
    // `mistral-small-2506`. Older Small releases (2402, 2409, 2501, 2503) are not priced as it:
    // their ids find no model (costs null) rather than a newer model's price.
    m(
        "mistralai/mistral-small",
        &[
            "mistralai/mistral-small-latest",
            "mistralai/mistral-small-2506",
        ],
        PRICING,
        io("0.1", "0.3"),
    ),
    // Departs from the data set for one alias: it matches `codestral-latest` to the 2501
    // Codestral (no cache-read price); Mistral's models page points it at codestral-2508.
    m(
        "mistralai/codestral-2508",
        &["mistralai/codestral-latest"],
        departs(
            "https://mistral.ai/pricing#api-pricing",
            "figures: the genai-prices data set (47df840, 2026-08-21); the alias \
             codestral-latest departs from it (it prices that alias as the 2501 Codestral, \
             without a cache-read price) and follows Mistral's models page, which was not read \
             for this revision",
        ),
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
    // Departs from the data set's Mistral entry, which matches every `ministral-8b*` id to
    // the 2410 Ministral 8B ($0.10 / $1): the data set's Amazon Bedrock entry for this same
    // model (`mistral.ministral-3-8b-instruct`) gives $0.15 / $0.15, as for its 3B and 14B
    // siblings, whose Mistral and Bedrock prices agree.
    m(
        "mistralai/ministral-8b-2512",
        &[
            "mistralai/ministral-8b-latest",
            "mistralai/ministral-3-8b-2512",
        ],
        departs(
            "https://aws.amazon.com/bedrock/pricing/",
            "the genai-prices data set's Amazon Bedrock entry for the same model (47df840, \
             2026-08-21); its Mistral entry prices this id as the 2410 Ministral 8B \
             ($0.10 / $1); neither vendor page was read",
        ),
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
    // Departs from the data set, which lists $0.10 / $1 for the 2410 Ministral 8B: Mistral's
    // launch announcement (https://mistral.ai/news/ministraux) priced it $0.10 / $0.10 (and
    // Ministral 3B $0.04 / $0.04, which the data set agrees with).
    m(
        "mistralai/ministral-8b",
        &["mistralai/ministral-8b-2410"],
        departs(
            "https://mistral.ai/news/ministraux",
            "Mistral's launch price ($0.10 / $0.10), not re-read for this revision; the \
             genai-prices data set (47df840, 2026-08-21) lists $0.10 / $1",
        ),
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
        &["mistralai/open-mistral-7b", "mistralai/mistral-tiny"],
        PRICING,
        io("0.25", "0.25"),
    ),
    m(
        "mistralai/mixtral-8x7b",
        &["mistralai/open-mixtral-8x7b"],
        PRICING,
        io("0.7", "0.7"),
    ),
    m(
        "mistralai/mistral-embed",
        &[],
        PRICING,
        emb("0.1").output("0.1"),
    ),
    // Also Bedrock's `mistral.voxtral-small-24b-2507`, at the same input and output prices
    // (Bedrock lists no cache-read price; its calls report no cached tokens).
    m(
        "mistralai/voxtral-small-24b-2507",
        &[],
        PRICING,
        icr("0.1", "0.01", "0.3"),
    ),
    m(
        "mistralai/mistral-small-24b-instruct-2501",
        &[],
        OPEN_WEIGHTS,
        io("0.05", "0.08"),
    ),
    m(
        "mistralai/mistral-small-3.2-24b-instruct",
        &[],
        OPEN_WEIGHTS,
        io("0.075", "0.2"),
    ),
    m(
        "mistralai/mistral-small-3.1-24b-instruct",
        &[],
        OPEN_WEIGHTS,
        io("0.351", "0.555"),
    ),
    m(
        "mistralai/mixtral-8x22b-instruct",
        &[],
        OPEN_WEIGHTS,
        io("0.9", "0.9"),
    ),
    // Amazon Bedrock. Its ids (`mistral.ministral-3-8b-instruct`,
    // `us.mistral.mistral-large-3-675b-instruct`, `mistral.mistral-large-2402-v1:0`) are read
    // as `mistralai/<model>` (the version suffix `:0` removed); these are Bedrock's prices.
    m(
        "mistralai/mistral-large-3-675b-instruct",
        &[],
        BEDROCK,
        io("0.5", "1.5"),
    ),
    m("mistralai/devstral-2-123b", &[], BEDROCK, io("0.4", "2")),
    m(
        "mistralai/ministral-3-14b-instruct",
        &[],
        BEDROCK,
        io("0.2", "0.2"),
    ),
    m(
        "mistralai/ministral-3-8b-instruct",
        &[],
        BEDROCK,
        io("0.15", "0.15"),
    ),
    m(
        "mistralai/ministral-3-3b-instruct",
        &[],
        BEDROCK,
        io("0.1", "0.1"),
    ),
    m(
        "mistralai/voxtral-mini-3b-2507",
        &[],
        BEDROCK,
        io("0.04", "0.04"),
    ),
    // The first Mistral Large and Small (24.02) as Bedrock sells them. Mistral's own API
    // priced them otherwise and the data set does not have that: `mistral-large-2402` and
    // `mistral-small-2402` without Bedrock's `-v1` find no model (costs null).
    m(
        "mistralai/mistral-large-2402-v1",
        &[],
        BEDROCK,
        io("4", "12"),
    ),
    m(
        "mistralai/mistral-small-2402-v1",
        &[],
        BEDROCK,
        io("1", "3"),
    ),
    m(
        "mistralai/mistral-7b-instruct-v0",
        &[],
        BEDROCK,
        io("0.15", "0.2"),
    ),
    m(
        "mistralai/mixtral-8x7b-instruct-v0",
        &[],
        BEDROCK,
        io("0.45", "0.7"),
    ),
];
