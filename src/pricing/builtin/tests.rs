//! Checks over the whole built-in table: shape, tiers, provenance, and that no two models claim
//! the same id unless one explicitly takes precedence.

use std::collections::{BTreeSet, HashSet};

use super::super::matching;
use super::super::table::{ModelPrice, PriceTable, Selected};
use super::*;

#[test]
fn table_is_large_lower_case_and_sourced() {
    let models = models();
    assert!(models.len() >= 150, "{} models", models.len());
    let mut keys = HashSet::new();
    for m in &models {
        assert!(m.id.contains('/'), "{} is not vendor/model", m.id);
        for p in m.periods.iter() {
            assert!(!p.prices.base.is_empty(), "{} has no price", m.id);
        }
        for k in std::iter::once(&m.id).chain(&m.aliases) {
            assert_eq!(k, &k.to_lowercase(), "{k} is not lower case");
            assert!(keys.insert(k.clone()), "{k} names two models");
        }
        let p = m
            .provenance
            .expect("every built-in model says where its prices come from");
        assert!(p.url.starts_with("https://"), "{}: {}", m.id, p.url);
        assert!(
            super::super::instant::parse_instant(p.checked).is_ok(),
            "{}",
            m.id
        );
    }
    for vendor in [
        "openai/",
        "anthropic/",
        "google/",
        "mistralai/",
        "x-ai/",
        "deepseek/",
        "meta-llama/",
        "amazon/",
        "cohere/",
        "perplexity/",
        "bedrock/",
    ] {
        let n = models.iter().filter(|m| m.id.starts_with(vendor)).count();
        assert!(n >= 5, "only {n} models of {vendor}");
    }
}

#[test]
fn tiers_raise_prices_and_keep_untiered_dimensions() {
    for m in models() {
        for period in m.periods.iter() {
            let set = &period.prices;
            let Some(lc) = set.tiers.first() else {
                continue;
            };
            assert!(lc.threshold >= 100_000, "{}", m.id);
            for d in Dimension::ALL {
                match (set.base.get(d), lc.rates.get(d)) {
                    (Some(_), None) => panic!("{} loses {} above the tier", m.id, d.name()),
                    (Some(b), Some(t)) => assert!(
                        t.cost(1_000_000).unwrap() >= b.cost(1_000_000).unwrap(),
                        "{}",
                        m.id
                    ),
                    _ => {}
                }
            }
        }
    }
}

/// Every id and alias of every model, tried as clients send it (with the vendor as provider,
/// bare, and as a `vendor/model` id), reaches through matching's candidates only its own model
/// or models it declares `.over(...)`. Exact ids win over fallbacks, so a declared model loses
/// those ids to this one; an undeclared one is a conflict to resolve in the table. Every
/// declaration must also be needed.
#[test]
fn no_two_models_claim_an_id_unless_one_takes_precedence() {
    let table = PriceTable::builtin();
    let mut conflicts = BTreeSet::new();
    let mut stale = BTreeSet::new();
    for e in entries() {
        let mut reached = BTreeSet::new();
        for key in std::iter::once(e.id).chain(e.aliases.iter().copied()) {
            let (vendor, name) = key.split_once('/').expect("vendor/model");
            for (provider, id) in [(None, key), (Some(vendor), name), (None, name)] {
                for c in matching::candidates(provider, id) {
                    let Some(other) = table.get(&c.id) else {
                        continue;
                    };
                    if other.id == e.id {
                        continue;
                    }
                    reached.insert(other.id.clone());
                    if !e.over.contains(&other.id.as_str()) {
                        conflicts.insert(format!(
                            "{key} (of {}) also reaches {} through {:?}",
                            e.id, other.id, c.id
                        ));
                    }
                }
            }
        }
        for o in e.over {
            assert!(table.get(o).is_some(), "{} is over unknown {o}", e.id);
            if !reached.contains(*o) {
                stale.insert(format!(
                    "{} declares .over({o}) but none of its ids reach it",
                    e.id
                ));
            }
        }
    }
    assert!(conflicts.is_empty(), "{conflicts:#?}");
    assert!(stale.is_empty(), "{stale:#?}");
}

