//! The built-in table's figures: dated prices, tiers, models, hosts (Bedrock), fine-tunes and the
//! price history, each priced through `Pricer`.

use super::*;

#[test]
fn builtin_dated_prices_and_the_272k_tier() {
    // gpt-5.6-luna before OpenAI's 2026-07-30 cut: 1000 x 1e-6 = 0.001; 100 x 6e-6 = 0.0006.
    check(
        call("gpt-5.6-luna").via("openai").input(1000).output(100).at("2026-07-29T23:59:59Z"),
        "openai/gpt-5.6-luna (builtin) prompt=0.0010000000 completion=0.0006000000 total=0.0016000000",
    );
    // After: 1000 x 0.2e-6 = 0.0002; 100 x 1.2e-6 = 0.00012 (a fifth).
    check(
        call("gpt-5.6-luna").via("openai").input(1000).output(100).at("2026-07-30"),
        "openai/gpt-5.6-luna (builtin) prompt=0.0002000000 completion=0.0001200000 total=0.0003200000",
    );
    // Terra after the cut, at 272000 input tokens exactly: base, 272000 x 2e-6 = 0.544.
    check(
        call("gpt-5.6-terra")
            .via("openai")
            .input(272_000)
            .at("2026-11-24"),
        "openai/gpt-5.6-terra (builtin) prompt=0.5440000000 total=0.5440000000",
    );
    // One token more: the whole call at the tier, 272001 x 4e-6 = 1.088004; 1000 x 18e-6.
    check(
        call("gpt-5.6-terra").via("openai").input(272_001).output(1000).at("2026-11-24"),
        "openai/gpt-5.6-terra (builtin) prompt=1.0880040000 completion=0.0180000000 total=1.1060040000",
    );
    // Sol's tier counts cache writes: 200000 + 72001 > 272000; 200000 x 10e-6 = 2;
    // 72001 x 12.5e-6 = 0.9000125.
    check(
        call("gpt-5.6-sol").via("openai").input(200_000).cache_write(72_001).at("2026-11-24"),
        "openai/gpt-5.6-sol (builtin) prompt=2.0000000000 cache_write=0.9000125000 total=2.9000125000",
    );
    // Gemini 3.6 Flash: introductory 0.75 until 2026-12-31, 1.5 from 2027-01-01.
    check(
        call("gemini-3.6-flash")
            .via("google")
            .input(1_000_000)
            .at("2026-12-31T23:59:59Z"),
        "google/gemini-3.6-flash (builtin) prompt=0.7500000000 total=0.7500000000",
    );
    check(
        call("gemini-3.6-flash")
            .via("google")
            .input(1_000_000)
            .at("2027-01-01"),
        "google/gemini-3.6-flash (builtin) prompt=1.5000000000 total=1.5000000000",
    );
}

/// Found by the `pricing` fuzz target's seeds: the input size was a saturating `u64` sum, so
/// with a threshold of `u64::MAX` two counts whose sum passes it did not get the tier.
/// (Unreachable from the wire, where counts are at most 2^53 - 1, but the rule is "strictly
/// above the threshold" for any counts.)
#[test]
fn regression_long_context_size_does_not_saturate() {
    let tier = Rates::NONE.with(Dimension::Prompt, Price::per_unit("2"));
    let tiers = vec![Tier {
        threshold: u64::MAX,
        rates: tier,
    }];
    let model = ModelPrice::new(
        "test/max-threshold",
        Source::File,
        PriceSet::tiered(Rates::NONE, tiers).unwrap(),
    );
    let usage = Usage {
        input_tokens: Some(u64::MAX),
        cache_write_input_tokens: Some(1),
        ..Usage::default()
    };
    assert!(model.select(Some(&usage), 0).tier.is_some());
    let usage = Usage {
        input_tokens: Some(u64::MAX),
        ..Usage::default()
    };
    assert!(model.select(Some(&usage), 0).tier.is_none());
}

