//! Tests of the genai-prices reader: the formats, broken files, and the data set itself.

use std::sync::OnceLock;

use crate::ingest::wire::Usage;
use crate::pricing::{format_money, parse_instant, PriceTable, Pricer};

/// A small file in the shape of genai-prices `v2` `data.json`, written for these tests.
const FILE: &str = r#"[
 {"id": "anthropic", "name": "Anthropic", "api_pattern": "https://api\\.anthropic\\.com",
  "pricing_urls": ["https://www.anthropic.com/pricing#api"],
  "model_match": {"contains": "claude"}, "provider_match": {"contains": "anthropic"},
  "extractors": [{"root": "usage", "mappings": []}],
  "models": [
   {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "context_window": 1000000,
"match": {"or": [{"starts_with": "claude-sonnet-4-5"}, {"starts_with": "claude-sonnet-4.5"}]},
"prices": {"input_mtok": {"base": 3, "tiers": [{"start": 200000, "price": 6}]},
           "cache_write_mtok": {"base": 3.75, "tiers": [{"start": 200000, "price": 7.5}]},
           "cache_read_mtok": {"base": 0.3, "tiers": [{"start": 200000, "price": 0.6}]},
           "output_mtok": {"base": 15, "tiers": [{"start": 200000, "price": 22.5}]},
           "cache_write_1h_mtok": 6, "web_searches_kcount": 10}},
   {"id": "claude-sonnet-5", "match": {"starts_with": "claude-sonnet-5"},
"prices": [{"prices": {"input_mtok": 2, "output_mtok": 10}},
           {"constraint": {"start_date": "2026-09-01"}, "prices": {"input_mtok": 3, "output_mtok": 15}}]}
  ]},
 {"id": "openai", "name": "OpenAI", "api_pattern": "x",
  "model_match": {"or": [{"starts_with": "gpt-"}, {"regex": "^o[134]"}]},
  "provider_match": {"contains": "openai"},
  "models": [
   {"id": "gpt-5.6-luna",
"match": {"or": [{"equals": "gpt-5.6-luna"}, {"regex": "^gpt-5\\.6-luna-\\d{4}-\\d{2}-\\d{2}$"}]},
"prices": [{"prices": {"input_mtok": {"base": 1, "tiers": [{"start": 272000, "price": 2}]},
                       "output_mtok": {"base": 6, "tiers": [{"start": 272000, "price": 9}]}}},
           {"constraint": {"start_date": "2026-07-30"},
            "prices": {"input_mtok": {"base": 0.2, "tiers": [{"start": 272000, "price": 0.4}]},
                       "output_mtok": {"base": 1.2, "tiers": [{"start": 272000, "price": 1.8}]}}}]},
   {"id": "o3", "match": {"equals": "o3"},
"prices": {"input_mtok": 2, "output_mtok": 8, "output_reasoning_mtok": 4}},
   {"id": "gpt-4o-realtime", "match": {"starts_with": "gpt-4o-realtime"},
"prices": {"input_mtok": 5, "output_mtok": 20, "input_audio_mtok": 40, "output_audio_mtok": 80}},
   {"id": "speech", "match": {"ends_with": "-tts"}, "prices": {"input_mchars": 15}},
   {"id": "moderation", "match": {"contains": "moderation"}, "prices": {}},
   {"id": "stepped", "match": {"equals": "gpt-stepped"},
"prices": {"input_mtok": {"base": 1, "tiers": [{"start": 2000, "price": 3}, {"start": 1000, "price": 2}]},
           "output_mtok": {"base": 10, "tiers": [{"start": 1500, "price": 20}]}}}
  ]},
 {"id": "deepseek", "name": "DeepSeek", "api_pattern": "x", "model_match": {"starts_with": "deepseek"},
  "models": [
   {"id": "deepseek-chat", "match": {"starts_with": "deepseek-chat"},
"prices": [{"prices": {"input_mtok": 0.135, "output_mtok": 0.55}},
           {"constraint": {"start_time": "00:30:00Z", "end_time": "16:30:00Z"},
            "prices": {"input_mtok": 0.27, "output_mtok": 1.1}}]}
  ]},
 {"id": "azure", "name": "Azure", "api_pattern": "x", "fallback_model_providers": ["openai"],
  "models": [{"id": "gpt-4o", "match": {"equals": "gpt-4o"}, "prices": {"input_mtok": 2.75, "output_mtok": 11}}]},
 {"id": "perplexity", "name": "Perplexity", "api_pattern": "x",
  "models": [{"id": "sonar", "match": {"equals": "sonar"},
          "prices": {"input_mtok": 1, "output_mtok": 1, "requests_kcount": 5}}]},
 {"id": "x-ai", "name": "xAI", "api_pattern": "x", "model_match": {"contains": "grok"},
  "provider_match": {"equals": "xai"},
  "models": [{"id": "grok-4.5", "match": {"and": [{"starts_with": "grok-4.5"}, {"ends_with": "-latest"}]},
          "prices": {"input_mtok": 2, "cache_read_mtok": 0.5, "output_mtok": 6}}]}
]"#;

