//! Pricing tests driven through one `check(call, expect)` helper: each case names a call and
//! the priced id, source and cost columns it must produce, with the arithmetic in a comment.

use std::sync::OnceLock;

use crate::ingest::wire::{Span, SpanType, Usage};

use super::*;

/// The public genai-prices v2 data set, read from next to the repository (never copied into
/// it); `None` when it is not there and `TRACEINGEST_REFERENCE_TESTS` does not require it
/// (`scripts/test.sh` sets it when the file is there): then `test` is said to be skipped, on
/// stderr (not captured), and passes.
pub(super) fn reference_data_set(test: &str) -> Option<String> {
    use std::io::Write;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/reference/genai-prices-v2-data.json"
    );
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) => {
            assert!(
                std::env::var("TRACEINGEST_REFERENCE_TESTS").as_deref() != Ok("required"),
                "TRACEINGEST_REFERENCE_TESTS=required but {path}: {e}"
            );
            let _ = writeln!(
                std::io::stderr(),
                "\nSKIPPED {test}: {path}: {e} (the genai-prices v2 data set is not next to the \
                 repository; TRACEINGEST_REFERENCE_TESTS=required makes this a failure)\n"
            );
            None
        }
    }
}

/// Test-local prices in the project's own format, so the arithmetic cases do not change when
/// the built-in table does. Merged over the built-in table, which the last cases use.
const PRICES: &str = r#"{"models": [
  {"id": "test/basic", "prompt": "0.000003", "completion": "0.000015",
   "cache_read": "0.0000003", "cache_write": "0.00000375"},
  {"id": "test/reasoner", "prompt": "0.000001", "completion": "0.000004",
   "internal_reasoning": "0.000002"},
  {"id": "test/units", "request": "0.005", "image": "0.001", "web_search": "0.01"},
  {"id": "test/tiered", "aliases": ["tiered-alias"], "prompt": "0.000001", "completion": "0.000002",
   "cache_read": "0.0000001", "request": "0.01",
   "long_context": {"threshold": 200000, "prompt": "0.000002", "completion": "0.000003",
                    "cache_read": "0.0000002"}},
  {"id": "test/odd", "prompt": "0.000000000015", "completion": "0.00000000005",
   "cache_read": "0.000000000049999"},
  {"id": "test/huge", "prompt": "1", "completion": "100"},
  {"id": "test/tiny", "prompt": "0.0000000001"},
  {"id": "test/free"},
  {"id": "test/zero", "prompt": "0"},
  {"id": "test/painter", "prompt": "0.0000003", "completion": "0.0000025", "image": "0.0387",
   "image_tokens": 1290, "internal_reasoning": "0.0000025"},
  {"id": "test/dated", "prompt": "0.000001", "completion": "0.000002",
   "long_context": {"threshold": 1000, "prompt": "0.000002"},
   "changes": [
     {"from": "2026-07-30", "prompt": "0.0000002"},
     {"from": "2026-09-01T12:00:00Z", "prompt": "0.0000003", "completion": "0.000001",
      "long_context": [{"threshold": 2000, "prompt": "0.0000009"},
                       {"threshold": 1000, "prompt": "0.0000006"}]}
   ]}
]}"#;

fn table() -> &'static PriceTable {
    static T: OnceLock<PriceTable> = OnceLock::new();
    T.get_or_init(|| PriceTable::with_overrides(PRICES, "test-prices.json").unwrap())
}

/// 2^53 - 1, the largest count the schema accepts.
const MAX_COUNT: u64 = (1 << 53) - 1;

/// One model call to price.
#[derive(Clone, Copy)]
struct Call {
    provider: Option<&'static str>,
    model: Option<&'static str>,
    usage: Option<Usage>,
    /// The span's startTime (epoch ms).
    at: u64,
}

/// A call of `model` with an empty (all counts absent) usage object.
fn call(model: &'static str) -> Call {
    Call {
        provider: None,
        model: Some(model),
        usage: Some(Usage::default()),
        at: 0,
    }
}