#[test]
fn rounding_half_up_once_per_dimension() {
    // 3 x 1.5e-11 = 4.5e-11 = 0.45 units -> 0 (priced and counted, so 0, not null).
    check(
        call("test/odd").input(3),
        "test/odd (file) prompt=0.0000000000 total=0.0000000000",
    );
    // 4 x 1.5e-11 = 0.6 units -> 1.
    check(
        call("test/odd").input(4),
        "test/odd (file) prompt=0.0000000001 total=0.0000000001",
    );
    // 1 x 5e-11 = 0.5 units: half rounds up -> 1.
    check(
        call("test/odd").output(1),
        "test/odd (file) completion=0.0000000001 total=0.0000000001",
    );
    // 3 x 5e-11 = 1.5 units -> 2.
    check(
        call("test/odd").output(3),
        "test/odd (file) completion=0.0000000002 total=0.0000000002",
    );
    // 10 x 4.9999e-11 = 4.9999 units -> 5; prompt 10 - 10 = 0 -> null.
    check(
        call("test/odd").input(10).cached(10),
        "test/odd (file) cache_read=0.0000000005 total=0.0000000005",
    );
    // Rounded per dimension, then summed: prompt 3 x 0.15 = 0.45 -> 0, cache 3 x 0.49999 =
    // 1.49997 -> 1; total 0 + 1 = 1 (the unrounded sum 1.94997 would round to 2).
    check(
        call("test/odd").input(6).cached(3),
        "test/odd (file) prompt=0.0000000000 cache_read=0.0000000001 total=0.0000000001",
    );
}

#[test]
fn huge_counts_and_overflow() {
    // 99999999 x 1 USD = 99999999 USD: fits Decimal(18, 10) (max 99999999.9999999999).
    check(
        call("test/huge").input(99_999_999),
        "test/huge (file) prompt=99999999.0000000000 total=99999999.0000000000",
    );
    // 10^8 x 1 USD = 10^18 units: one past the maximum.
    check(call("test/huge").input(100_000_000), "error: Overflow");
    // Each dimension fits, the total does not: 99999999 + 1 x 100 = 100000099 USD.
    check(
        call("test/huge").input(99_999_999).output(1),
        "error: Overflow",
    );
    // 2^53 - 1 tokens at 1 USD: no panic, overflow.
    check(call("test/huge").input(MAX_COUNT), "error: Overflow");
    // 2^53 - 1 x 3e-6 = 27021597764.222973 USD: overflow.
    check(call("test/basic").input(MAX_COUNT), "error: Overflow");
    // 2^53 - 1 x 1e-10 = 9007199254740991 units = 900719.9254740991 USD: fits.
    check(
        call("test/tiny").input(MAX_COUNT),
        "test/tiny (file) prompt=900719.9254740991 total=900719.9254740991",
    );
    // 2^53 - 1 of everything on a model with small prices: reasoning 9007199254740991 x 2e-6
    // overflows too.
    check(
        call("test/reasoner").reasoning(MAX_COUNT).output(MAX_COUNT),
        "error: Overflow",
    );
    // Huge counts in dimensions without prices cost nothing.
    check(
        call("test/tiny")
            .images(MAX_COUNT)
            .searches(MAX_COUNT)
            .requests(MAX_COUNT),
        "test/tiny (file) total=0.0000000000",
    );
}

