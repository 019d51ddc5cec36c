//! The whole genai-prices `v2` data set, walked: every provider, model and conditional price,
//! matched and priced by the engine and by an independent computation written here from the
//! reference JSON (a port of genai-prices' own rules at the data set's commit, 47df840).
//!
//! Independent of the engine (`genai_walk_reference.rs`): the JSON is read by a small reader
//! of its own (numbers kept as text), prices are exact integers in units of 1e-30 USD, the conditional price, the tier and
//! the per-unit counts follow genai-prices' `get_prices`, `calc_unit_price` and
//! `compute_leaf_values`, and the model a (provider, modelId) names follows its
//! `find_provider_model`. Nothing here uses floating point.
//!
//! What is checked, per model, price variant (each conditional entry, at instants around its
//! start date or daily window) and token mix (including input sizes at and one past every
//! tier start, reached with and without cache writes):
//!
//! 1. each cost column is the contract's count times the price, rounded half-up once to
//!    1e-10 USD, and null where there is no price or no count; the total is their sum;
//! 2. the exact (unrounded) columns add up to genai-prices' exact total for the same usage:
//!    so the engine differs from genai-prices only by the rounding of each column
//!    (`docs/pricing-file.md`: "rounded half-up once per dimension"), at most half a unit of
//!    1e-10 per priced column.
//!
//! Deliberate differences, documented in `docs/pricing-file.md` (section 2) and the contract,
//! which this test does not count as mismatches: a model whose prices are all of kinds the v1
//! usage has no count for is left out (unpriced, not 0); `requestCount` is billed (genai-prices
//! bills one request; the mixes here send none, which both bill as 1); where genai-prices finds
//! no model (an unknown provider id, a provider without a matching model, no provider whose
//! `model_match` holds) the engine keeps looking (first dot-segment, other providers,
//! fallbacks of its own); those are counted and printed, not compared. A provider string
//! whose first dot-segment is a provider id is that provider before any `provider_match`
//! (`azure.ai.openai` is `azure`; genai-prices: `openai`): checked against genai-prices'
//! answer for the segment, and counted. Outside the walk: a daily window whose end is before
//! its start crosses midnight here (genai-prices never applies it; the data set has none).

#[path = "genai_walk_reference.rs"]
mod reference;

use crate::pricing::{ModelPrice, PriceTable, Source};

use reference::{
    days, genai_find, read_json, read_reference, round_1e10, Constraint, Mix, PriceObject, DAY_MS,
};

// Instants that reach every conditional price.

/// genai-prices' `get_prices`: tried last to first, the first active wins, else the first.
fn entry_at(entries: &[(Constraint, PriceObject)], at: u64) -> usize {
    entries.iter().rposition(|(c, _)| c.active(at)).unwrap_or(0)
}