impl Call {
    fn via(mut self, provider: &'static str) -> Self {
        self.provider = Some(provider);
        self
    }
    /// Started at an RFC 3339 time or date.
    fn at(mut self, when: &str) -> Self {
        self.at = parse_instant(when).unwrap();
        self
    }
    fn no_usage(mut self) -> Self {
        self.usage = None;
        self
    }
    fn set(mut self, f: impl FnOnce(&mut Usage)) -> Self {
        f(self.usage.get_or_insert_with(Usage::default));
        self
    }
    fn input(self, n: u64) -> Self {
        self.set(|u| u.input_tokens = Some(n))
    }
    fn output(self, n: u64) -> Self {
        self.set(|u| u.output_tokens = Some(n))
    }
    fn cached(self, n: u64) -> Self {
        self.set(|u| u.cached_input_tokens = Some(n))
    }
    fn cache_write(self, n: u64) -> Self {
        self.set(|u| u.cache_write_input_tokens = Some(n))
    }
    fn reasoning(self, n: u64) -> Self {
        self.set(|u| u.reasoning_tokens = Some(n))
    }
    fn images(self, n: u64) -> Self {
        self.set(|u| u.image_count = Some(n))
    }
    fn searches(self, n: u64) -> Self {
        self.set(|u| u.web_search_count = Some(n))
    }
    fn requests(self, n: u64) -> Self {
        self.set(|u| u.request_count = Some(n))
    }
    /// Every count present and zero.
    fn zeros(self) -> Self {
        self.set(|u| {
            *u = Usage {
                input_tokens: Some(0),
                output_tokens: Some(0),
                total_tokens: Some(0),
                reasoning_tokens: Some(0),
                cached_input_tokens: Some(0),
                cache_write_input_tokens: Some(0),
                image_count: Some(0),
                web_search_count: Some(0),
                request_count: Some(0),
            }
        })
    }
}

/// Prices `c` and compares the result, written as `id (source) column=USD ...` with the
/// non-null columns in table order, `unknown`, or `error: ...`.
fn check(c: Call, expect: &str) {
    let mut pricer = Pricer::new();
    let got = pricer.price(table(), c.provider, c.model, c.usage.as_ref(), c.at);
    let text = match got {
        Err(e) => format!("error: {e:?}"),
        Ok(None) => "unknown".to_string(),
        Ok(Some(p)) => {
            let k = p.costs;
            let mut s = format!("{} ({})", p.model_id, p.source);
            for (name, v) in [
                ("prompt", k.prompt),
                ("completion", k.completion),
                ("request", k.request),
                ("image", k.image),
                ("web_search", k.web_search),
                ("internal_reasoning", k.internal_reasoning),
                ("cache_read", k.cache_read),
                ("cache_write", k.cache_write),
                ("total", k.total),
            ] {
                if let Some(v) = v {
                    s += &format!(" {name}={}", format_money(v));
                }
            }
            s
        }
    };
    assert_eq!(
        text, expect,
        "model {:?} via {:?} usage {:?}",
        c.model, c.provider, c.usage
    );
}

#[test]
fn prompt_completion_and_cache() {
    // 1000 x 3e-6 = 0.003; 500 x 15e-6 = 0.0075; total 0.0105.
    check(
        call("test/basic").input(1000).output(500),
        "test/basic (file) prompt=0.0030000000 completion=0.0075000000 total=0.0105000000",
    );
    // prompt = 1000 - 800 = 200 x 3e-6 = 0.0006; cache read 800 x 3e-7 = 0.00024; total 0.00084.
    check(
        call("test/basic").input(1000).cached(800),
        "test/basic (file) prompt=0.0006000000 cache_read=0.0002400000 total=0.0008400000",
    );
    // More cached than input: prompt max(0, 100 - 300) = 0 -> null; cache read 300 x 3e-7.
    check(
        call("test/basic").input(100).cached(300),
        "test/basic (file) cache_read=0.0000900000 total=0.0000900000",
    );
    // Cached without input: prompt 0 -> null; 50 x 3e-7 = 0.000015.
    check(
        call("test/basic").cached(50),
        "test/basic (file) cache_read=0.0000150000 total=0.0000150000",
    );
    // Cache write: 1000 x 3e-6 = 0.003; 2000 x 3.75e-6 = 0.0075; total 0.0105.
    check(
        call("test/basic").input(1000).cache_write(2000),
        "test/basic (file) prompt=0.0030000000 cache_write=0.0075000000 total=0.0105000000",
    );
    // All four: 1000-600=400 x 3e-6 = 0.0012; 100 x 15e-6 = 0.0015; 600 x 3e-7 = 0.00018;
    // 40 x 3.75e-6 = 0.00015; total 0.00303.
    check(
        call("test/basic").input(1000).cached(600).output(100).cache_write(40),
        "test/basic (file) prompt=0.0012000000 completion=0.0015000000 cache_read=0.0001800000 cache_write=0.0001500000 total=0.0030300000",
    );
    // Case-insensitive id.
    check(
        call("TEST/Basic").output(1),
        "test/basic (file) completion=0.0000150000 total=0.0000150000",
    );
}