/// Every id and alias prices as its own model, whatever the client's provider spelling.
#[test]
fn every_id_and_alias_finds_its_model() {
    let table = PriceTable::builtin();
    for e in entries() {
        for key in std::iter::once(e.id).chain(e.aliases.iter().copied()) {
            let (vendor, name) = key.split_once('/').unwrap();
            for (provider, id) in [(None, key), (Some(vendor), name)] {
                let found = table.find(provider, id).map(|m| m.id.as_str());
                assert_eq!(found, Some(e.id), "({provider:?}, {id:?})");
            }
        }
    }
}

/// The public data set (`pricing::tests::reference_data_set`).
fn reference() -> Option<String> {
    super::super::tests::reference_data_set("a check of the built-in table against the data set")
}

/// The dates and input sizes at which a built-in model is compared with the data set: before,
/// at and after its changes, on both sides of a long-context tier.
const DATES: [&str; 6] = [
    "2025-01-01",
    "2025-07-01",
    "2026-03-01",
    "2026-08-21",
    "2026-11-24",
    "2027-02-01",
];
const INPUTS: [u64; 2] = [1000, 300_000];
const DIMS: [Dimension; 6] = [
    Dimension::Prompt,
    Dimension::Completion,
    Dimension::CacheRead,
    Dimension::CacheWrite,
    Dimension::InternalReasoning,
    Dimension::Image,
];

/// Adds a line to `departures` for every price `ours` (reached by `key`) gives that the data
/// set's `theirs` does not, at every date and input size above, unless `excused` says the
/// difference in that dimension, between those selections, is one the table means to make.
fn compare(
    key: &str,
    ours: &ModelPrice,
    theirs: &ModelPrice,
    departures: &mut BTreeSet<String>,
    excused: impl Fn(Dimension, &Selected, &Selected) -> bool,
) {
    for at in DATES {
        let at = super::super::instant::parse_instant(at).unwrap();
        for input in INPUTS {
            let u = crate::ingest::wire::Usage {
                input_tokens: Some(input),
                ..Default::default()
            };
            let (x, y) = (ours.select(Some(&u), at), theirs.select(Some(&u), at));
            let (a, b) = (x.rates, y.rates);
            for d in DIMS {
                if a.get(d) != b.get(d) && !excused(d, &x, &y) {
                    departures.insert(format!(
                        "{key} ({}): {} {}, the data set's {} says {}",
                        ours.id,
                        d.name(),
                        a.get(d).map_or("-".into(), |p| p.to_string()),
                        theirs.id,
                        b.get(d).map_or("-".into(), |p| p.to_string()),
                    ));
                }
            }
        }
    }
}