fn table() -> &'static PriceTable {
    static T: OnceLock<PriceTable> = OnceLock::new();
    T.get_or_init(|| PriceTable::with_overrides(FILE, "genai.json").unwrap())
}

/// One call: provider, model, usage as (input, cached, cache write, output, reasoning,
/// requests), start time.
type Call<'a> = (Option<&'a str>, &'a str, [Option<u64>; 6], &'a str);

/// Prices a call: `id column=USD ... total=USD` (non-null columns), or `unknown`.
fn priced((provider, model, u, at): Call) -> String {
    let usage = Usage {
        input_tokens: u[0],
        cached_input_tokens: u[1],
        cache_write_input_tokens: u[2],
        output_tokens: u[3],
        reasoning_tokens: u[4],
        request_count: u[5],
        ..Usage::default()
    };
    priced_in(table(), provider, model, &usage, at)
}

/// [`priced`] in any table, with any usage.
fn priced_in(
    table: &PriceTable,
    provider: Option<&str>,
    model: &str,
    usage: &Usage,
    at: &str,
) -> String {
    let at = parse_instant(at).unwrap();
    match Pricer::new().price(table, provider, Some(model), Some(usage), at) {
        Ok(None) => "unknown".into(),
        Err(e) => format!("error: {e}"),
        Ok(Some(p)) => {
            let names = [
                "prompt",
                "completion",
                "request",
                "image",
                "web_search",
                "internal_reasoning",
                "cache_read",
                "cache_write",
            ];
            let mut s = p.model_id.to_string();
            for (n, v) in names.iter().zip(p.costs.dimensions()) {
                if let Some(v) = v {
                    s += &format!(" {n}={}", format_money(v));
                }
            }
            s + &format!(" total={}", format_money(p.costs.total.unwrap()))
        }
    }
}