#[test]
fn builtin_models() {
    // gpt-4o: (1000 - 200) x 2.5e-6 = 0.002; 100 x 10e-6 = 0.001; 200 x 1.25e-6 = 0.00025.
    check(
        call("gpt-4o-2024-08-06").via("azure").input(1000).cached(200).output(100),
        "openai/gpt-4o (builtin) prompt=0.0020000000 completion=0.0010000000 cache_read=0.0002500000 total=0.0032500000",
    );
    // Claude Sonnet 4.5 at exactly 200k: base, 200000 x 3e-6 = 0.6; 1000 x 15e-6 = 0.015.
    check(
        call("claude-sonnet-4-5-20250929").via("anthropic.messages").input(200_000).output(1000),
        "anthropic/claude-sonnet-4.5 (builtin) prompt=0.6000000000 completion=0.0150000000 total=0.6150000000",
    );
    // Above 200k: 250000 x 6e-6 = 1.5; 1000 x 22.5e-6 = 0.0225.
    check(
        call("claude-sonnet-4-5-20250929").via("anthropic.messages").input(250_000).output(1000),
        "anthropic/claude-sonnet-4.5 (builtin) prompt=1.5000000000 completion=0.0225000000 total=1.5225000000",
    );
    // Haiku 4.5 with web search: 100 x 1e-6 = 0.0001; 10 x 5e-6 = 0.00005; 2 x 0.01 = 0.02.
    check(
        call("claude-haiku-4-5").via("anthropic").input(100).output(10).searches(2),
        "anthropic/claude-haiku-4.5 (builtin) prompt=0.0001000000 completion=0.0000500000 web_search=0.0200000000 total=0.0201500000",
    );
    // Gemini 2.5 Pro above 200k: (300000 - 100000) x 2.5e-6 = 0.5; 2000 x 15e-6 = 0.03;
    // 100000 x 0.25e-6 = 0.025; total 0.555.
    check(
        call("gemini-2.5-pro").via("google-vertex").input(300_000).cached(100_000).output(2000),
        "google/gemini-2.5-pro (builtin) prompt=0.5000000000 completion=0.0300000000 cache_read=0.0250000000 total=0.5550000000",
    );
    // Perplexity's request fee with absent usage: 1 x 0.012.
    check(
        call("sonar").via("perplexity").no_usage(),
        "perplexity/sonar (builtin) request=0.0120000000 total=0.0120000000",
    );
    // Embeddings: 1000000 x 0.02e-6 = 0.02.
    check(
        call("text-embedding-3-small")
            .via("openai.embedding")
            .input(1_000_000),
        "openai/text-embedding-3-small (builtin) prompt=0.0200000000 total=0.0200000000",
    );
    // Bedrock Nova Micro: 1000 x 0.035e-6 = 0.000035; 1000 x 0.14e-6 = 0.00014.
    check(
        call("us.amazon.nova-micro-v1:0").via("amazon-bedrock").input(1000).output(1000),
        "amazon/nova-micro (builtin) prompt=0.0000350000 completion=0.0001400000 total=0.0001750000",
    );
}

/// Image generation and speech models bill their image and audio output as output tokens;
/// Bedrock-only prices apply to Bedrock's ids only.
#[test]
fn builtin_image_speech_and_bedrock_hosted_models() {
    // One 1024x1024 high-quality image, 4160 output tokens: 100 x 5e-6 = 0.0005; 4160 x 40e-6
    // = 0.1664. The image count has no price of its own.
    check(
        call("gpt-image-1").via("openai").input(100).output(4160).images(1),
        "openai/gpt-image-1 (builtin) prompt=0.0005000000 completion=0.1664000000 total=0.1669000000",
    );
    // 1000 x 5e-6 = 0.005; 1000 x 1.25e-6 = 0.00125 cached; 1000 x 30e-6 = 0.03.
    check(
        call("gpt-image-2-2026-04-21").via("openai").input(2000).cached(1000).output(1000),
        "openai/gpt-image-2 (builtin) prompt=0.0050000000 completion=0.0300000000 cache_read=0.0012500000 total=0.0362500000",
    );
    // Text in, audio out: 1000 x 0.6e-6 = 0.0006; 10000 x 12e-6 = 0.12.
    check(
        call("gpt-4o-mini-tts").via("openai").input(1000).output(10_000),
        "openai/gpt-4o-mini-tts (builtin) prompt=0.0006000000 completion=0.1200000000 total=0.1206000000",
    );
    // Realtime audio is not billed as text.
    check(
        call("gpt-realtime").via("openai").input(1000).output(1000),
        "unknown",
    );
    // Tokens only, no request fee: 1000 x 0.2e-6 twice.
    check(
        call("llama-3.1-sonar-small-128k-online").via("perplexity").input(1000).output(1000),
        "perplexity/llama-3.1-sonar-small-128k-online (builtin) prompt=0.0002000000 completion=0.0002000000 total=0.0004000000",
    );
    // Palmyra X5 through a cross-region profile: 1M x 0.6e-6 = 0.6; 1M x 6e-6 = 6.
    check(
        call("us.writer.palmyra-x5-v1:0").via("amazon-bedrock").input(1_000_000).output(1_000_000),
        "bedrock/writer.palmyra-x5-v1 (builtin) prompt=0.6000000000 completion=6.0000000000 total=6.6000000000",
    );
    // Gemma 3 27B on Bedrock: 1M x 0.23e-6; through the Gemini API (free) it stays unpriced.
    check(
        call("google.gemma-3-27b-it")
            .via("amazon-bedrock")
            .input(1_000_000),
        "bedrock/google.gemma-3-27b-it (builtin) prompt=0.2300000000 total=0.2300000000",
    );
    check(
        call("gemma-3-27b-it").via("google").input(1_000_000),
        "unknown",
    );
}

