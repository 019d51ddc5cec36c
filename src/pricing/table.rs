//! The immutable price table: models, their dated prices, and how a (provider, modelId) pair
//! finds its model.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ingest::wire::Usage;

use super::builtin;
use super::costs::CostColumns;
use super::file::FileModels;
use super::genai::Rules;
use super::matching;
use super::money::PriceError;
use super::rates::Rates;
use super::schedule::{period_at, Period, PriceSet, Window};

/// Where a model's prices came from; recorded in each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Builtin,
    File,
}

impl Source {
    /// The `pricing_source` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::File => "file",
        }
    }
}

/// Where a built-in model's figures come from and when they were last checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance {
    /// The page the figures were taken from.
    pub url: &'static str,
    /// When they were last checked (`YYYY-MM-DD`).
    pub checked: &'static str,
    /// What they were checked against, e.g. the vendor's page or only the genai-prices data set.
    pub basis: &'static str,
}

/// One priced model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    /// Canonical `vendor/model` id, as the row's priced model id.
    pub id: String,
    /// Other ids that name this model exactly (lower case), e.g. OpenRouter's spelling.
    pub aliases: Vec<String>,
    pub source: Source,
    /// The prices over time: non-empty, ascending, the first from 0 (see [`period_at`]).
    pub periods: Box<[Period]>,
    /// Built-in models: where the figures come from.
    pub provenance: Option<Provenance>,
}

/// What applies to one call: the period, window and tier chosen, and the rates they give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selected<'t> {
    pub period: &'t Period,
    /// The daily window the prices came from, if one was open.
    pub window: Option<&'t Window>,
    /// The threshold of the long-context tier that applied, if one did.
    pub tier: Option<u64>,
    pub rates: &'t Rates,
}

/// Everything one pricing computation decided, for the `price` command and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakdown<'t> {
    pub selected: Selected<'t>,
    /// Billable count per dimension (index = `Dimension as usize`).
    pub counts: [u64; 8],
    pub costs: CostColumns,
}

impl ModelPrice {
    /// A model with one price set for all time and no provenance (files, tests).
    pub fn new(id: impl Into<String>, source: Source, prices: PriceSet) -> ModelPrice {
        ModelPrice {
            id: id.into(),
            aliases: Vec::new(),
            source,
            periods: Box::new([Period::always(prices)]),
            provenance: None,
        }
    }

    /// The prices in force now-ish: the last period (for listings and tests).
    pub fn latest(&self) -> &Period {
        &self.periods[self.periods.len() - 1]
    }

    /// The period, window, tier and rates that apply to a call starting at `at_ms`.
    #[inline]
    pub fn select(&self, usage: Option<&Usage>, at_ms: u64) -> Selected<'_> {
        let period = if self.periods.len() == 1 {
            &self.periods[0]
        } else {
            period_at(&self.periods, at_ms)
        };
        let (set, window) = period.select(at_ms);
        let (rates, tier) = set.select(usage);
        Selected {
            period,
            window,
            tier,
            rates,
        }
    }

    /// The nine cost columns of one call starting at `at_ms` (epoch ms). `total` is always
    /// `Some` (0 when nothing is billed).
    #[inline]
    pub fn costs(&self, usage: Option<&Usage>, at_ms: u64) -> Result<CostColumns, PriceError> {
        let mut columns = CostColumns::default();
        self.costs_into(usage, at_ms, &mut columns)?;
        Ok(columns)
    }

    /// [`ModelPrice::costs`] written into `out` (which it overwrites whole), so the request
    /// path builds the columns in place instead of copying them around. On error `out` holds
    /// no meaningful value.
    #[inline(always)]
    pub fn costs_into(
        &self,
        usage: Option<&Usage>,
        at_ms: u64,
        out: &mut CostColumns,
    ) -> Result<(), PriceError> {
        self.select(usage, at_ms).rates.costs_into(usage, out)
    }

    /// Prices one call and says how: period, window, tier, rates, billable counts and costs
    /// (for the `price` command and tests; the request path uses [`ModelPrice::costs_into`]).
    pub fn breakdown(
        &self,
        usage: Option<&Usage>,
        at_ms: u64,
    ) -> Result<Breakdown<'_>, PriceError> {
        let selected = self.select(usage, at_ms);
        Ok(Breakdown {
            selected,
            counts: selected.rates.counts(usage),
            costs: self.costs(usage, at_ms)?,
        })
    }
}