#[test]
fn reasoning_with_and_without_a_reasoning_price() {
    // No reasoning price: completion = all 1000 output tokens x 15e-6 = 0.015.
    check(
        call("test/basic").output(1000).reasoning(400),
        "test/basic (file) completion=0.0150000000 total=0.0150000000",
    );
    // Reasoning price: completion (1000 - 400) x 4e-6 = 0.0024; reasoning 400 x 2e-6 = 0.0008.
    check(
        call("test/reasoner").output(1000).reasoning(400),
        "test/reasoner (file) completion=0.0024000000 internal_reasoning=0.0008000000 total=0.0032000000",
    );
    // Reasoning above output: completion max(0, 100 - 300) = 0 -> null; 300 x 2e-6 = 0.0006.
    check(
        call("test/reasoner").output(100).reasoning(300),
        "test/reasoner (file) internal_reasoning=0.0006000000 total=0.0006000000",
    );
    // Reasoning absent: completion 1000 x 4e-6 = 0.004; reasoning count 0 -> null.
    check(
        call("test/reasoner").output(1000),
        "test/reasoner (file) completion=0.0040000000 total=0.0040000000",
    );
    // Reasoning without output: 50 x 2e-6 = 0.0001.
    check(
        call("test/reasoner").reasoning(50),
        "test/reasoner (file) internal_reasoning=0.0001000000 total=0.0001000000",
    );
}

#[test]
fn requests_images_and_searches() {
    // Absent usage: request count 1 x 0.005.
    check(
        call("test/units").no_usage(),
        "test/units (file) request=0.0050000000 total=0.0050000000",
    );
    // Absent requestCount in a usage object: still 1.
    check(
        call("test/units").input(10),
        "test/units (file) request=0.0050000000 total=0.0050000000",
    );
    // 3 x 0.005 = 0.015; 4 x 0.001 = 0.004; 2 x 0.01 = 0.02; total 0.039.
    check(
        call("test/units").requests(3).images(4).searches(2),
        "test/units (file) request=0.0150000000 image=0.0040000000 web_search=0.0200000000 total=0.0390000000",
    );
    // requestCount 0: not billed; nothing else priced -> total 0.
    check(
        call("test/units").requests(0),
        "test/units (file) total=0.0000000000",
    );
    // Images and searches on a model without those prices are not billed.
    check(
        call("test/basic").images(5).searches(3),
        "test/basic (file) total=0.0000000000",
    );
}

#[test]
fn zero_and_absent_usage() {
    // Known model, nothing to bill: total is 0, never null.
    check(
        call("test/basic").zeros(),
        "test/basic (file) total=0.0000000000",
    );
    check(
        call("test/basic").no_usage(),
        "test/basic (file) total=0.0000000000",
    );
    check(call("test/basic"), "test/basic (file) total=0.0000000000");
    // Every count zero, request included: the request price is not billed either.
    check(
        call("test/units").zeros(),
        "test/units (file) total=0.0000000000",
    );
    // A model without any price.
    check(
        call("test/free").input(1000).output(1000),
        "test/free (file) total=0.0000000000",
    );
    // An explicit zero price is billed at zero (the column is 0, not null) when counted...
    check(
        call("test/zero").input(1000),
        "test/zero (file) prompt=0.0000000000 total=0.0000000000",
    );
    // ...and null when the count is 0.
    check(
        call("test/zero").input(0),
        "test/zero (file) total=0.0000000000",
    );
}