/// OpenAI's models on Amazon Bedrock are priced at Bedrock's prices (about 10% above OpenAI's,
/// and Terra and Luna without a long-context tier before 2026-07-30), not at OpenAI's own:
/// `openai.gpt-5.4` must not fall back to `openai/gpt-5.4`.
#[test]
fn openai_models_on_bedrock_at_bedrock_prices() {
    // The audit's case: 300000 x 2.75e-6 = 0.825; 1000 x 16.5e-6 = 0.0165; no tier on
    // Bedrock (OpenAI's own price would be the 272K tier's, 300000 x 5e-6 = 1.5).
    check(
        call("openai.gpt-5.4").via("amazon-bedrock").input(300_000).output(1000).at("2026-08-01"),
        "bedrock/openai.gpt-5.4 (builtin) prompt=0.8250000000 completion=0.0165000000 total=0.8415000000",
    );
    // The same through OpenAI: 300000 x 5e-6 = 1.5; 1000 x 22.5e-6 = 0.0225.
    check(
        call("gpt-5.4")
            .via("openai")
            .input(300_000)
            .output(1000)
            .at("2026-08-01"),
        "openai/gpt-5.4 (builtin) prompt=1.5000000000 completion=0.0225000000 total=1.5225000000",
    );
    // A cross-region profile and no provider find the Bedrock price too (the regional premium
    // is not modelled): 1000 x 5.5e-6 = 0.0055; 100 x 0.55e-6 = 0.000055; 100 x 33e-6.
    check(
        call("us.openai.gpt-5.5").via("bedrock").input(1100).cached(100).output(100),
        "bedrock/openai.gpt-5.5 (builtin) prompt=0.0055000000 completion=0.0033000000 cache_read=0.0000550000 total=0.0088550000",
    );
    check(
        call("openai.gpt-5.5").input(1000),
        "bedrock/openai.gpt-5.5 (builtin) prompt=0.0055000000 total=0.0055000000",
    );
    // Sol has its tier from the start: 300000 x 11e-6 = 3.3; 1000 x 49.5e-6 = 0.0495.
    check(
        call("openai.gpt-5.6-sol").via("aws.bedrock").input(300_000).output(1000).at("2026-07-20"),
        "bedrock/openai.gpt-5.6-sol (builtin) prompt=3.3000000000 completion=0.0495000000 total=3.3495000000",
    );
    // Terra before Bedrock's 2026-07-30 cut, no tier: 300000 x 2.75e-6 = 0.825; after it,
    // the tier: 300000 x 4.4e-6 = 1.32.
    check(
        call("openai.gpt-5.6-terra")
            .via("amazon-bedrock")
            .input(300_000)
            .at("2026-07-29"),
        "bedrock/openai.gpt-5.6-terra (builtin) prompt=0.8250000000 total=0.8250000000",
    );
    check(
        call("openai.gpt-5.6-terra")
            .via("amazon-bedrock")
            .input(300_000)
            .at("2026-07-30"),
        "bedrock/openai.gpt-5.6-terra (builtin) prompt=1.3200000000 total=1.3200000000",
    );
    // Luna likewise: 300000 x 1.1e-6 = 0.33, then 300000 x 0.44e-6 = 0.132.
    check(
        call("openai.gpt-5.6-luna")
            .via("amazon-bedrock")
            .input(300_000)
            .at("2026-07-29"),
        "bedrock/openai.gpt-5.6-luna (builtin) prompt=0.3300000000 total=0.3300000000",
    );
    check(
        call("openai.gpt-5.6-luna")
            .via("amazon-bedrock")
            .input(300_000)
            .at("2026-08-01"),
        "bedrock/openai.gpt-5.6-luna (builtin) prompt=0.1320000000 total=0.1320000000",
    );
}

