//! The real-world ids of Google, xAI, the other vendors, OpenRouter and the OpenTelemetry
//! conventions, dated releases, and ids that must stay unknown: the rest of
//! `real_world_ids_match_the_builtin_table`.

use super::super::super::PriceTable;
use super::check;

#[test]
fn more_real_world_ids_match_the_builtin_table() {
    let t = PriceTable::builtin();
    let cases: &[(Option<&str>, &str, Option<&str>)] = &[
        // Google Gemini and Vertex AI
        (
            Some("google-vertex"),
            "gemini-2.5-pro-preview-05-06",
            Some("google/gemini-2.5-pro"),
        ),
        (
            Some("google"),
            "gemini-2.5-flash",
            Some("google/gemini-2.5-flash"),
        ),
        (
            Some("vertex"),
            "gemini-2.0-flash-001",
            Some("google/gemini-2.0-flash"),
        ),
        (
            Some("gemini"),
            "models/gemini-2.5-flash-lite",
            Some("google/gemini-2.5-flash-lite"),
        ),
        (
            Some("google"),
            "gemini-2.5-flash-lite-preview-06-17",
            Some("google/gemini-2.5-flash-lite"),
        ),
        (
            Some("google"),
            "gemini-3-pro-preview",
            Some("google/gemini-3-pro-preview"),
        ),
        (
            Some("google"),
            "gemini-1.5-pro-002",
            Some("google/gemini-1.5-pro"),
        ),
        (
            Some("google-vertex"),
            "claude-3-5-sonnet-v2@20241022",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (
            Some("vertex"),
            "claude-sonnet-4-5@20250929",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("google-vertex"),
            "projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro",
            Some("google/gemini-2.5-pro"),
        ),
        (Some("google"), "gemini-exp-1206", None),
        // xAI
        (Some("xai"), "grok-4", Some("x-ai/grok-4")),
        (Some("xai"), "grok-4-0709", Some("x-ai/grok-4")),
        (
            Some("xai"),
            "grok-4-1-fast-reasoning",
            Some("x-ai/grok-4.1-fast-reasoning"),
        ),
        (Some("xai"), "grok-3-latest", Some("x-ai/grok-3")),
        (
            Some("xai"),
            "grok-code-fast-1",
            Some("x-ai/grok-code-fast-1"),
        ),
        // Mistral, DeepSeek, Cohere, Meta, Perplexity
        (
            Some("mistral"),
            "mistral-large-latest",
            Some("mistralai/mistral-large-2512"),
        ),
        (
            Some("mistral"),
            "mistral-large-2411",
            Some("mistralai/mistral-large"),
        ),
        (
            Some("mistral"),
            "codestral-2508",
            Some("mistralai/codestral-2508"),
        ),
        (
            Some("mistral"),
            "mistral-small-latest",
            Some("mistralai/mistral-small"),
        ),
        // Dated releases: the table's own, an older one, and newer ones it does not have,
        // which must not fall back to the family's older model.
        (
            Some("mistral"),
            "ministral-3b-2512",
            Some("mistralai/ministral-3b-2512"),
        ),
        (
            Some("mistral"),
            "ministral-3b-latest",
            Some("mistralai/ministral-3b-2512"),
        ),
        (
            Some("mistral"),
            "ministral-3b-2410",
            Some("mistralai/ministral-3b"),
        ),
        // Older than every release the model names: not priced as it.
        (Some("mistral"), "ministral-3b-2409", None),
        (Some("mistral"), "mistral-large-2402", None),
        (Some("mistral"), "mistral-small-2402", None),
        (Some("mistral"), "mistral-small-2501", None),
        (Some("mistral"), "codestral-2405", None),
        (Some("mistral"), "ministral-3b-2603", None),
        (
            Some("mistral"),
            "ministral-8b-2512",
            Some("mistralai/ministral-8b-2512"),
        ),
        (
            None,
            "mistralai/ministral-8b-2512",
            Some("mistralai/ministral-8b-2512"),
        ),
        (Some("mistral"), "mistral-large-2602", None),
        (
            Some("mistral"),
            "mistral-large-2512",
            Some("mistralai/mistral-large-2512"),
        ),
        (
            Some("mistral"),
            "mistral-large-2502",
            Some("mistralai/mistral-large"),
        ),
        (
            Some("mistral"),
            "mistral-small-2506",
            Some("mistralai/mistral-small"),
        ),
        (Some("mistral"), "mistral-small-2604", None),
        (
            Some("mistral"),
            "codestral-2501",
            Some("mistralai/codestral"),
        ),
        (Some("mistral"), "codestral-2512", None),
        (
            Some("deepseek"),
            "deepseek-chat",
            Some("deepseek/deepseek-chat"),
        ),
        (
            Some("deepseek"),
            "deepseek-reasoner",
            Some("deepseek/deepseek-reasoner"),
        ),
        (
            Some("deepseek"),
            "deepseek-v3.2-exp",
            Some("deepseek/deepseek-v3.2-exp"),
        ),
        (
            Some("deepseek"),
            "deepseek-v3.2",
            Some("deepseek/deepseek-v3.2"),
        ),
        (Some("openai"), "gpt-oss-120b", Some("openai/gpt-oss-120b")),
        (
            Some("google"),
            "gemini-3-pro-image-preview",
            Some("google/gemini-3-pro-image-preview"),
        ),
        (
            Some("google"),
            "gemini-3.1-flash-image-preview",
            Some("google/gemini-3.1-flash-image-preview"),
        ),
        (
            Some("cohere"),
            "command-a-03-2025",
            Some("cohere/command-a"),
        ),
        (
            Some("cohere"),
            "command-r7b-12-2024",
            Some("cohere/command-r7b"),
        ),
        (
            Some("groq"),
            "llama-3.3-70b-instruct",
            Some("meta-llama/llama-3.3-70b-instruct"),
        ),
        (
            Some("perplexity"),
            "sonar-pro",
            Some("perplexity/sonar-pro"),
        ),
        (
            Some("perplexity"),
            "llama-3.1-sonar-large-128k-online",
            Some("perplexity/llama-3.1-sonar-large-128k-online"),
        ),
        (Some("perplexity"), "r1-1776", Some("perplexity/r1-1776")),
        (
            Some("openrouter"),
            "perplexity/sonar-pro-search",
            Some("perplexity/sonar-pro-search"),
        ),
        // OpenRouter ids
        (
            Some("openrouter"),
            "anthropic/claude-3.5-sonnet",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (
            Some("openrouter"),
            "anthropic/claude-3.5-sonnet:beta",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (None, "openai/gpt-4o", Some("openai/gpt-4o")),
        (None, "google/gemini-2.5-pro", Some("google/gemini-2.5-pro")),
        (
            None,
            "x-ai/grok-4.1-fast",
            Some("x-ai/grok-4.1-fast-reasoning"),
        ),
        (None, "amazon/nova-pro-v1", Some("amazon/nova-pro")),
        (
            None,
            "mistralai/mistral-large-2411",
            Some("mistralai/mistral-large"),
        ),
        (
            None,
            "meta-llama/llama-3.1-8b-instruct",
            Some("meta-llama/llama-3.1-8b-instruct"),
        ),
        (
            None,
            "openrouter/anthropic/claude-sonnet-4.5",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        // The OpenTelemetry GenAI conventions' `gen_ai.provider.name` values.
        (Some("openai"), "gpt-4o-2024-08-06", Some("openai/gpt-4o")),
        (
            Some("anthropic"),
            "claude-sonnet-4-5",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("aws.bedrock"),
            "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            Some("anthropic/claude-3.5-sonnet"),
        ),
        (
            Some("aws.bedrock"),
            "amazon.nova-pro-v1:0",
            Some("amazon/nova-pro"),
        ),
        (Some("azure.ai.openai"), "gpt-4o", Some("openai/gpt-4o")),
        // Azure AI Foundry's DeepSeek-R1 at its own price, not DeepSeek's API's
        // (`deepseek-reasoner`).
        (
            Some("azure.ai.inference"),
            "DeepSeek-R1",
            Some("azure/deepseek-r1"),
        ),
        (
            Some("az.ai.openai"),
            "gpt-4o-mini",
            Some("openai/gpt-4o-mini"),
        ),
        (
            Some("gcp.vertex_ai"),
            "gemini-2.5-pro",
            Some("google/gemini-2.5-pro"),
        ),
        (
            Some("gcp.vertex_ai"),
            "claude-sonnet-4-5@20250929",
            Some("anthropic/claude-sonnet-4.5"),
        ),
        (
            Some("gcp.gemini"),
            "gemini-2.5-flash",
            Some("google/gemini-2.5-flash"),
        ),
        (
            Some("gcp.gen_ai"),
            "gemini-2.5-flash-lite",
            Some("google/gemini-2.5-flash-lite"),
        ),
        (Some("x_ai"), "grok-4", Some("x-ai/grok-4")),
        (
            Some("mistral_ai"),
            "mistral-large-2411",
            Some("mistralai/mistral-large"),
        ),
        (
            Some("deepseek"),
            "deepseek-chat",
            Some("deepseek/deepseek-chat"),
        ),
        (
            Some("perplexity"),
            "sonar-pro",
            Some("perplexity/sonar-pro"),
        ),
        (
            Some("groq"),
            "llama-3.3-70b-instruct",
            Some("meta-llama/llama-3.3-70b-instruct"),
        ),
        (
            Some("cohere"),
            "command-a-03-2025",
            Some("cohere/command-a"),
        ),
        (Some("ibm.watsonx.ai"), "ibm/granite-3-8b-instruct", None),
        // Unknown
        (None, "my-own-model", None),
        (Some("openai"), "ft:gpt-4o:acme::abc123", None),
        (
            Some("openai"),
            "ft:gpt-4o-2024-08-06:acme:x:abc123",
            Some("openai/ft:gpt-4o-2024-08-06"),
        ),
        (
            None,
            "ft:gpt-4o-mini-2024-07-18:acme::abc123",
            Some("openai/ft:gpt-4o-mini-2024-07-18"),
        ),
        (
            Some("openai"),
            "ft:gpt-4-0613:acme::abc123",
            Some("openai/ft:gpt-4-0613"),
        ),
        (
            Some("openai"),
            "ft:gpt-3.5-turbo-1106:acme::abc123",
            Some("openai/ft:gpt-3.5-turbo"),
        ),
        (Some("openai"), "ft:gpt-4o-2024-11-20:acme::abc123", None),
        (None, "", None),
        (None, "   ", None),
    ];
    for &(p, m, e) in cases {
        check(&t, p, m, e);
    }
}
