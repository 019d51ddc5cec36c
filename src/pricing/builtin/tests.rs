//! Checks over the whole built-in table: shape, tiers, provenance, and that no two models claim
//! the same id unless one explicitly takes precedence.

use std::collections::{BTreeSet, HashSet};

use super::super::matching;
use super::super::table::PriceTable;
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
