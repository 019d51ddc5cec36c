//! OpenAI. Web search: $10 per 1000 tool calls for GPT-5 and o-series models, $25 for GPT-4o
//! and GPT-4.1 (search-context fee included in the call's tokens).
//!
//! Not priced (their spans stay unpriced): the realtime, audio and transcription models
//! (`gpt-realtime*`, `gpt-4o-realtime-preview`, `gpt-4o-mini-realtime-preview`, `gpt-audio*`,
//! `gpt-4o-audio-preview`, `gpt-4o-mini-audio-preview`, `gpt-4o-transcribe`,
//! `gpt-4o-mini-transcribe`): audio tokens are most of what they bill, are not counted apart
//! from text, and cost 2.4 to 17 times as much (the data set gives the two audio previews no
//! audio price at all), so billed as text they would be undercharged. Nor `gpt-image-1.5`,
//! whose image output has a price apart from its text output.

use super::*;

/// OpenAI's pricing page.
const PRICING: Src = data_set("https://developers.openai.com/api/docs/pricing");

/// Ids OpenAI's API does not sell: the open-weight gpt-oss models at hosted providers' prices
/// and OpenRouter's GPT-5 image and gpt-4o:extended ids, as the data set lists them under OpenAI.
const DATA_SET: Src = data_set(
    "https://github.com/pydantic/genai-prices/blob/47df840a5ab10bbcffb8e5ac01b9899032245d1b/prices/new_data/v2/data.json",
);

/// Amazon Bedrock's pricing page, for OpenAI's models under their Bedrock ids.
const BEDROCK: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