/// Provenance is honest: every built-in model was compared with the data set, and a model
/// whose basis says its figures agree with the data set (only, or with a stored vendor copy)
/// has the data set's date and prices every one of its ids as the data set does, at every
/// date and on both sides of a long-context tier. A figure that departs needs a basis that
/// says so (`departs`) and a comment naming what it follows.
#[test]
fn figures_said_to_agree_with_the_data_set_do() {
    for m in models() {
        let p = m.provenance.unwrap();
        assert!(p.basis.contains("47df840"), "{}: {}", m.id, p.basis);
        if p.basis == DATA_SET_ONLY || p.basis == VENDOR_COPY {
            assert_eq!(p.checked, DATA_SET_DATE, "{}", m.id);
        }
    }
    let Some(text) = reference() else {
        return;
    };
    let builtin = PriceTable::builtin();
    let file = PriceTable::with_overrides(&text, "genai-prices-v2-data.json").unwrap();
    // The data set's provider ids for this table's vendors.
    let provider = |vendor: &'static str| -> Option<&'static str> {
        match vendor {
            "mistralai" => Some("mistral"),
            "x-ai" => Some("xai"),
            "openai" | "anthropic" | "google" | "deepseek" | "cohere" | "perplexity" => {
                Some(vendor)
            }
            _ => None,
        }
    };
    let mut departures = BTreeSet::new();
    for e in entries() {
        if e.source.basis != DATA_SET_ONLY && e.source.basis != VENDOR_COPY {
            continue;
        }
        let ours = builtin.get(e.id).unwrap();
        // Models priced from Amazon Bedrock's page are looked up as Bedrock ids.
        let bedrock = e.source.url == "https://aws.amazon.com/bedrock/pricing/";
        for key in std::iter::once(e.id).chain(e.aliases.iter().copied()) {
            let (vendor, name) = key.split_once('/').unwrap();
            let found = if bedrock {
                let creator = match vendor {
                    // Already a Bedrock id: `bedrock/openai.gpt-5.4`.
                    "bedrock" => "",
                    "mistralai" => "mistral.",
                    "meta-llama" => "meta.",
                    v => &format!("{v}."),
                };
                file.find(Some("amazon-bedrock"), &format!("{creator}{name}"))
            } else {
                provider(vendor).and_then(|p| file.find(Some(p), name))
            };
            let Some(theirs) = found else {
                continue;
            };
            if theirs.source != super::super::table::Source::File {
                continue;
            }
            compare(key, ours, theirs, &mut departures, |_, _, _| false);
        }
    }
    assert!(departures.is_empty(), "{departures:#?}");
}

/// The other way round for Amazon Bedrock, where a vendor's model may cost what the vendor
/// charges or not: every model of the data set's `aws` provider that the table prices, called
/// with its Bedrock id through Bedrock, is priced as the data set prices it, whichever built-in
/// model matching reaches (the vendor's own, or a `bedrock/...` one). The excused differences
/// are the table's stated policy:
/// - regional endpoints' 10% premium is not modelled (module docs, `amazon.rs`,
///   `anthropic.rs`): the data set's `regional.*` figures may be exactly 110% of ours;
/// - Claude on Bedrock is priced at Anthropic's prices (`anthropic.rs`), long-context tier
///   included, which the data set's `aws` entries do not give;
/// - where the data set gives a Bedrock model no cache price (so bills cached tokens at its
///   input price), the table may keep the vendor's: Bedrock's calls of it report no cached
///   tokens (`mistral.rs` says so of Voxtral Small; Claude 3 Haiku and Opus as Anthropic's).
#[test]
fn bedrock_ids_price_as_the_data_set_s_aws_models() {
    let Some(text) = reference() else {
        return;
    };
    let builtin = PriceTable::builtin();
    let file = PriceTable::with_overrides(&text, "genai-prices-v2-data.json").unwrap();
    let mut departures = BTreeSet::new();
    let mut compared = 0;
    for theirs in file.models() {
        let Some(id) = theirs.id.strip_prefix("aws/") else {
            continue;
        };
        let Some(ours) = builtin.find(Some("amazon-bedrock"), id) else {
            continue;
        };
        compared += 1;
        let regional = id.starts_with("regional.");
        let claude = ours.id.starts_with("anthropic/");
        let excused = |d: Dimension, x: &Selected, y: &Selected| {
            let (a, b) = (x.rates.get(d), y.rates.get(d));
            let premium = a.and_then(|a| a.checked_times(11)?.shifted(1));
            (regional && premium.is_some() && premium == b)
                || (claude && x.tier.is_some() && y.tier.is_none())
                || (matches!(d, Dimension::CacheRead | Dimension::CacheWrite)
                    && b == y.rates.get(Dimension::Prompt))
        };
        compare(id, ours, theirs, &mut departures, excused);
    }
    assert!(compared >= 40, "only {compared} Bedrock models compared");
    assert!(departures.is_empty(), "{departures:#?}");
}