#[test]
fn unknown_models() {
    check(call("nope/nothing").input(1000), "unknown");
    check(call("").input(1000), "unknown");
    check(
        Call {
            provider: Some("openai"),
            model: None,
            usage: None,
            at: 0,
        },
        "unknown",
    );
}

#[test]
fn long_context_tier() {
    // Exactly at the threshold: base. 200000 x 1e-6 = 0.2; request 0.01; total 0.21.
    check(
        call("test/tiered").input(200_000),
        "test/tiered (file) prompt=0.2000000000 request=0.0100000000 total=0.2100000000",
    );
    // One token above: tier for the whole call. 200001 x 2e-6 = 0.400002; request stays 0.01.
    check(
        call("test/tiered").input(200_001),
        "test/tiered (file) prompt=0.4000020000 request=0.0100000000 total=0.4100020000",
    );
    // Input size counts cache writes: 150000 + 50000 = 200000 -> base; 150000 x 1e-6 = 0.15.
    check(
        call("test/tiered").input(150_000).cache_write(50_000),
        "test/tiered (file) prompt=0.1500000000 request=0.0100000000 total=0.1600000000",
    );
    // 150000 + 50001 = 200001 -> tier; 150000 x 2e-6 = 0.3.
    check(
        call("test/tiered").input(150_000).cache_write(50_001),
        "test/tiered (file) prompt=0.3000000000 request=0.0100000000 total=0.3100000000",
    );
    // Input includes the cached part: 200001 -> tier for every dimension.
    // prompt 1 x 2e-6 = 0.000002; completion 10 x 3e-6 = 0.00003; cache 200000 x 2e-7 = 0.04;
    // request 0.01; total 0.050032.
    check(
        call("test/tiered").input(200_001).cached(200_000).output(10),
        "test/tiered (file) prompt=0.0000020000 completion=0.0000300000 request=0.0100000000 cache_read=0.0400000000 total=0.0500320000",
    );
    // Absent usage: base, request only.
    check(
        call("tiered-alias").no_usage(),
        "test/tiered (file) request=0.0100000000 total=0.0100000000",
    );
}

#[test]
fn dated_prices_apply_by_start_time() {
    // Before the first change: base 1000 x 1e-6 = 0.001; 10 x 2e-6 = 0.00002.
    check(
        call("test/dated")
            .input(1000)
            .output(10)
            .at("2026-07-29T23:59:59.999Z"),
        "test/dated (file) prompt=0.0010000000 completion=0.0000200000 total=0.0010200000",
    );
    // ...and its tier: 1001 x 2e-6 = 0.002002.
    check(
        call("test/dated")
            .input(1001)
            .at("2026-07-29T23:59:59.999Z"),
        "test/dated (file) prompt=0.0020020000 total=0.0020020000",
    );
    // From 2026-07-30 00:00 UTC: 1000 x 0.2e-6 = 0.0002. The change replaces the prices whole:
    // completion is no longer billed, and the tier is gone (1001 x 0.2e-6 = 0.0002002).
    check(
        call("test/dated").input(1000).output(10).at("2026-07-30"),
        "test/dated (file) prompt=0.0002000000 total=0.0002000000",
    );
    check(
        call("test/dated").input(1001).at("2026-09-01T11:59:59Z"),
        "test/dated (file) prompt=0.0002002000 total=0.0002002000",
    );
    // From 2026-09-01 12:00 UTC, two tiers: <= 1000 base 0.3e-6; above 1000 0.6e-6; above
    // 2000 0.9e-6, each for the whole call.
    check(
        call("test/dated")
            .input(1000)
            .output(10)
            .at("2026-09-01T12:00:00Z"),
        "test/dated (file) prompt=0.0003000000 completion=0.0000100000 total=0.0003100000",
    );
    check(
        call("test/dated").input(2000).at("2026-09-01T12:00:00Z"),
        "test/dated (file) prompt=0.0012000000 total=0.0012000000",
    );
    check(
        call("test/dated")
            .input(1500)
            .cache_write(501)
            .at("2030-01-01"),
        "test/dated (file) prompt=0.0013500000 total=0.0013500000",
    );
}