/// Source of table generations: every table ever built gets a distinct one, so a match cache can
/// tell any two tables apart.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// The prices in force: built once (built-in + file overrides), then shared read-only.
#[derive(Debug)]
pub struct PriceTable {
    models: Vec<ModelPrice>,
    /// Lower-case id or alias -> index into `models`.
    index: HashMap<Box<str>, u32>,
    /// Release families: an id without its release date (`mistralai/mistral-large`) -> the
    /// dated keys of that family as (date `YYYYMMDD`, model index).
    families: HashMap<Box<str>, Vec<(u32, u32)>>,
    /// Per model, the newest release date its own id and aliases name (0 if none).
    newest: Vec<u32>,
    /// Per model, the oldest release date its own id and aliases name (0 if none).
    oldest: Vec<u32>,
    /// A genai-prices file's match rules; they are tried before any id.
    rules: Option<Rules>,
    /// What the pricing file could not represent, one line per model (reported at load).
    notes: Vec<String>,
    generation: u64,
    /// The pricing file merged in, if any (for `price --list`).
    file: Option<String>,
}

impl PriceTable {
    /// The built-in table alone.
    pub fn builtin() -> PriceTable {
        PriceTable::merge(builtin::models(), None, None)
    }

    /// Built-in models, then a file's models on top: a file model replaces every built-in
    /// model one of its ids or aliases names, and takes over that model's aliases. A
    /// genai-prices file's models are found by its match rules instead, before any id.
    pub(crate) fn merge(
        builtin: Vec<ModelPrice>,
        file: Option<FileModels>,
        name: Option<String>,
    ) -> PriceTable {
        let (overrides, mut rules, notes) = match file {
            Some(f) if f.rules.is_some() => (Vec::new(), f.rules.map(|r| (r, f.models)), f.notes),
            Some(f) => (f.models, None, f.notes),
            None => (Vec::new(), None, Vec::new()),
        };
        let mut file_keys: HashMap<String, usize> = HashMap::new();
        for (i, m) in overrides.iter().enumerate() {
            for k in keys_of(m) {
                file_keys.entry(k).or_insert(i);
            }
        }
        let mut models = Vec::with_capacity(builtin.len() + overrides.len());
        let mut index: HashMap<Box<str>, u32> = HashMap::new();
        let first_file = builtin
            .iter()
            .filter(|b| !keys_of(b).any(|k| file_keys.contains_key(&k)))
            .count();
        for b in builtin {
            let replaced_by = keys_of(&b).find_map(|k| file_keys.get(&k).copied());
            match replaced_by {
                // Built-in aliases now lead to the file model (unless a file model has the key).
                Some(f) => {
                    for k in keys_of(&b) {
                        index.entry(k.into()).or_insert((first_file + f) as u32);
                    }
                }
                None => {
                    for k in keys_of(&b) {
                        index.entry(k.into()).or_insert(models.len() as u32);
                    }
                    models.push(b);
                }
            }
        }
        debug_assert_eq!(models.len(), first_file);
        for (k, f) in file_keys {
            index.insert(k.into(), (first_file + f) as u32);
        }
        models.extend(overrides);
        let rules = rules.take().map(|(mut r, ruled)| {
            r.offset = models.len() as u32;
            models.extend(ruled);
            r
        });
        let mut families: HashMap<Box<str>, Vec<(u32, u32)>> = HashMap::new();
        let mut newest = vec![0u32; models.len()];
        let mut oldest = vec![0u32; models.len()];
        for (key, &i) in &index {
            if let Some((bases, date)) = matching::family_of(key) {
                newest[i as usize] = newest[i as usize].max(date);
                let o = &mut oldest[i as usize];
                *o = if *o == 0 { date } else { (*o).min(date) };
                for b in bases {
                    families.entry(b.into()).or_default().push((date, i));
                }
            }
        }
        PriceTable {
            models,
            index,
            families,
            newest,
            oldest,
            rules,
            notes,
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            file: name,
        }
    }

