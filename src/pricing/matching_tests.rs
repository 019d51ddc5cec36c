//! Tests of model matching: candidates, fallbacks and the ids that must stay unpriced.

use super::super::PriceTable;
use super::*;

/// One row: provider, modelId, the id it must price as (`None` = unknown model).
fn check(table: &PriceTable, provider: Option<&str>, model: &str, expect: Option<&str>) {
    let got = table.find(provider, model).map(|m| m.id.as_str());
    assert_eq!(
        got,
        expect,
        "({provider:?}, {model:?}); candidates: {:?}",
        candidates(provider, model)
            .into_iter()
            .map(|c| c.id)
            .collect::<Vec<_>>()
    );
}

#[path = "matching_more_tests.rs"]
mod more;

#[test]
fn real_world_ids_match_the_builtin_table() {
    let t = PriceTable::builtin();
    let cases: &[(Option<&str>, &str, Option<&str>)] = &[
        // OpenAI and Azure deployments
        (Some("openai.chat"), "gpt-4o", Some("openai/gpt-4o")),
        (
            Some("openai.responses"),
            "gpt-4o-2024-08-06",
            Some("openai/gpt-4o"),
        ),
        (
            Some("openai"),
            "gpt-4o-2024-05-13",
            Some("openai/gpt-4o-2024-05-13"),
        ),
        (
            Some("openai"),
            "gpt-4o-mini-2024-07-18",
            Some("openai/gpt-4o-mini"),
        ),
        (Some("openai"), "o3-2025-04-16", Some("openai/o3")),
        (Some("openai"), "gpt-5-2025-08-07", Some("openai/gpt-5")),
        (Some("openai"), "GPT-4.1-Mini", Some("openai/gpt-4.1-mini")),
        (
            Some("openai"),
            "gpt-4-0125-preview",
            Some("openai/gpt-4-turbo"),
        ),
        (
            Some("openai"),
            "chatgpt-4o-latest",
            Some("openai/chatgpt-4o-latest"),
        ),
        // Image generation and speech; the realtime, audio and transcription models are
        // unpriced, never priced as the text model their name starts with.
        (Some("openai"), "gpt-image-1", Some("openai/gpt-image-1")),
        (
            Some("openai"),
            "gpt-image-1-mini",
            Some("openai/gpt-image-1-mini"),
        ),
        (
            Some("openai.images"),
            "gpt-image-2-2026-04-21",
            Some("openai/gpt-image-2"),
        ),
        (Some("openai"), "gpt-image-1.5", None),
        (
            Some("openai"),
            "gpt-4o-mini-tts",
            Some("openai/gpt-4o-mini-tts"),
        ),
        (
            Some("openai"),
            "gpt-4o-mini-tts-2025-12-15",
            Some("openai/gpt-4o-mini-tts"),
        ),
        (Some("openai"), "gpt-4o-realtime-preview-2024-12-17", None),
        (Some("openai"), "gpt-4o-mini-realtime-preview", None),
        (Some("openai"), "gpt-realtime", None),
        (Some("openai"), "gpt-4o-audio-preview-2024-12-17", None),
        (Some("openai"), "gpt-4o-transcribe", None),
        (
            Some("openrouter"),
            "openai/gpt-4o:extended",
            Some("openai/gpt-4o:extended"),
        ),
        (
            Some("openai"),
            "text-embedding-ada",
            Some("openai/text-embedding-ada-002"),
        ),
        // Bare aliases the vendors document.
        (Some("openai"), "gpt-5.6", Some("openai/gpt-5.6-sol")),
        (Some("openai"), "gpt-5-6", Some("openai/gpt-5.6-sol")),
        (
            Some("openai"),
            "gpt-5.6-luna-2026-07-13",
            Some("openai/gpt-5.6-luna"),
        ),
        (
            Some("openai"),
            "gpt-5.2-chat-latest",
            Some("openai/gpt-5.2"),
        ),
        (Some("openai"), "gpt-5-chat-latest", Some("openai/gpt-5")),
        (
            Some("openai"),
            "gpt-chat-latest",
            Some("openai/gpt-chat-latest"),
        ),
        (
            Some("openai"),
            "gpt-3.5-turbo-1106",
            Some("openai/gpt-3.5-turbo-1106"),
        ),
        (Some("xai"), "grok-latest", Some("x-ai/grok-4.5")),
        (Some("xai"), "grok-4.5-latest", Some("x-ai/grok-4.5")),
        (
            Some("mistral"),
            "mistral-medium",
            Some("mistralai/mistral-medium-3.1"),
        ),
        (
            Some("mistral"),
            "mistral-medium-2505",
            Some("mistralai/mistral-medium-3"),
        ),
        (
            Some("google"),
            "gemini-2.5-flash-preview-05-20",
            Some("google/gemini-2.5-flash-preview"),
        ),
        (
            Some("google"),
            "gemini-2.5-flash-preview-09-2025",
            Some("google/gemini-2.5-flash"),
        ),
        (
            Some("google"),
            "gemini-2.5-flash-preview-10-2025",
            Some("google/gemini-2.5-flash"),
        ),
        (
            Some("openai.embedding"),
            "text-embedding-3-small",
            Some("openai/text-embedding-3-small"),
        ),
        (Some("azure"), "gpt-4o", Some("openai/gpt-4o")),
        (Some("azure"), "gpt-4o-2024-08-06", Some("openai/gpt-4o")),
        (Some("azure"), "gpt-35-turbo", Some("openai/gpt-3.5-turbo")),
        (
            Some("azure.chat"),
            "gpt-35-turbo-0125",
            Some("openai/gpt-3.5-turbo"),
        ),
        (Some("azure"), "my-prod-deployment", None),
        // Anthropic native ids, aliases and dates
        (
            Some("anthropic.messages"),
            "claude-sonnet-4-5-20250929",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("anthropic.messages"),
            "claude-sonnet-4-5",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("anthropic"),
            "claude-3-5-sonnet-20241022",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (
            Some("anthropic"),
            "claude-3-7-sonnet-latest",
            Some("anthropic/claude-3.7-sonnet"),
        ),
        (
            Some("anthropic"),
            "claude-3-5-haiku-latest",
            Some("anthropic/claude-3.5-haiku"),
        ),
        (
            Some("anthropic"),
            "claude-opus-4-1-20250805",
            Some("anthropic/claude-opus-4.1"),
        ),
        (
            Some("anthropic"),
            "claude-sonnet-4-20250514",
            Some("anthropic/claude-sonnet-4"),
        ),
        (
            Some("anthropic"),
            "claude-opus-4-0",
            Some("anthropic/claude-opus-4"),
        ),
        (
            Some("anthropic"),
            "claude-haiku-4-5-20251001",
            Some("anthropic/claude-haiku-4.5"),
        ),
        (
            Some("anthropic"),
            "claude-3-haiku-20240307",
            Some("anthropic/claude-3-haiku"),
        ),
        (None, "claude-opus-4-8", Some("anthropic/claude-opus-4.8")),
        // Bedrock
        (
            Some("amazon-bedrock"),
            "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (
            Some("amazon-bedrock"),
            "anthropic.claude-3-haiku-20240307-v1:0",
            Some("anthropic/claude-3-haiku"),
        ),
        (
            Some("bedrock"),
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("amazon-bedrock"),
            "meta.llama3-1-70b-instruct-v1:0",
            Some("meta-llama/llama-3.1-70b-instruct"),
        ),
        (
            Some("amazon-bedrock"),
            "us.meta.llama3-3-70b-instruct-v1:0",
            Some("meta-llama/llama-3.3-70b-instruct"),
        ),
        (
            Some("amazon-bedrock"),
            "meta.llama4-maverick-17b-instruct-v1:0",
            Some("meta-llama/llama-4-maverick"),
        ),
        (
            Some("amazon-bedrock"),
            "amazon.nova-pro-v1:0",
            Some("amazon/nova-pro"),
        ),
        (
            Some("amazon-bedrock"),
            "us.amazon.nova-micro-v1:0",
            Some("amazon/nova-micro"),
        ),
        (
            Some("amazon-bedrock"),
            "amazon.titan-embed-text-v2:0",
            Some("amazon/titan-embed-text-v2"),
        ),
        (
            Some("amazon-bedrock"),
            "cohere.command-r-plus-v1:0",
            Some("cohere/command-r-plus"),
        ),
        (
            Some("amazon-bedrock"),
            "mistral.mistral-large-2402-v1:0",
            Some("mistralai/mistral-large-2402-v1"),
        ),
        (
            Some("amazon-bedrock"),
            "mistral.mistral-small-2402-v1:0",
            Some("mistralai/mistral-small-2402-v1"),
        ),
        (
            Some("amazon-bedrock"),
            "mistral.ministral-3-8b-instruct",
            Some("mistralai/ministral-3-8b-instruct"),
        ),
        (
            Some("amazon-bedrock"),
            "us.mistral.mistral-large-3-675b-instruct",
            Some("mistralai/mistral-large-3-675b-instruct"),
        ),
        (
            Some("amazon-bedrock"),
            "mistral.devstral-2-123b",
            Some("mistralai/devstral-2-123b"),
        ),
        (
            Some("amazon-bedrock"),
            "mistral.mistral-7b-instruct-v0:2",
            Some("mistralai/mistral-7b-instruct-v0"),
        ),
        (
            Some("amazon-bedrock"),
            "openai.gpt-oss-120b-1:0",
            Some("openai/gpt-oss-120b-1"),
        ),
        (
            Some("amazon-bedrock"),
            "openai.gpt-oss-20b-1:0",
            Some("openai/gpt-oss-20b-1"),
        ),
        (
            Some("amazon-bedrock"),
            "deepseek.r1-v1:0",
            Some("bedrock/deepseek.r1-v1"),
        ),
        // Other vendors' models at Bedrock's prices, only under Bedrock's ids.
        (
            Some("amazon-bedrock"),
            "qwen.qwen3-coder-480b-a35b-v1:0",
            Some("bedrock/qwen.qwen3-coder-480b-a35b-v1"),
        ),
        (
            Some("bedrock"),
            "us.qwen.qwen3-32b-v1:0",
            Some("bedrock/qwen.qwen3-32b-v1"),
        ),
        (
            Some("amazon-bedrock"),
            "nvidia.nemotron-nano-9b-v2:0",
            Some("bedrock/nvidia.nemotron-nano-9b-v2"),
        ),
        (
            Some("amazon-bedrock"),
            "nvidia.nemotron-super-3-120b:0",
            Some("bedrock/nvidia.nemotron-super-3-120b"),
        ),
        (
            Some("amazon-bedrock"),
            "us.writer.palmyra-x5-v1:0",
            Some("bedrock/writer.palmyra-x5-v1"),
        ),
        (
            Some("amazon-bedrock"),
            "google.gemma-3-27b-it",
            Some("bedrock/google.gemma-3-27b-it"),
        ),
        (Some("google"), "gemma-3-27b-it", None),
        (Some("openrouter"), "qwen/qwen3-32b", None),
        (Some("amazon-bedrock"), "amazon.nova-sonic-v1:0", None),
        (
            Some("deepseek"),
            "deepseek-r1",
            Some("deepseek/deepseek-reasoner"),
        ),
        (
            Some("deepseek"),
            "deepseek-r1-0528",
            Some("deepseek/deepseek-reasoner"),
        ),
        (
            None,
            "deepseek/deepseek-r1-0528",
            Some("deepseek/deepseek-reasoner"),
        ),
        // OpenAI's models at Bedrock's prices, not OpenAI's, however the id is spelled.
        (
            Some("amazon-bedrock"),
            "openai.gpt-5.4",
            Some("bedrock/openai.gpt-5.4"),
        ),
        (
            Some("amazon-bedrock"),
            "us.openai.gpt-5.6-sol",
            Some("bedrock/openai.gpt-5.6-sol"),
        ),
        (
            Some("aws.bedrock"),
            "openai.gpt-5.5",
            Some("bedrock/openai.gpt-5.5"),
        ),
        (
            None,
            "openai.gpt-5.6-luna",
            Some("bedrock/openai.gpt-5.6-luna"),
        ),
        (
            None,
            "bedrock/global.openai.gpt-5.6-terra",
            Some("bedrock/openai.gpt-5.6-terra"),
        ),
        (
            Some("amazon-bedrock"),
            "arn:aws:bedrock:us-east-1::foundation-model/openai.gpt-5.4",
            Some("bedrock/openai.gpt-5.4"),
        ),
        (Some("openai"), "gpt-5.4", Some("openai/gpt-5.4")),
        (Some("azure"), "gpt-5.5", Some("openai/gpt-5.5")),
        (
            None,
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            Some("anthropic/claude-3.5-haiku"),
        ),
        (
            Some("amazon-bedrock"),
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
            Some("anthropic/claude-3-haiku"),
        ),
    ];
    for &(p, m, e) in cases {
        check(&t, p, m, e);
    }
}

#[test]
fn release_dates() {
    let cases = [
        ("2024-08-06", Some(20240806)),
        ("20241022", Some(20241022)),
        ("2512", Some(20251200)),
        ("2410", Some(20241000)),
        ("08-2024", Some(20240800)),
        ("0125", None),
        ("0709", None),
        ("1106", None),
        ("05-06", None),
        ("001", None),
        ("2513", None),
        ("20241399", None),
        ("latest", None),
    ];
    for (marker, want) in cases {
        assert_eq!(release_date(marker), want, "{marker}");
    }
    assert_eq!(
        family_of("mistralai/mistral-large-2512"),
        Some((vec!["mistralai/mistral-large".to_string()], 20251200))
    );
    assert_eq!(
        family_of("anthropic/claude-3-5-sonnet-20241022"),
        Some((
            vec![
                "anthropic/claude-3-5-sonnet".to_string(),
                "anthropic/claude-3.5-sonnet".to_string()
            ],
            20241022
        ))
    );
    assert_eq!(family_of("openai/gpt-4-0125-preview"), None);
    assert_eq!(family_of("openai/gpt-4o"), None);
}

#[test]
fn version_markers_and_dots() {
    let cases = [
        ("gpt-4o-2024-08-06", Some("gpt-4o")),
        ("claude-3-5-sonnet-20241022", Some("claude-3-5-sonnet")),
        (
            "gemini-2.5-pro-preview-05-06",
            Some("gemini-2.5-pro-preview"),
        ),
        ("command-r-plus-08-2024", Some("command-r-plus")),
        ("anthropic.claude-v2:1", Some("anthropic.claude-v2")),
        ("grok-beta", None),
        ("gpt-4", None),
        ("latest", None),
    ];
    for (s, e) in cases {
        assert_eq!(strip_once(s).as_deref(), e, "{s}");
    }
    assert_eq!(dotted("claude-3-5-sonnet"), "claude-3.5-sonnet");
    assert_eq!(dotted("llama-3-1-70b"), "llama-3.1-70b");
    assert_eq!(dotted("llama-3-8b"), "llama-3-8b");
    assert_eq!(dotted("claude-sonnet-4-5"), "claude-sonnet-4.5");
    assert_eq!(dotted("qwen-2-72b"), "qwen-2-72b");
    assert_eq!(normalize("llama3-2-1b-instruct"), "llama-3.2-1b-instruct");
}