#[test]
fn a_hand_written_file_prices_as_genai_prices_means() {
    let n = None;
    let cases: &[(Call, &str)] = &[
        // Tier by input tokens (input + cache writes), whole call at the tier rate.
        (
            (Some("anthropic.messages"), "claude-sonnet-4-5-20250929", [Some(200_000), n, n, Some(1000), n, n], "2026-11-24"),
            "anthropic/claude-sonnet-4-5 prompt=0.6000000000 completion=0.0150000000 total=0.6150000000",
        ),
        (
            (Some("anthropic.messages"), "claude-sonnet-4-5-20250929", [Some(199_999), Some(50_000), Some(2), Some(1000), n, n], "2026-11-24"),
            "anthropic/claude-sonnet-4-5 prompt=0.8999940000 completion=0.0225000000 cache_read=0.0300000000 cache_write=0.0000150000 total=0.9525090000",
        ),
        // A start date: 2 before 2026-09-01, 3 from then.
        ((None, "claude-sonnet-5", [Some(1_000_000), n, n, n, n, n], "2026-08-31T23:59:59Z"),
         "anthropic/claude-sonnet-5 prompt=2.0000000000 total=2.0000000000"),
        ((None, "claude-sonnet-5", [Some(1_000_000), n, n, n, n, n], "2026-09-01"),
         "anthropic/claude-sonnet-5 prompt=3.0000000000 total=3.0000000000"),
        // Dated and tiered: Luna after the cut, above 272k.
        ((Some("openai"), "gpt-5.6-luna-2026-07-13", [Some(300_000), n, n, Some(1000), n, n], "2026-07-30"),
         "openai/gpt-5.6-luna prompt=0.1200000000 completion=0.0018000000 total=0.1218000000"),
        ((Some("openai"), "gpt-5.6-luna", [Some(300_000), n, n, Some(1000), n, n], "2026-07-29"),
         "openai/gpt-5.6-luna prompt=0.6000000000 completion=0.0090000000 total=0.6090000000"),
        // Two tiers on one field, another field tiered elsewhere: above 1000 input 2,
        // above 1500 output 20, above 2000 input 3.
        ((None, "gpt-stepped", [Some(1500), n, n, Some(1000), n, n], "2026-11-24"),
         "openai/stepped prompt=0.0030000000 completion=0.0100000000 total=0.0130000000"),
        ((None, "gpt-stepped", [Some(1501), n, n, Some(1000), n, n], "2026-11-24"),
         "openai/stepped prompt=0.0030020000 completion=0.0200000000 total=0.0230020000"),
        ((None, "gpt-stepped", [Some(2001), n, n, Some(1000), n, n], "2026-11-24"),
         "openai/stepped prompt=0.0060030000 completion=0.0200000000 total=0.0260030000"),
        // No cache prices: cached and cache-write tokens cost the input price; reasoning
        // has its own price.
        ((Some("openai.responses"), "o3", [Some(1000), Some(400), Some(100), Some(1000), Some(300), n], "2026-11-24"),
         "openai/o3 prompt=0.0012000000 completion=0.0056000000 internal_reasoning=0.0012000000 cache_read=0.0008000000 cache_write=0.0002000000 total=0.0090000000"),
        // Daily window (UTC): standard 00:30-16:30, off-peak otherwise.
        ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T00:29:59Z"),
         "deepseek/deepseek-chat prompt=0.1350000000 total=0.1350000000"),
        ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T00:30:00Z"),
         "deepseek/deepseek-chat prompt=0.2700000000 total=0.2700000000"),
        ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T16:30:00Z"),
         "deepseek/deepseek-chat prompt=0.1350000000 total=0.1350000000"),
        // Provider by id; a model it lacks comes from its fallback provider.
        ((Some("azure"), "gpt-4o", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
         "azure/gpt-4o prompt=2.7500000000 total=2.7500000000"),
        ((Some("azure"), "o3", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
         "openai/o3 prompt=2.0000000000 total=2.0000000000"),
        // A provider whose first dot-segment names a provider without the model: the
        // provider its `provider_match` finds, as genai-prices looks it up (`openai` contains
        // `openai`).
        ((Some("deepseek.openai"), "omni-moderation-latest", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "openai/moderation total=0.0000000000"),
        // Per 1000 requests: 5 / 1000 = 0.005 a request; requestCount 3.
        ((Some("perplexity"), "sonar", [Some(1000), n, n, n, n, Some(3)], "2026-11-24"),
         "perplexity/sonar prompt=0.0010000000 request=0.0150000000 total=0.0160000000"),
        // provider_match `equals`, an `and` clause.
        ((Some("xai"), "grok-4.5-latest", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
         "x-ai/grok-4.5 prompt=2.0000000000 total=2.0000000000"),
        // LiteLLM's provider prefix; an OpenRouter-style id found through its vendor.
        ((Some("litellm"), "openai/o3", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "openai/o3 prompt=0.0020000000 total=0.0020000000"),
        ((None, "anthropic/claude-sonnet-4.5", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "anthropic/claude-sonnet-4-5 prompt=0.0030000000 total=0.0030000000"),
        // Partly representable: priced with the prices it has (and reported).
        ((Some("openai"), "gpt-4o-realtime-preview", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "openai/gpt-4o-realtime prompt=0.0050000000 total=0.0050000000"),
        // A free model is known (total 0); one left out is not priced at 0.
        ((Some("openai"), "omni-moderation-latest", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "openai/moderation total=0.0000000000"),
        ((Some("openai"), "gpt-9-tts", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "unknown"),
        // Left out of the file, but in the built-in table: priced from there.
        ((Some("openai"), "gpt-4o-mini-tts", [Some(1000), n, n, n, n, n], "2026-11-24"),
         "openai/gpt-4o-mini-tts prompt=0.0006000000 total=0.0006000000"),
        // Not in the file: the built-in table prices it.
        ((Some("openai"), "gpt-4.1", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
         "openai/gpt-4.1 prompt=2.0000000000 total=2.0000000000"),
    ];
    for (call, want) in cases {
        assert_eq!(priced(*call), *want, "{call:?}");
    }
    assert_eq!(
        table().notes(),
        [
            "anthropic/claude-sonnet-4-5: not representable: cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes)",
            "openai/gpt-4o-realtime: not representable: input_audio_mtok (counted in inputTokens: billed as input), output_audio_mtok (counted in outputTokens: billed as output)",
            "openai/speech: not representable: input_mchars; nothing else priced, left out",
        ]
    );
}

/// The v2 schema's parts of a price (`*_text_*`, `cache_write_5m_mtok`) and image output,
/// on the v1 counts: a whole's field prices its dimension, a part's only where the whole's
/// is absent, and the parts the whole covers are reported; image output is billed per
/// image when the built-in model of the id gives the tokens per image, else reported.
#[test]
fn parts_of_a_price_and_image_output_map_onto_the_v1_counts() {
    let file = r#"[
 {"id": "google", "name": "Google", "api_pattern": "x", "model_match": {"starts_with": "gemini"},
  "models": [
   {"id": "gemini-2.5-flash-image", "match": {"starts_with": "gemini-2.5-flash-image"},
"prices": [{"prices": {"input_mtok": 0.3, "output_mtok": 2.5, "output_image_mtok": 30}},
           {"constraint": {"start_date": "2026-09-01"},
            "prices": {"input_mtok": 0.3, "output_mtok": 2.5,
                       "output_image_mtok": {"base": 36, "tiers": [{"start": 200000, "price": 72}]}}}]},
   {"id": "gemini-9-image", "match": {"equals": "gemini-9-image"},
"prices": {"input_mtok": 1, "output_mtok": 4, "output_image_mtok": 40}},
   {"id": "gemini-9-text", "match": {"equals": "gemini-9-text"},
"prices": {"input_text_mtok": 1, "output_text_mtok": 5, "cache_text_read_mtok": 0.1,
           "cache_text_write_mtok": 1.25, "output_text_reasoning_mtok": 3}},
   {"id": "gemini-9-both", "match": {"equals": "gemini-9-both"},
"prices": {"input_text_mtok": 1, "input_mtok": 2, "output_mtok": 8, "output_text_mtok": 6,
           "cache_read_mtok": 0.2, "cache_text_read_mtok": 0.1, "cache_write_mtok": 2.5,
           "cache_write_5m_mtok": 2.5, "cache_write_1h_mtok": 4, "output_reasoning_mtok": 8,
           "output_text_reasoning_mtok": 7}},
   {"id": "gemini-9-ttl", "match": {"equals": "gemini-9-ttl"},
"prices": {"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3,
           "cache_write_5m_mtok": 3.75, "cache_write_1h_mtok": 6}}
  ]}
]"#;
    let t = PriceTable::with_overrides(file, "v2.json").unwrap();
    let usage = |u: [u64; 6], images: u64| Usage {
        input_tokens: Some(u[0]),
        cached_input_tokens: Some(u[1]),
        cache_write_input_tokens: Some(u[2]),
        output_tokens: Some(u[3]),
        reasoning_tokens: Some(u[4]),
        image_count: Some(images),
        request_count: Some(u[5]),
        ..Usage::default()
    };
    let g = Some("google");
    let cases: &[(&str, Usage, &str, &str)] = &[
        // 2000 output tokens of which one image of the built-in's 1290 tokens: text
        // 710 x 2.5e-6, the image 1290 x 30e-6.
        ("gemini-2.5-flash-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-08-31",
         "google/gemini-2.5-flash-image prompt=0.0003000000 completion=0.0017750000 image=0.0387000000 total=0.0407750000"),
        // From 2026-09-01 the image is 1290 x 36e-6, above 200k input 1290 x 72e-6.
        ("gemini-2.5-flash-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-09-01",
         "google/gemini-2.5-flash-image prompt=0.0003000000 completion=0.0017750000 image=0.0464400000 total=0.0485150000"),
        ("gemini-2.5-flash-image", usage([200_001, 0, 0, 1290, 0, 1], 1), "2026-09-01",
         "google/gemini-2.5-flash-image prompt=0.0600003000 image=0.0928800000 total=0.1528803000"),
        // Tokens per image unknown: all output at the output price (reported below).
        ("gemini-9-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-08-31",
         "google/gemini-9-image prompt=0.0010000000 completion=0.0080000000 total=0.0090000000"),
        // Only parts: they price the v1 counts. 600 x 1e-6, 700 x 5e-6, 300 x 3e-6,
        // 400 x 0.1e-6, 100 x 1.25e-6.
        ("gemini-9-text", usage([1000, 400, 100, 1000, 300, 1], 0), "2026-08-31",
         "google/gemini-9-text prompt=0.0006000000 completion=0.0035000000 internal_reasoning=0.0009000000 cache_read=0.0000400000 cache_write=0.0001250000 total=0.0051650000"),
        // Wholes and parts: the wholes price them (genai-prices' answer for usage that
        // reports no text counts apart).
        ("gemini-9-both", usage([1000, 400, 100, 1000, 300, 1], 0), "2026-08-31",
         "google/gemini-9-both prompt=0.0012000000 completion=0.0056000000 internal_reasoning=0.0024000000 cache_read=0.0000800000 cache_write=0.0002500000 total=0.0095300000"),
        // 5-minute cache writes without the whole: cache writes at 3.75, not the input's 3.
        ("gemini-9-ttl", usage([1000, 0, 1000, 0, 0, 1], 0), "2026-08-31",
         "google/gemini-9-ttl prompt=0.0030000000 cache_write=0.0037500000 total=0.0067500000"),
    ];
    for (model, u, at, want) in cases {
        assert_eq!(priced_in(&t, g, model, u, at), *want, "{model} at {at}");
    }
    assert_eq!(
        t.notes(),
        [
            "google/gemini-9-image: not representable: output_image_mtok (no built-in model of this id gives the output tokens per image: image tokens billed as output)",
            "google/gemini-9-both: not representable: cache_text_read_mtok (counted in cachedInputTokens: billed as cached input), cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes), cache_write_5m_mtok (counted in cacheWriteInputTokens: billed as cache writes), input_text_mtok (counted in inputTokens: billed as input), output_text_mtok (counted in outputTokens: billed as output), output_text_reasoning_mtok (counted in reasoningTokens: billed as reasoning)",
            "google/gemini-9-ttl: not representable: cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes)",
        ]
    );
}

#[test]
fn broken_files_are_refused_with_a_path() {
    let err = |text: &str| {
        PriceTable::with_overrides(text, "g.json")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"[{"id": "p", "models": [{"id": "m", "match": {"regex": "("}, "prices": {}}]}]"#)
            .split(": bad regex")
            .next(),
        Some("pricing file g.json:1: [0].models[0].match.regex")
    );
    assert_eq!(
        err(r#"[{"id": "p", "models": [{"id": "m", "match": {"like": "x"}, "prices": {}}]}]"#),
        "pricing file g.json:1: [0].models[0].match.like: unknown match clause \"like\"; expected equals, starts_with, ends_with, contains, regex, or, and"
    );
    assert_eq!(
        err("[{\"id\": \"p\", \"models\": [{\"id\": \"m\", \"match\": {\"equals\": \"m\"},\n \"prices\": {\"input_mtok\": -1}}]}]"),
        "pricing file g.json:2: [0].models[0].prices.input_mtok: -1: not a price (a non-negative decimal, at most 19 significant digits)"
    );
    assert_eq!(
        err(r#"[{"id": "p", "models": [{"id": "m", "match": {"equals": "m"}, "prices": [{"constraint": {"end_date": "2026-01-01"}, "prices": {}}]}]}]"#),
        "pricing file g.json:1: [0].models[0].prices[0].constraint: expected {\"start_date\"} or {\"start_time\", \"end_time\"}"
    );
    assert_eq!(
        err(r#"[{"id": "p", "models": [{"id": "m", "match": {"equals": "m"}, "prices": [{"prices": {}}, {"constraint": {"start_date": "20260730"}, "prices": {}}]}]}]"#),
        "pricing file g.json:1: [0].models[0].prices[1].constraint.start_date: \"20260730\": expected YYYY-MM-DD or an RFC 3339 time"
    );
}

/// The real data set (pydantic/genai-prices `v2`, MIT) at `../shared/reference/`: every
/// model loads, and one call of every model prices. It is not part of the project: without
/// it the test says so on stderr (not captured) and passes, unless
/// `TRACEINGEST_REFERENCE_TESTS=required` (`scripts/test.sh` sets it when the file is there).
#[test]
fn the_published_data_set_loads_and_every_model_prices() {
    let Some(text) = crate::pricing::tests::reference_data_set(
        "pricing::genai::tests::the_published_data_set_loads_and_every_model_prices",
    ) else {
        return;
    };
    let t = PriceTable::with_overrides(&text, "genai-prices-v2-data.json").unwrap();
    let file_models: Vec<_> = t
        .models()
        .iter()
        .filter(|m| m.source == crate::pricing::Source::File)
        .collect();
    let usage = Usage {
        input_tokens: Some(300_000),
        output_tokens: Some(2000),
        reasoning_tokens: Some(500),
        cached_input_tokens: Some(100_000),
        cache_write_input_tokens: Some(1000),
        web_search_count: Some(2),
        ..Usage::default()
    };
    let mut priced = 0;
    for m in &file_models {
        for at in [
            "2025-01-01T00:00:00Z",
            "2026-11-24T12:00:00Z",
            "2027-06-01T20:00:00Z",
        ] {
            let c = m.costs(Some(&usage), parse_instant(at).unwrap());
            assert!(c.is_ok_and(|c| c.total.is_some()), "{} at {at}", m.id);
        }
        priced += 1;
    }
    let left_out = t.notes().iter().filter(|n| n.ends_with("left out")).count();
    let mut fields = std::collections::BTreeMap::<String, usize>::new();
    for n in t.notes() {
        let list = n.split("not representable: ").nth(1).unwrap();
        for f in list.split(", ") {
            let f = f.split([' ', ';']).next().unwrap();
            *fields.entry(f.to_string()).or_default() += 1;
        }
    }
    eprintln!(
        "genai-prices v2: {priced} models priced, {} reported ({left_out} left out); fields: {fields:?}",
        t.notes().len()
    );
    assert!(priced > 1400, "{priced}");
    // Spot checks through matching, as a span would be priced.
    let mut pricer = Pricer::new();
    let u = Usage {
        input_tokens: Some(100_000),
        ..Usage::default()
    };
    let at = parse_instant("2026-11-24").unwrap();
    let mut id = |p: Option<&str>, m: &str| {
        pricer
            .price(&t, p, Some(m), Some(&u), at)
            .unwrap()
            .map(|p| format!("{} {}", p.model_id, format_money(p.costs.total.unwrap())))
    };
    assert_eq!(
        id(Some("openai"), "gpt-5.6-luna").as_deref(),
        Some("openai/gpt-5.6-luna 0.0200000000")
    );
    assert_eq!(
        id(Some("anthropic.messages"), "claude-sonnet-4-5-20250929").as_deref(),
        Some("anthropic/claude-sonnet-4-5 0.3000000000")
    );
    assert_eq!(
        id(Some("google-vertex"), "gemini-3.6-flash").as_deref(),
        Some("google/gemini-3.6-flash 0.0750000000")
    );
    assert_eq!(
        id(
            Some("amazon-bedrock"),
            "us.anthropic.claude-3-5-sonnet-20240620-v1:0"
        )
        .as_deref(),
        Some("aws/regional.anthropic.claude-3-5-sonnet-20240620-v1:0 0.3000000000")
    );
    assert_eq!(
        id(Some("azure"), "gpt-5.6-luna").as_deref(),
        Some("openai/gpt-5.6-luna 0.0200000000")
    );
    assert_eq!(id(None, "my-own-model"), None);
    // Image output apart from text output, with the built-in's tokens per image: 710 text
    // tokens at 2.5 per 1M, one image of 1290 tokens at 30 per 1M.
    let image = Usage {
        output_tokens: Some(2000),
        image_count: Some(1),
        ..Usage::default()
    };
    assert_eq!(
        priced_in(&t, Some("google"), "gemini-2.5-flash-image", &image, "2026-11-24"),
        "google/gemini-2.5-flash-image completion=0.0017750000 image=0.0387000000 total=0.0404750000"
    );
    // 880 text tokens at 12 per 1M, one image of 1120 tokens at 120 per 1M.
    assert_eq!(
        priced_in(&t, Some("google"), "gemini-3-pro-image-preview", &image, "2026-11-24"),
        "google/gemini-3-pro-image-preview completion=0.0105600000 image=0.1344000000 total=0.1449600000"
    );
}