    /// Distinct for every table built; match caches compare it to know they are stale.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// All models, built-in ones first.
    pub fn models(&self) -> &[ModelPrice] {
        &self.models
    }

    /// The pricing file merged into this table, if any.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// Prices of the pricing file that could not be represented, one line per model naming
    /// the model and the fields. Report them once, when the table is loaded.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The model with exactly this id or alias (case-insensitive), without any matching.
    pub fn get(&self, id: &str) -> Option<&ModelPrice> {
        let i = *self.index.get(id.to_lowercase().as_str())?;
        Some(&self.models[i as usize])
    }

    /// Matches (provider, modelId) to a model, uncached: see [`matching`] for the candidates.
    pub fn find(&self, provider: Option<&str>, model_id: &str) -> Option<&ModelPrice> {
        self.resolve(provider, model_id)
            .map(|i| &self.models[i as usize])
    }

    /// Index of the matched model: a genai-prices file's rules first (see `genai::Rules::find`),
    /// then the first candidate the table has, skipping one reached by removing a release date
    /// that names a newer model of the family than the one it would price as, or a release
    /// older than every release that model names (its prices are not that release's).
    /// Allocates; the [`super::Pricer`] caches it.
    pub(crate) fn resolve(&self, provider: Option<&str>, model_id: &str) -> Option<u32> {
        if let Some(found) = self.rules.as_ref().and_then(|r| r.find(provider, model_id)) {
            return Some(found);
        }
        matching::candidates(provider, model_id)
            .iter()
            .find_map(|c| {
                let i = *self.index.get(c.id.as_str())?;
                match c.stripped_date {
                    Some(date) if self.newer_in_family(&c.id, i, date) => None,
                    Some(date) if date < self.oldest[i as usize] => None,
                    _ => Some(i),
                }
            })
    }

    /// True when the family of `base` (an id without its release date) has a model other than
    /// `model` that is newer than every release `model` names, and `date` is at least that
    /// model's: an id of that date is a release `model`'s prices do not describe.
    fn newer_in_family(&self, base: &str, model: u32, date: u32) -> bool {
        let Some(members) = self.families.get(base) else {
            return false;
        };
        let own = self.newest[model as usize];
        members
            .iter()
            .any(|&(d, m)| m != model && d > own && date >= d)
    }

    /// The model at an index `resolve` returned for this table.
    #[inline]
    pub(crate) fn model(&self, i: u32) -> &ModelPrice {
        &self.models[i as usize]
    }
}

/// The lower-case index keys of a model: its id, then its aliases.
fn keys_of(m: &ModelPrice) -> impl Iterator<Item = String> + '_ {
    std::iter::once(&m.id)
        .chain(m.aliases.iter())
        .map(|k| k.to_lowercase())
}

/// One line describing a model's prices, for tests: `id p=.. c=.. >200000: p=..`, each later
/// period after ` | from DATE:`, each window as ` [HH:MM-HH:MM: ...]`. Prices per unit.
#[cfg(test)]
pub(crate) fn describe(m: &ModelPrice) -> String {
    use super::instant::{format_instant, format_time_of_day};
    use super::rates::Dimension;
    fn set(out: &mut String, s: &PriceSet) {
        for d in Dimension::ALL {
            if let Some(p) = s.base.get(d) {
                *out += &format!(" {}={p}", d.name());
            }
        }
        if s.base.image_tokens() > 0 {
            *out += &format!(" image_tokens={}", s.base.image_tokens());
        }
        for t in s.tiers.iter() {
            *out += &format!(" >{}:", t.threshold);
            for d in Dimension::ALL {
                if t.rates.get(d) != s.base.get(d) {
                    match t.rates.get(d) {
                        Some(p) => *out += &format!(" {}={p}", d.name()),
                        None => *out += &format!(" {}=-", d.name()),
                    }
                }
            }
        }
    }
    let mut out = m.id.clone();
    for p in m.periods.iter() {
        if p.from_ms > 0 {
            out += &format!(" | from {}:", format_instant(p.from_ms));
        }
        set(&mut out, &p.prices);
        for w in p.windows.iter() {
            out += &format!(
                " [{}-{}:",
                format_time_of_day(w.from_s),
                format_time_of_day(w.to_s)
            );
            set(&mut out, &w.prices);
            out += "]";
        }
    }
    out
}