/// Instants that reach every entry: a day well before the data set's changes, every start
/// date and the millisecond before it, and around every daily window, before and after each
/// start date.
fn instants(entries: &[(Constraint, PriceObject)]) -> Vec<u64> {
    let mut days_at = vec![days("2024-03-05")];
    let mut out = vec![days("2024-03-05") * DAY_MS + 12 * 3_600_000];
    for (c, _) in entries {
        if let Constraint::StartDay(d) = *c {
            out.extend([d * DAY_MS - 1, d * DAY_MS, d * DAY_MS + 43_200_000]);
            days_at.push(d + 3);
        }
    }
    for (c, _) in entries {
        if let Constraint::Daily(a, b) = *c {
            for d in &days_at {
                let day = d * DAY_MS;
                out.extend([day + a - 1, day + a, day + b - 1, day + b]);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Token mixes for a price object: plain ones, odd counts for the rounding, and, for every
/// tier start, input sizes at the start (base price) and one past it (tier price), reached
/// through cached input and through cache writes.
fn mixes(starts: &[u64], images: bool) -> Vec<Mix> {
    let m = |input, cached, cache_write, output, reasoning, searches| Mix {
        input,
        cached,
        cache_write,
        output,
        reasoning,
        searches,
        images: 0,
    };
    let mut out = vec![
        m(1000, 0, 0, 500, 0, 0),
        m(1, 0, 0, 1, 0, 0),
        m(7, 3, 1, 3, 1, 1),
        m(12_345, 2_345, 678, 4_321, 1_234, 3),
        m(333_333, 111_111, 3, 77_777, 7, 0),
        m(0, 0, 0, 0, 0, 0),
    ];
    for &s in starts {
        out.extend([
            m(s, 0, 0, 1_001, 0, 0),
            m(s + 1, 0, 0, 1_001, 0, 0),
            m(s, s / 2, 0, 999, 333, 1),
            m(s + 1, s / 2, 0, 999, 333, 1),
            m(s - 100, 7, 100, 55, 0, 0),
            m(s - 99, 7, 100, 55, 0, 0),
            m(s, 0, 1, 10, 0, 0),
        ]);
    }
    if images {
        out.push(Mix {
            images: 2,
            ..m(5_000, 1_000, 0, 9_000, 500, 0)
        });
    }
    out
}

/// One checked call: `Err` describes a mismatch.
fn check_call(
    engine: &ModelPrice,
    obj: &PriceObject,
    mix: &Mix,
    at: u64,
    image_tokens: u64,
) -> Result<(), String> {
    let got = engine
        .costs(Some(&mix.usage()), at)
        .map_err(|e| format!("{e:?}"))?;
    let exact = obj.contract_columns(mix, image_tokens);
    let want: Vec<Option<i64>> = exact.iter().map(|c| c.map(round_1e10)).collect();
    let dims = got.dimensions();
    if dims.as_slice() != want.as_slice() {
        return Err(format!("columns {dims:?}, want {want:?}"));
    }
    let sum: i64 = dims.iter().flatten().sum();
    if got.total != Some(sum) {
        return Err(format!("total {:?}, columns add up to {sum}", got.total));
    }
    let exact_sum: u128 = exact.iter().flatten().sum();
    let genai = obj.genai_total(&mix.genai(image_tokens));
    if exact_sum != genai {
        return Err(format!(
            "exact columns add up to {exact_sum} e-30, genai-prices' total is {genai} e-30"
        ));
    }
    Ok(())
}

#[test]
fn every_model_and_price_of_the_data_set_matches_and_prices_as_genai_prices_does() {
    let Some(text) = crate::pricing::tests::reference_data_set(
        "pricing::genai_walk_tests::every_model_and_price_of_the_data_set_matches_and_prices_as_genai_prices_does",
    ) else {
        return;
    };
    let table = PriceTable::with_overrides(&text, "genai-prices-v2-data.json").unwrap();
    let root = read_json(&text);
    let ps = read_reference(&root, &table);

    // Prices: every model, every conditional entry, every mix.
    let mut bad = Vec::new();
    let (mut calls, mut left_out) = (0usize, 0usize);
    for p in &ps {
        for m in &p.models {
            let Some(engine) = m.engine else {
                left_out += 1;
                continue;
            };
            let engine = &table.models()[engine];
            let mut reached = vec![false; m.entries.len()];
            for at in instants(&m.entries) {
                let e = entry_at(&m.entries, at);
                reached[e] = true;
                let obj = &m.entries[e].1;
                let images = m.image_tokens > 0 && obj.fields.contains_key("output_image_mtok");
                for mix in mixes(&obj.tier_starts(), images) {
                    calls += 1;
                    if let Err(why) = check_call(engine, obj, &mix, at, m.image_tokens) {
                        bad.push(format!("{}/{} at {at} {mix:?}: {why}", p.id, m.id));
                    }
                }
            }
            assert!(
                reached.iter().all(|r| *r),
                "{}/{}: some conditional prices were never selected",
                p.id,
                m.id
            );
        }
    }

    // Matching: each model's own literals and regex samples, with its provider's id (as
    // written, upper-cased, with a dot-suffix), its provider_match literals, no provider, and
    // a few common provider strings.
    let common = [
        "azure",
        "openrouter",
        "aws",
        "amazon-bedrock",
        "google-vertex",
        "anthropic.messages",
        "xai",
        "azure.ai.openai",
        "az.ai.openai",
        "azure.ai.inference",
        "gcp.vertex_ai",
        "gcp.gemini",
        "aws.bedrock",
        "openai.responses",
        "groq.openai",
        "together.anthropic",
        "vertex_ai.anthropic",
    ];
    let (mut pairs, mut beyond, mut by_segment) = (0usize, 0usize, 0usize);
    for p in &ps {
        // Provider strings tried with a model's id only.
        let mut variants = vec![p.id.to_uppercase(), format!("{}.chat", p.id)];
        if let Some(r) = &p.provider_match {
            r.samples(&mut variants);
        }
        variants.extend(common.iter().map(|c| c.to_string()));
        for m in &p.models {
            let mut refs = vec![m.id.to_lowercase(), m.id.to_uppercase()];
            m.rule.samples(&mut refs);
            refs.sort();
            refs.dedup();
            let mut own: Vec<(Option<&str>, &str)> = Vec::new();
            for r in &refs {
                own.extend([(None, r.as_str()), (Some(p.id.as_str()), r.as_str())]);
            }
            let others = variants.iter().map(|v| (Some(v.as_str()), m.id.as_str()));
            for (k, (prov, r)) in own.iter().copied().chain(others).enumerate() {
                pairs += 1;
                let genai = genai_find(&ps, prov, r).and_then(|(gp, gm)| ps[gp].models[gm].engine);
                let Some(want) = genai else {
                    // Where genai-prices finds nothing the engine may look further
                    // (documented); counted for the model's own provider and none.
                    if k < own.len()
                        && table
                            .find(prov, r)
                            .is_some_and(|f| f.source == Source::File)
                    {
                        beyond += 1;
                    }
                    continue;
                };
                let found = table.find(prov, r);
                let want = &table.models()[want];
                if found.is_some_and(|f| std::ptr::eq(f, want)) {
                    continue;
                }
                // Documented: a provider's first dot-segment that is a provider id comes
                // before `provider_match` (`azure.ai.openai` is `azure`).
                let seg = prov.and_then(|p| p.split_once('.')).map(|(seg, _)| seg);
                let seg_want = seg
                    .and_then(|seg| genai_find(&ps, Some(seg), r))
                    .and_then(|(gp, gm)| ps[gp].models[gm].engine);
                if ps.iter().any(|x| Some(x.id.as_str()) == seg)
                    && found.is_some_and(|f| {
                        seg_want.is_some_and(|w| std::ptr::eq(f, &table.models()[w]))
                    })
                {
                    by_segment += 1;
                    continue;
                }
                bad.push(format!(
                    "({prov:?}, {r:?}) -> {:?}, genai-prices: {}",
                    found.map(|f| &f.id),
                    want.id
                ));
            }
        }
    }
    eprintln!(
        "genai-prices walk: {calls} calls priced, {left_out} models left out; {pairs} \
         (provider, modelId) pairs, {by_segment} found by the provider's first dot-segment \
         where genai-prices uses provider_match, {beyond} matched by the engine where \
         genai-prices finds none"
    );
    assert!(calls > 9_000, "{calls}");
    assert!(
        bad.is_empty(),
        "{} mismatches, the first ones:\n{}",
        bad.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
