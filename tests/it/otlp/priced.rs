//! OTLP spans priced end to end: a client's own cost for a model the table does not know,
//! and a provider named by the semantic conventions.

use super::*;

/// A cost the client reported for a model the price table does not know stands as the total
/// (`pricing_source = 'client'`); for a known model our own price wins.
#[test]
fn a_client_cost_stands_for_an_unknown_model() {
    let server = Server::start();
    let key = server.ready_key("org-client-cost");
    let body = export_of(
        "lib",
        &[
            (
                "0000000000000c01",
                vec![
                    ("gen_ai.operation.name", str("chat")),
                    ("gen_ai.provider.name", str("acme")),
                    ("gen_ai.request.model", str("acme-large-7")),
                    ("gen_ai.usage.input_tokens", int(1000)),
                    ("gen_ai.usage.cost", dbl(0.0123)),
                ],
            ),
            (
                "0000000000000c02",
                vec![
                    ("gen_ai.operation.name", str("chat")),
                    ("gen_ai.provider.name", str("openai")),
                    ("gen_ai.request.model", str("gpt-4o")),
                    ("gen_ai.usage.input_tokens", int(1000)),
                    ("gen_ai.usage.output_tokens", int(100)),
                    ("gen_ai.usage.cost", str("9.99")),
                ],
            ),
        ],
    );
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    server.wait_rows(2);
    assert_eq!(
        server.rows(
            "span_id, toString(reported_cost) AS reported, toString(total_cost) AS total, \
             pricing_source, priced_model_id",
            "ORDER BY span_id",
        ),
        vec![
            json!({"span_id": "0000000000000c01", "reported": "0.0123000000",
                   "total": "0.0123000000", "pricing_source": "client", "priced_model_id": ""}),
            // gpt-4o: $2.50 per million input tokens, $10 per million output tokens.
            json!({"span_id": "0000000000000c02", "reported": "9.9900000000",
                   "total": "0.0035000000", "pricing_source": "builtin",
                   "priced_model_id": "openai/gpt-4o"}),
        ]
    );
}

/// The GenAI conventions' provider values are priced: `aws.bedrock` with a Bedrock model id
/// (here from OpenLLMetry's Bedrock instrumentation, whose input count leaves the cache out)
/// and `gcp.vertex_ai`.
#[test]
fn a_semconv_provider_is_priced() {
    let server = Server::start();
    let key = server.ready_key("org-semconv");
    let body = export_of(
        "opentelemetry.instrumentation.bedrock",
        &[(
            "0000000000000d01",
            vec![
                ("gen_ai.operation.name", str("chat")),
                ("gen_ai.provider.name", str("aws.bedrock")),
                (
                    "gen_ai.request.model",
                    str("us.anthropic.claude-3-5-sonnet-20240620-v1:0"),
                ),
                ("gen_ai.usage.input_tokens", int(1000)),
                ("gen_ai.usage.cache_read.input_tokens", int(2000)),
                ("gen_ai.usage.output_tokens", int(100)),
            ],
        )],
    );
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let body = export_of(
        "lib",
        &[(
            "0000000000000d02",
            vec![
                ("gen_ai.operation.name", str("generate_content")),
                ("gen_ai.provider.name", str("gcp.vertex_ai")),
                ("gen_ai.request.model", str("gemini-2.5-pro")),
                ("gen_ai.usage.input_tokens", int(1000)),
                ("gen_ai.usage.output_tokens", int(100)),
            ],
        )],
    );
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    server.wait_rows(2);
    assert_eq!(
        server.rows(
            "span_id, provider, toString(input_tokens) AS input, \
             toString(cached_input_tokens) AS cached, toString(total_cost) AS total, \
             pricing_source, priced_model_id",
            "ORDER BY span_id",
        ),
        vec![
            // Claude 3.5 Sonnet: $3 per million input tokens, $0.30 per million read from the
            // cache, $15 per million output: 1000 missed the cache, 2000 hit it.
            json!({"span_id": "0000000000000d01", "provider": "aws.bedrock",
                   "input": "3000", "cached": "2000", "total": "0.0051000000",
                   "pricing_source": "builtin", "priced_model_id": "anthropic/claude-3.5-sonnet"}),
            // Gemini 2.5 Pro: $1.25 per million input tokens, $10 per million output.
            json!({"span_id": "0000000000000d02", "provider": "gcp.vertex_ai",
                   "input": "1000", "cached": "0", "total": "0.0022500000",
                   "pricing_source": "builtin", "priced_model_id": "google/gemini-2.5-pro"}),
        ]
    );
}