/// DeepSeek-R1 is priced where it is called: through DeepSeek's API (and OpenRouter's
/// `deepseek/...` ids) as `deepseek-reasoner`, as the data set's DeepSeek provider matches
/// every id starting `deepseek-r1`; through Bedrock and Azure at their own prices.
#[test]
fn deepseek_r1_at_the_price_of_where_it_is_called() {
    // The audit's case, DeepSeek's standard hours (00:30-16:30 UTC): 1M x 0.55e-6 = 0.55;
    // 1M x 2.19e-6 = 2.19 (not Bedrock's 1.35 and 5.4).
    check(
        call("deepseek-r1-0528")
            .via("deepseek")
            .input(1_000_000)
            .output(1_000_000)
            .at("2025-06-01T12:00:00Z"),
        "deepseek/deepseek-reasoner (builtin) prompt=0.5500000000 completion=2.1900000000 total=2.7400000000",
    );
    // Off-peak: 1M x 0.135e-6 = 0.135; 1M x 0.55e-6 = 0.55.
    check(
        call("deepseek-r1")
            .via("deepseek")
            .input(1_000_000)
            .output(1_000_000)
            .at("2025-06-01T17:00:00Z"),
        "deepseek/deepseek-reasoner (builtin) prompt=0.1350000000 completion=0.5500000000 total=0.6850000000",
    );
    check(
        call("deepseek/deepseek-r1-0528")
            .via("openrouter")
            .input(1_000_000)
            .at("2025-06-01T12:00:00Z"),
        "deepseek/deepseek-reasoner (builtin) prompt=0.5500000000 total=0.5500000000",
    );
    // Bedrock's DeepSeek-R1 keeps Bedrock's price at any hour: 1M x 1.35e-6; 1M x 5.4e-6.
    check(
        call("deepseek.r1-v1:0")
            .via("amazon-bedrock")
            .input(1_000_000)
            .output(1_000_000)
            .at("2025-06-01T17:00:00Z"),
        "bedrock/deepseek.r1-v1 (builtin) prompt=1.3500000000 completion=5.4000000000 total=6.7500000000",
    );
    check(
        call("us.deepseek.r1-v1:0").via("bedrock").input(1_000_000),
        "bedrock/deepseek.r1-v1 (builtin) prompt=1.3500000000 total=1.3500000000",
    );
    // Azure AI Foundry's, as before: the same figures.
    check(
        call("DeepSeek-R1")
            .via("azure.ai.inference")
            .input(1_000_000),
        "azure/deepseek-r1 (builtin) prompt=1.3500000000 total=1.3500000000",
    );
}

/// OpenAI's fine-tuned models (`ft:<base>:<org>:<name>:<id>`) are priced at the data set's
/// prices for fine-tuned models of their base model.
#[test]
fn openai_fine_tuned_models() {
    // 1M x 3.75e-6 = 3.75; 1M x 15e-6 = 15.
    check(
        call("ft:gpt-4o-2024-08-06:acme:support:AbC123")
            .via("openai")
            .input(1_000_000)
            .output(1_000_000),
        "openai/ft:gpt-4o-2024-08-06 (builtin) prompt=3.7500000000 completion=15.0000000000 total=18.7500000000",
    );
    // 1M x 0.3e-6 = 0.3; 1M x 1.2e-6 = 1.2; a checkpoint's id and no provider.
    check(
        call("ft:gpt-4o-mini-2024-07-18:acme::AbC123:ckpt-step-100")
            .input(1_000_000)
            .output(1_000_000),
        "openai/ft:gpt-4o-mini-2024-07-18 (builtin) prompt=0.3000000000 completion=1.2000000000 total=1.5000000000",
    );
    // 1000 x 3e-6 = 0.003; 1000 x 6e-6 = 0.006.
    check(
        call("ft:gpt-3.5-turbo-0125:acme::AbC123").via("openai").input(1000).output(1000),
        "openai/ft:gpt-3.5-turbo (builtin) prompt=0.0030000000 completion=0.0060000000 total=0.0090000000",
    );
    // A base model without a fine-tuning price stays unpriced, not priced as the base model.
    check(
        call("ft:gpt-4o:acme::abc123").via("openai").input(1000),
        "unknown",
    );
}