#[test]
fn image_output_is_billed_apart_from_text_output() {
    // 3000 output tokens, 2 images of 1290 tokens each: text = 3000 - 2580 = 420 at 2.5e-6 =
    // 0.00105; images 2 x 0.0387 = 0.0774.
    check(
        call("test/painter").output(3000).images(2),
        "test/painter (file) completion=0.0010500000 image=0.0774000000 total=0.0784500000",
    );
    // Reasoning comes out of the text part too: 420 - 100 = 320 x 2.5e-6 = 0.0008.
    check(
        call("test/painter").output(3000).images(2).reasoning(100),
        "test/painter (file) completion=0.0008000000 image=0.0774000000 internal_reasoning=0.0002500000 total=0.0784500000",
    );
    // Fewer output tokens than the images take: no text (null), the images still billed.
    check(
        call("test/painter").output(1000).images(1),
        "test/painter (file) image=0.0387000000 total=0.0387000000",
    );
    // No images: all output is text, 1000 x 2.5e-6 = 0.0025.
    check(
        call("test/painter").output(1000),
        "test/painter (file) completion=0.0025000000 total=0.0025000000",
    );
    // Built in: gemini-2.5-flash-image charged text output at the text rate ($2.50 per 1M),
    // not the image rate ($30): 2000 - 1290 = 710 x 2.5e-6 = 0.001775; 1 image 0.0387.
    check(
        call("gemini-2.5-flash-image").via("google").input(100).output(2000).images(1),
        "google/gemini-2.5-flash-image (builtin) prompt=0.0000300000 completion=0.0017750000 image=0.0387000000 total=0.0405050000",
    );
    check(
        call("gemini-2.5-flash-image").via("google").output(1000),
        "google/gemini-2.5-flash-image (builtin) completion=0.0025000000 total=0.0025000000",
    );
}

/// A span of the given type calling gpt-4o, started at the epoch.
fn span(span_type: SpanType, usage: &Usage) -> Span<'static> {
    Span {
        span_id: "s1",
        span_type,
        name: "call",
        end_time: 1,
        provider: Some("openai"),
        model_id: Some("gpt-4o"),
        usage: Some(*usage),
        ..Span::default()
    }
}

#[test]
fn only_llm_and_embedding_spans_are_priced() {
    let usage = Usage {
        input_tokens: Some(1000),
        ..Usage::default()
    };
    let mut p = Pricer::new();
    for (t, priced) in [
        (SpanType::Llm, true),
        (SpanType::Embedding, true),
        (SpanType::Agent, false),
        (SpanType::Tool, false),
        (SpanType::Other, false),
    ] {
        let r = p.price_span(table(), &span(t, &usage)).unwrap();
        assert_eq!(r.is_some(), priced, "{t:?}");
    }
}

#[test]
fn a_span_is_priced_at_its_start_time() {
    let usage = Usage {
        input_tokens: Some(1000),
        ..Usage::default()
    };
    let mut p = Pricer::new();
    let mut s = span(SpanType::Llm, &usage);
    s.model_id = Some("test/dated");
    let prompt = |p: &mut Pricer, s: &Span| {
        p.price_span(table(), s)
            .unwrap()
            .unwrap()
            .costs
            .prompt
            .map(format_money)
    };
    s.start_time = parse_instant("2026-07-29T23:59:59.999Z").unwrap();
    assert_eq!(prompt(&mut p, &s).as_deref(), Some("0.0010000000"));
    // Same (provider, modelId): a cache hit, priced at the new start time.
    s.start_time += 1;
    assert_eq!(prompt(&mut p, &s).as_deref(), Some("0.0002000000"));
    assert_eq!(p.cache_stats().hits, 1);
}

mod builtin;
