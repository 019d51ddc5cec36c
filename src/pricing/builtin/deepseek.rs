//! DeepSeek. Its API model names have changed models and prices several times; each date below
//! is when DeepSeek's pricing page (copies of it stored at the time, and reports of its
//! announcements) says the change took effect.

use super::*;

/// DeepSeek's models and pricing page, for the models whose price history this file gives.
/// It departs from the data set, which prices `deepseek-chat` and `deepseek-reasoner` at all
/// times at the V3 and R1 prices of early 2025 (with their off-peak hours) and the V4 models'
/// cache reads at the cut price from the start.
const HISTORY: Src = departs(
    "https://api-docs.deepseek.com/quick_start/pricing",
    "DeepSeek's price history from stored copies of its page (2025-09, 2026-04) and reports \
     of its announcements, not re-read for this revision; departs from the genai-prices data \
     set (47df840, 2026-08-21), which has no dated changes for these models",
);

/// DeepSeek's page, for models whose figures are the data set's.
const PRICING: Src = data_set("https://api-docs.deepseek.com/quick_start/pricing");

/// The V4 models' prices: launched 2026-04-24; input cache hits cut to a tenth on 2026-04-26
/// at 12:15 UTC. V4 Pro's launch discount (75%) became its list price on 2026-05-22; the days
/// before the discount began are priced at it too.
const V4_FLASH: R = icr("0.14", "0.028", "0.28");
const V4_FLASH_CACHE_CUT: R = icr("0.14", "0.0028", "0.28");
const CACHE_CUT: &str = "2026-04-26T12:15Z";

pub(super) static MODELS: &[Entry] = &[
    m("deepseek/deepseek-v4-flash", &[], HISTORY, V4_FLASH)
        .changes(&[from(CACHE_CUT, V4_FLASH_CACHE_CUT)]),
    m(
        "deepseek/deepseek-v4-pro",
        &[],
        HISTORY,
        icr("0.435", "0.03625", "0.87"),
    )
    .changes(&[from(CACHE_CUT, icr("0.435", "0.003625", "0.87"))]),
    // deepseek-chat: V3 (with 50% off 16:30-00:30 UTC), V3.1 from 2025-09-05 16:00 UTC (no more
    // off-peak prices), V3.2 from 2025-09-29, V4 Flash's non-thinking mode from 2026-04-24
    // (the name was retired after 2026-07-24).
    m(
        "deepseek/deepseek-chat",
        &["deepseek/deepseek-v3"],
        HISTORY,
        icr("0.27", "0.07", "1.1"),
    )
    .first(p(icr("0.27", "0.07", "1.1")).daily(&[daily(
        "16:30",
        "00:30",
        icr("0.135", "0.035", "0.55"),
    )]))
    .changes(&[
        from("2025-09-05T16:00Z", icr("0.56", "0.07", "1.68")),
        from("2025-09-29", icr("0.28", "0.028", "0.42")),
        from("2026-04-24", V4_FLASH),
        from(CACHE_CUT, V4_FLASH_CACHE_CUT),
    ]),
    // deepseek-reasoner: R1 (75% off 16:30-00:30 UTC), then as deepseek-chat (thinking mode).
    // `deepseek/deepseek-r1` follows the data set's DeepSeek entry, which matches every id
    // starting `deepseek-r1` here, so `deepseek-r1-0528` (its date removed) and OpenRouter's
    // `deepseek/deepseek-r1-0528` are priced as DeepSeek's API prices R1, not as a host does.
    m(
        "deepseek/deepseek-reasoner",
        &["deepseek/deepseek-r1"],
        HISTORY,
        icr("0.55", "0.14", "2.19"),
    )
    .first(p(icr("0.55", "0.14", "2.19")).daily(&[daily(
        "16:30",
        "00:30",
        icr("0.135", "0.035", "0.55"),
    )]))
    .changes(&[
        from("2025-09-05T16:00Z", icr("0.56", "0.07", "1.68")),
        from("2025-09-29", icr("0.28", "0.028", "0.42")),
        from("2026-04-24", V4_FLASH),
        from(CACHE_CUT, V4_FLASH_CACHE_CUT),
    ]),
    // DeepSeek-R1 as Amazon Bedrock sells it, under its Bedrock id (`deepseek.r1-v1:0`,
    // matched as `bedrock/deepseek.r1-v1` before `deepseek/deepseek-r1`): the data set's `aws`
    // figures.
    m(
        "bedrock/deepseek.r1-v1",
        &[],
        data_set("https://aws.amazon.com/bedrock/pricing/"),
        io("1.35", "5.4"),
    )
    .over(&["deepseek/deepseek-reasoner"]),
    // DeepSeek-R1 on Azure AI Foundry (`azure.ai.inference`, `DeepSeek-R1`), kept at the
    // price this table gave it before R1's Bedrock entry had an id of its own. Departs from
    // the data set, which has no Azure price for it and so prices it as deepseek-reasoner.
    m(
        "azure/deepseek-r1",
        &[],
        departs(
            "https://learn.microsoft.com/azure/ai-studio/how-to/deploy-models-deepseek",
            "Bedrock's DeepSeek-R1 price ($1.35 / $5.40), which this table gave Azure's too; \
             no Azure page was read; the genai-prices data set (47df840, 2026-08-21) has no \
             Azure price and prices it as deepseek-reasoner",
        ),
        io("1.35", "5.4"),
    )
    .over(&["deepseek/deepseek-reasoner"]),
    m(
        "deepseek/deepseek-v3.2",
        &[],
        PRICING,
        io("0.2288", "0.3432"),
    ),
    // V3.2's experimental release had prices of its own; without this entry its id, with
    // `-exp` removed, would be priced as V3.2.
    m(
        "deepseek/deepseek-v3.2-exp",
        &[],
        PRICING,
        io("0.27", "0.41"),
    )
    .over(&["deepseek/deepseek-v3.2"]),
    m(
        "deepseek/deepseek-v3.1-terminus",
        &[],
        PRICING,
        icr("0.27", "0.13", "0.95"),
    ),
];