pub(super) static MODELS: &[Entry] = &[
    // GPT-5.6 (limited preview 2026-06-26, broad access 2026-07-09). Cache writes are billed at
    // 1.25x input. Above 272K input tokens the whole call is at 2x input and cache, 1.5x output.
    tiered(
        "openai/gpt-5.6-sol",
        &["openai/gpt-5.6"],
        data_set("https://developers.openai.com/api/docs/models/gpt-5.6-sol"),
        icr("5", "0.5", "30").cache_write("6.25").search("0.01"),
        272_000,
        icr("10", "1", "45").cache_write("12.5"),
    ),
    // OpenAI cut Terra's prices by 20% on 2026-07-30.
    tiered(
        "openai/gpt-5.6-terra",
        &[],
        data_set("https://developers.openai.com/api/docs/models/gpt-5.6-terra"),
        icr("2.5", "0.25", "15").cache_write("3.125").search("0.01"),
        272_000,
        icr("5", "0.5", "22.5").cache_write("6.25"),
    )
    .changes(&[from(
        "2026-07-30",
        icr("2", "0.2", "12").cache_write("2.5").search("0.01"),
    )
    .above(272_000, icr("4", "0.4", "18").cache_write("5"))]),
    // OpenAI cut Luna's prices by 80% on 2026-07-30.
    tiered(
        "openai/gpt-5.6-luna",
        &[],
        data_set("https://developers.openai.com/api/docs/models/gpt-5.6-luna"),
        icr("1", "0.1", "6").cache_write("1.25").search("0.01"),
        272_000,
        icr("2", "0.2", "9").cache_write("2.5"),
    )
    .changes(&[from(
        "2026-07-30",
        icr("0.2", "0.02", "1.2").cache_write("0.25").search("0.01"),
    )
    .above(272_000, icr("0.4", "0.04", "1.8").cache_write("0.5"))]),
    m(
        "openai/gpt-5.5",
        &[
            "openai/gpt-5.5-chat",
            "openai/gpt-5.5-chat-latest",
            "openai/gpt-5.5-codex",
        ],
        PRICING,
        icr("5", "0.5", "30").search("0.01"),
    ),
    m(
        "openai/gpt-5.5-pro",
        &[],
        PRICING,
        io("30", "180").search("0.01"),
    ),
    tiered(
        "openai/gpt-5.4",
        &[],
        PRICING,
        icr("2.5", "0.25", "15").search("0.01"),
        272_000,
        icr("5", "0.5", "22.5"),
    ),
    tiered(
        "openai/gpt-5.4-pro",
        &[],
        PRICING,
        io("30", "180").search("0.01"),
        272_000,
        io("60", "270"),
    ),
    m(
        "openai/gpt-5.4-mini",
        &[],
        PRICING,
        icr("0.75", "0.075", "4.5").search("0.01"),
    ),
    m(
        "openai/gpt-5.4-nano",
        &[],
        PRICING,
        icr("0.2", "0.02", "1.25").search("0.01"),
    ),
    m(
        "openai/gpt-5.3",
        &["openai/gpt-5.3-chat", "openai/gpt-5.3-chat-latest"],
        PRICING,
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m(
        "openai/gpt-5.3-codex",
        &[],
        PRICING,
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m(
        "openai/gpt-5.2",
        &[
            "openai/gpt-5.2-chat",
            "openai/gpt-5.2-chat-latest",
            "openai/gpt-5.2-codex",
        ],
        PRICING,
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m(
        "openai/gpt-5.2-pro",
        &[],
        PRICING,
        io("21", "168").search("0.01"),
    ),
    m(
        "openai/gpt-5.1",
        &[
            "openai/gpt-5.1-codex",
            "openai/gpt-5.1-codex-max",
            "openai/gpt-5.1-chat",
            "openai/gpt-5.1-chat-latest",
        ],
        PRICING,
        icr("1.25", "0.125", "10").search("0.01"),
    ),
    m(
        "openai/gpt-5.1-codex-mini",
        &["openai/gpt-5.1-mini"],
        PRICING,
        icr("0.25", "0.025", "2").search("0.01"),
    ),
    m(
        "openai/gpt-5",
        &[
            "openai/gpt-5-codex",
            "openai/gpt-5-chat",
            "openai/gpt-5-chat-latest",
        ],
        PRICING,
        icr("1.25", "0.125", "10").search("0.01"),
    ),
    m(
        "openai/gpt-5-mini",
        &[],
        PRICING,
        icr("0.25", "0.025", "2").search("0.01"),
    ),
    m(
        "openai/gpt-5-nano",
        &[],
        PRICING,
        icr("0.05", "0.005", "0.4").search("0.01"),
    ),
    m(
        "openai/gpt-5-pro",
        &[],
        PRICING,
        io("15", "120").search("0.01"),
    ),
    // The rolling ChatGPT model; the data set took these figures from OpenRouter.
    m(
        "openai/gpt-chat-latest",
        &[],
        PRICING,
        icr("5", "0.5", "30"),
    ),
    m(
        "openai/gpt-4.1",
        &[],
        PRICING,
        icr("2", "0.5", "8").search("0.025"),
    ),
    m(
        "openai/gpt-4.1-mini",
        &[],
        PRICING,
        icr("0.4", "0.1", "1.6").search("0.025"),
    ),
    m(
        "openai/gpt-4.1-nano",
        &[],
        PRICING,
        icr("0.1", "0.025", "0.4").search("0.025"),
    ),
    // Its snapshots after the first, which kept its own launch price (next entry).
    m(
        "openai/gpt-4o",
        &["openai/gpt-4o-2024-08-06", "openai/gpt-4o-2024-11-20"],
        PRICING,
        icr("2.5", "1.25", "10").search("0.025"),
    ),
    // Departs from the data set, which matches this snapshot to gpt-4o ($2.50 / $10): OpenAI's
    // pricing page lists gpt-4o-2024-05-13 at its own launch price, $5 / $15, without a cached
    // input price.
    m(
        "openai/gpt-4o-2024-05-13",
        &[],
        departs(
            "https://developers.openai.com/api/docs/pricing",
            "OpenAI's price for this snapshot ($5 / $15), not re-read for this revision; the \
             genai-prices data set (47df840, 2026-08-21) prices it as gpt-4o ($2.50 / $10)",
        ),
        io("5", "15"),
    )
    .over(&["openai/gpt-4o"]),
    m(
        "openai/gpt-4o-mini",
        &[
            "openai/gpt-4o-mini-2024-07-18",
            "openai/gpt-4o-mini-search-preview",
        ],
        PRICING,
        icr("0.15", "0.075", "0.6").search("0.025"),
    ),
    m(
        "openai/gpt-4o-search-preview",
        &[],
        PRICING,
        io("2.5", "10"),
    ),
    m("openai/chatgpt-4o-latest", &[], PRICING, io("5", "15")),
    // o3 launched at $10 / $40 and was cut by 80% on 2025-06-10.
    m(
        "openai/o3",
        &[],
        PRICING,
        icr("10", "0.5", "40").search("0.01"),
    )
    .changes(&[from("2025-06-10", icr("2", "0.5", "8").search("0.01"))]),
    m("openai/o3-pro", &[], PRICING, io("20", "80").search("0.01")),
    m(
        "openai/o3-mini",
        &["openai/o3-mini-high"],
        PRICING,
        icr("1.1", "0.55", "4.4"),
    ),
    m(
        "openai/o4-mini",
        &["openai/o4-mini-high"],
        PRICING,
        icr("1.1", "0.275", "4.4").search("0.01"),
    ),
    m(
        "openai/o3-deep-research",
        &[],
        PRICING,
        icr("10", "2.5", "40"),
    ),
    m(
        "openai/o4-mini-deep-research",
        &[],
        PRICING,
        icr("2", "0.5", "8"),
    ),
    m(
        "openai/o1",
        &["openai/o1-preview"],
        PRICING,
        icr("15", "7.5", "60"),
    ),
    m("openai/o1-mini", &[], PRICING, icr("1.1", "0.55", "4.4")),
    m("openai/o1-pro", &[], PRICING, io("150", "600")),
    m(
        "openai/codex-mini",
        &["openai/codex-mini-latest"],
        PRICING,
        icr("1.5", "0.375", "6"),
    ),
    m(
        "openai/gpt-4.5-preview",
        &[],
        PRICING,
        icr("75", "37.5", "150"),
    ),
    m("openai/computer-use-preview", &[], PRICING, io("3", "12")),
    // Image generation: every output token is an image token, billed at the output price (the
    // tokens an image takes depend on its size and quality, so images are not billed apart).
    // Image input tokens (edits; $10, $2.50 and $8 per 1M, cached $2.50, $0.25 and $2) are not
    // modelled: they are billed at the text input and cached input prices. Not gpt-image-1.5,
    // whose output has a text price and an image price of its own (unpriced).
    m(
        "openai/gpt-image-1",
        &[],
        data_set("https://developers.openai.com/api/docs/models/gpt-image-1"),
        icr("5", "1.25", "40"),
    ),
    m(
        "openai/gpt-image-1-mini",
        &[],
        data_set("https://developers.openai.com/api/docs/models/gpt-image-1-mini"),
        icr("2", "0.2", "8"),
    ),
    m(
        "openai/gpt-image-2",
        &["openai/gpt-image-2-2026-04-21"],
        data_set("https://developers.openai.com/api/docs/models/gpt-image-2"),
        icr("5", "1.25", "30"),
    ),
    // Text to speech: text input, and output that is all audio tokens, at the data set's
    // output price ($12 per 1M).
    m("openai/gpt-4o-mini-tts", &[], PRICING, io("0.6", "12")),
    m(
        "openai/gpt-4-turbo",
        &[
            "openai/gpt-4-turbo-2024-04-09",
            "openai/gpt-4-turbo-preview",
            "openai/gpt-4-0125-preview",
            "openai/gpt-4-1106-preview",
            "openai/gpt-4-vision-preview",
            "openai/gpt-4-1106-vision-preview",
        ],
        PRICING,
        io("10", "30"),
    )
    .over(&["openai/gpt-4"]),
    m(
        "openai/gpt-4",
        &["openai/gpt-4-0613", "openai/gpt-4-0314"],
        PRICING,
        io("30", "60"),
    ),
    m(
        "openai/gpt-4-32k",
        &["openai/gpt-4-32k-0613", "openai/gpt-4-32k-0314"],
        data_set("https://help.openai.com/en/articles/7127956-how-much-does-gpt-4-cost"),
        io("60", "120"),
    ),
    m(
        "openai/gpt-3.5-turbo",
        &["openai/gpt-3.5-turbo-0125"],
        PRICING,
        io("0.5", "1.5"),
    ),
    // Older gpt-3.5-turbo snapshots kept their own prices.
    m("openai/gpt-3.5-turbo-1106", &[], PRICING, io("1", "2")).over(&["openai/gpt-3.5-turbo"]),
    m(
        "openai/gpt-3.5-turbo-0613",
        &["openai/gpt-3.5-turbo-0301"],
        PRICING,
        io("1.5", "2"),
    )
    .over(&["openai/gpt-3.5-turbo"]),
    m(
        "openai/gpt-3.5-turbo-16k",
        &["openai/gpt-3.5-turbo-16k-0613"],
        PRICING,
        io("3", "4"),
    ),
    m(
        "openai/gpt-3.5-turbo-instruct",
        &["openai/gpt-3.5-turbo-instruct-0914"],
        PRICING,
        io("1.5", "2"),
    ),
    // Open-weight: OpenAI sells no API for them; these are the data set's figures.
    m("openai/gpt-oss-120b", &[], DATA_SET, io("0.039", "0.18")),
    m("openai/gpt-oss-20b", &[], DATA_SET, io("0.029", "0.14")),
    m(
        "openai/gpt-oss-safeguard-20b",
        &[],
        DATA_SET,
        icr("0.075", "0.037", "0.3"),
    ),
    // On Amazon Bedrock: `openai.gpt-oss-120b-1:0` is read as `openai/gpt-oss-120b-1`.
    m("openai/gpt-oss-120b-1", &[], BEDROCK, io("0.15", "0.6")),
    m("openai/gpt-oss-20b-1", &[], BEDROCK, io("0.07", "0.3")),
    // GPT-5.4 and later on Amazon Bedrock, at the data set's `aws` prices, which follow it:
    // 10% above OpenAI's, no web search price, cache writes at 1.25x input only where Bedrock
    // prices them, and a long-context tier (above 272K input tokens, as at OpenAI) only for
    // Sol, and for Terra and Luna from Bedrock's 2026-07-30 cut (the data set's notes say calls
    // that long were possible from 2026-08-03). Keyed by Bedrock's ids, which matching tries
    // before OpenAI's (`openai.gpt-5.4` -> `bedrock/openai.gpt-5.4`, then `openai/gpt-5.4`).
    tiered(
        "bedrock/openai.gpt-5.6-sol",
        &[],
        BEDROCK,
        icr("5.5", "0.55", "33").cache_write("6.875"),
        272_000,
        icr("11", "1.1", "49.5").cache_write("13.75"),
    )
    .over(&["openai/gpt-5.6-sol"]),
    m(
        "bedrock/openai.gpt-5.6-terra",
        &[],
        BEDROCK,
        icr("2.75", "0.275", "16.5").cache_write("3.4375"),
    )
    .changes(&[
        from("2026-07-30", icr("2.2", "0.22", "13.2").cache_write("2.75"))
            .above(272_000, icr("4.4", "0.44", "19.8").cache_write("5.5")),
    ])
    .over(&["openai/gpt-5.6-terra"]),
    m(
        "bedrock/openai.gpt-5.6-luna",
        &[],
        BEDROCK,
        icr("1.1", "0.11", "6.6").cache_write("1.375"),
    )
    .changes(&[from(
        "2026-07-30",
        icr("0.22", "0.022", "1.32").cache_write("0.275"),
    )
    .above(272_000, icr("0.44", "0.044", "1.98").cache_write("0.55"))])
    .over(&["openai/gpt-5.6-luna"]),
    m(
        "bedrock/openai.gpt-5.5",
        &[],
        BEDROCK,
        icr("5.5", "0.55", "33"),
    )
    .over(&["openai/gpt-5.5"]),
    m(
        "bedrock/openai.gpt-5.4",
        &[],
        BEDROCK,
        icr("2.75", "0.275", "16.5"),
    )
    .over(&["openai/gpt-5.4"]),
    // OpenRouter's GPT-5 with image generation. The data set gives no image-output price apart:
    // output tokens, images included, are billed at the output price.
    m("openai/gpt-5-image", &[], DATA_SET, icr("10", "1.25", "10")),
    m(
        "openai/gpt-5-image-mini",
        &[],
        DATA_SET,
        icr("2.5", "0.25", "2"),
    ),
    m("openai/gpt-5.4-image-2", &[], DATA_SET, icr("8", "2", "15")),
    // OpenRouter's extended-output gpt-4o.
    m("openai/gpt-4o:extended", &[], DATA_SET, io("6", "18")),
    // Fine-tuned models (`ft:<base>:...`, matched as `openai/ft:<base>`), at the data set's
    // prices for them: input and output only, so cached input is billed at the input price
    // (the data set gives none). Only the base models OpenAI fine-tunes that the data set
    // prices: another base model's fine-tunes stay unpriced rather than priced as the base.
    m(
        "openai/ft:gpt-4o-2024-08-06",
        &[],
        PRICING,
        io("3.75", "15"),
    ),
    m(
        "openai/ft:gpt-4o-mini-2024-07-18",
        &[],
        PRICING,
        io("0.3", "1.2"),
    ),
    m(
        "openai/ft:gpt-3.5-turbo",
        &[
            "openai/ft:gpt-3.5-turbo-0125",
            "openai/ft:gpt-3.5-turbo-1106",
            "openai/ft:gpt-3.5-turbo-0613",
        ],
        PRICING,
        io("3", "6"),
    ),
    // The data set prices these at gpt-4's prices.
    m("openai/ft:gpt-4-0613", &[], PRICING, io("30", "60")),
    m("openai/text-embedding-3-small", &[], PRICING, emb("0.02")),
    m("openai/text-embedding-3-large", &[], PRICING, emb("0.13")),
    m(
        "openai/text-embedding-ada-002",
        &[
            "openai/text-embedding-ada-002-v2",
            "openai/text-embedding-ada",
        ],
        PRICING,
        emb("0.1"),
    ),
];