#[test]
fn builtin_price_history() {
    // Claude Sonnet 5: introductory $2 until 2026-08-31, $3 from 2026-09-01.
    check(
        call("claude-sonnet-5")
            .via("anthropic")
            .input(1_000_000)
            .at("2026-08-31T23:59:59Z"),
        "anthropic/claude-sonnet-5 (builtin) prompt=2.0000000000 total=2.0000000000",
    );
    check(
        call("claude-sonnet-5")
            .via("anthropic")
            .input(1_000_000)
            .at("2026-09-01"),
        "anthropic/claude-sonnet-5 (builtin) prompt=3.0000000000 total=3.0000000000",
    );
    // Claude Opus 4.6 charged its 200K tier until 2026-03-13: 250000 x 10e-6 = 2.5; then 5e-6.
    check(
        call("claude-opus-4-6")
            .via("anthropic")
            .input(250_000)
            .at("2026-03-12"),
        "anthropic/claude-opus-4.6 (builtin) prompt=2.5000000000 total=2.5000000000",
    );
    check(
        call("claude-opus-4-6")
            .via("anthropic")
            .input(250_000)
            .at("2026-03-13"),
        "anthropic/claude-opus-4.6 (builtin) prompt=1.2500000000 total=1.2500000000",
    );
    // o3 before and after OpenAI's 2025-06-10 cut.
    check(
        call("o3-2025-04-16")
            .via("openai")
            .input(1_000_000)
            .at("2025-06-09"),
        "openai/o3 (builtin) prompt=10.0000000000 total=10.0000000000",
    );
    check(
        call("o3").via("openai").input(1_000_000).at("2025-06-10"),
        "openai/o3 (builtin) prompt=2.0000000000 total=2.0000000000",
    );
    // deepseek-chat: V3 at standard hours, half price 16:30-00:30 UTC; V3.1 from 2025-09-05
    // 16:00 UTC; V3.2 from 2025-09-29; V4 Flash from 2026-04-24, its cache cut at 12:15 UTC.
    let chat = |at: &str, want: &str| {
        check(
            call("deepseek-chat")
                .via("deepseek")
                .input(1_000_000)
                .cached(1_000_000)
                .output(1_000_000)
                .at(at),
            &format!("deepseek/deepseek-chat (builtin) completion={want}"),
        )
    };
    chat(
        "2025-06-01T12:00:00Z",
        "1.1000000000 cache_read=0.0700000000 total=1.1700000000",
    );
    chat(
        "2025-06-01T16:30:00Z",
        "0.5500000000 cache_read=0.0350000000 total=0.5850000000",
    );
    chat(
        "2025-06-02T00:29:59Z",
        "0.5500000000 cache_read=0.0350000000 total=0.5850000000",
    );
    chat(
        "2025-09-05T15:59:59Z",
        "1.1000000000 cache_read=0.0700000000 total=1.1700000000",
    );
    chat(
        "2025-09-05T16:30:00Z",
        "1.6800000000 cache_read=0.0700000000 total=1.7500000000",
    );
    chat(
        "2025-09-29",
        "0.4200000000 cache_read=0.0280000000 total=0.4480000000",
    );
    chat(
        "2026-04-26T12:14:59Z",
        "0.2800000000 cache_read=0.0280000000 total=0.3080000000",
    );
    chat(
        "2026-04-26T12:15:00Z",
        "0.2800000000 cache_read=0.0028000000 total=0.2828000000",
    );
    // A model without cache prices bills cached and cache-write tokens at its input price:
    // mistral-large 200 x 2e-6 + 800 x 2e-6 + 100 x 2e-6.
    check(
        call("mistral-large-2411").via("mistral").input(1000).cached(800).cache_write(100),
        "mistralai/mistral-large (builtin) prompt=0.0004000000 cache_read=0.0016000000 cache_write=0.0002000000 total=0.0022000000",
    );
}
