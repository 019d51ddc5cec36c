//! The `spans` columns in table order (`spans_columns!`): name, kind and the `RowRef` field
//! each comes from; from them, the DDL types, the layout, and how a row is measured and written.
//! New columns go last: an existing table gets them by `ADD COLUMN`, and a spool record written
//! before them reads back with them filled (`RowBatch::from_older_parts`).

use super::read::Value;
use super::write::Writer;
use super::{MetaPairs, RowRef, RowSource};

/// How a column is laid out, and which type its values have in `RowRef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `String` (`&str`).
    Str,
    /// `UInt64` (`u64`).
    U64,
    /// `DateTime`: epoch seconds (`u32`).
    Time,
    /// `Nullable(UInt64)` (`Option<u64>`).
    OptU64,
    /// `Nullable(Float64)` (`Option<f64>`).
    OptF64,
    /// `Nullable(Decimal(18, 10))`: `Option<Money>`, units of 1e-10 USD as the `Int64` the
    /// decimal is on the wire.
    Money,
    /// `Nullable(DateTime)` (`Option<u32>`).
    OptTime,
    /// `Array(UInt64)` (`&[u64]`).
    Ints,
    /// `Array(String)` of the keys, or of the values, of a row's metadata.
    MetaKeys,
    MetaValues,
}

impl Kind {
    pub const fn sql_type(self) -> &'static str {
        match self {
            Kind::Str => "String",
            Kind::U64 => "UInt64",
            Kind::Time => "DateTime",
            Kind::OptU64 => "Nullable(UInt64)",
            Kind::OptF64 => "Nullable(Float64)",
            Kind::Money => "Nullable(Decimal(18, 10))",
            Kind::OptTime => "Nullable(DateTime)",
            Kind::Ints => "Array(UInt64)",
            Kind::MetaKeys | Kind::MetaValues => "Array(String)",
        }
    }

    /// Bytes per row in the head region; 0 for a `String`, whose rows vary.
    pub const fn head_width(self) -> usize {
        match self {
            Kind::Str => 0,
            Kind::U64 | Kind::Ints | Kind::MetaKeys | Kind::MetaValues => 8,
            Kind::Time => 4,
            Kind::OptU64 | Kind::OptF64 | Kind::Money | Kind::OptTime => 1,
        }
    }

    /// Bytes per row in the tail region, for a `Nullable`; 0 otherwise.
    pub const fn tail_width(self) -> usize {
        match self {
            Kind::OptU64 | Kind::OptF64 | Kind::Money => 8,
            Kind::OptTime => 4,
            _ => 0,
        }
    }

    /// An `Array`: the head holds end offsets into the tail's values.
    pub const fn is_array(self) -> bool {
        matches!(self, Kind::Ints | Kind::MetaKeys | Kind::MetaValues)
    }
}

/// Bytes of `n` as an unsigned LEB128 varint (ClickHouse's string length prefix).
#[inline]
pub const fn varint_len(n: u64) -> u64 {
    if n < 0x80 {
        // Most strings: ids, names, labels.
        return 1;
    }
    // 7 bits a byte.
    let bits = 64 - n.leading_zeros() as u64;
    bits.div_ceil(7)
}

/// Variable bytes of a column's value in a row (what the fixed widths do not cover).
macro_rules! measure {
    (Str, $v:expr) => {{
        let n = $v.len() as u64;
        varint_len(n) + n
    }};
    (Ints, $v:expr) => {
        8 * $v.len() as u64
    };
    (MetaKeys, $v:expr) => {
        $v.iter()
            .map(|(k, _)| varint_len(k.len() as u64) + k.len() as u64)
            .sum::<u64>()
    };
    (MetaValues, $v:expr) => {
        $v.iter()
            .map(|(_, v)| varint_len(v.len() as u64) + v.len() as u64)
            .sum::<u64>()
    };
    ($fixed:ident, $v:expr) => {
        0
    };
}

/// Writes one column's values of a chunk of rows at the end of its head and tail.
macro_rules! write_column {
    (Str, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {{
        let mut head = $w.take(2 * $c);
        for $r in $rows {
            head.string($v);
        }
        $w.give(2 * $c, head);
    }};
    (U64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.fixed::<_, 8>(2 * $c, $rows, |$r| u64::to_le_bytes($v))
    };
    (Time, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.fixed::<_, 4>(2 * $c, $rows, |$r| u32::to_le_bytes($v))
    };
    (OptU64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<_, 8>($c, $rows, |$r| $v.map(u64::to_le_bytes))
    };
    (OptF64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<_, 8>($c, $rows, |$r| $v.map(f64::to_le_bytes))
    };
    (Money, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<_, 8>($c, $rows, |$r| $v.map(i64::to_le_bytes))
    };
    (OptTime, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<_, 4>($c, $rows, |$r| $v.map(u32::to_le_bytes))
    };
    (Ints, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.array($c, $rows, |$r, tail| {
            let ints: &[u64] = $v;
            for i in ints {
                tail.put(&i.to_le_bytes());
            }
            ints.len()
        })
    };
    (MetaKeys, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.metadata($c, $rows, |$r| $v, |&(k, _)| k)
    };
    (MetaValues, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.metadata($c, $rows, |$r| $v, |&(_, v)| v)
    };
}

/// One column's value as `RowRef` holds it, from what `RowReader` reads back (`Value`), or
/// `None` when the value is not of the column's kind. The metadata columns give the pairs
/// `row_from_values` was handed (both columns name the one `metadata` field).
macro_rules! from_value {
    (Str, $v:expr, $pairs:expr) => {
        from_value!(@one Str, $v)
    };
    (U64, $v:expr, $pairs:expr) => {
        from_value!(@one U64, $v)
    };
    (Time, $v:expr, $pairs:expr) => {
        from_value!(@one U32, $v)
    };
    (OptU64, $v:expr, $pairs:expr) => {
        from_value!(@nullable U64, $v)
    };
    (OptF64, $v:expr, $pairs:expr) => {
        from_value!(@nullable F64, $v)
    };
    (Money, $v:expr, $pairs:expr) => {
        from_value!(@nullable I64, $v)
    };
    (OptTime, $v:expr, $pairs:expr) => {
        from_value!(@nullable U32, $v)
    };
    (Ints, $v:expr, $pairs:expr) => {
        match $v {
            Value::Ints(v) => Some(v.as_slice()),
            _ => None,
        }
    };
    (MetaKeys, $v:expr, $pairs:expr) => {
        Some(MetaPairs::from($pairs))
    };
    (MetaValues, $v:expr, $pairs:expr) => {
        Some(MetaPairs::from($pairs))
    };
    (@one $variant:ident, $v:expr) => {
        match $v {
            Value::$variant(x) => Some(*x),
            _ => None,
        }
    };
    (@nullable $variant:ident, $v:expr) => {
        match $v {
            Value::$variant(x) => Some(Some(*x)),
            Value::Null => Some(None),
            _ => None,
        }
    };
}

/// Declares the `spans` columns in table order as `name: Kind(row.field.path)`.
macro_rules! spans_columns {
    ($($name:ident: $kind:ident($($field:ident).+)),* $(,)?) => {
        /// `spans` columns in table order: (name, ClickHouse type).
        pub const SPANS_COLUMNS: &[(&str, &str)] = &[$((stringify!($name), Kind::$kind.sql_type())),*];

        /// How each column of `SPANS_COLUMNS` is laid out.
        pub const KINDS: &[Kind] = &[$(Kind::$kind),*];

        /// Column indexes, by name.
        #[allow(non_upper_case_globals, dead_code)]
        pub mod col {
            use super::ColumnIndex;
            $(pub const $name: usize = ColumnIndex::$name as usize;)*
        }

        #[allow(non_camel_case_types, dead_code)]
        enum ColumnIndex { $($name),* }

        /// Adds a row's variable bytes to each column's count.
        #[inline]
        pub(super) fn measure_row(r: &RowRef<'_>, var: &mut [u64; COLUMNS]) {
            $(var[col::$name] += measure!($kind, r.$($field).+);)*
        }

        /// Writes a few rows' values at the end of every column, column by column: the rows'
        /// sources stay in the L1 cache while each column's region is written in order (row
        /// by row, the 152 regions written at once cost a TLB miss on almost every value).
        /// Each value is `source.row(item)`'s field, so a source whose `row` is inlined
        /// computes only that field.
        #[inline]
        pub(super) fn write_chunk<'r, S: RowSource<'r>>(
            items: &[S::Item],
            w: &mut Writer<'_>,
            source: &S,
        ) {
            $(write_column!($kind, w, col::$name, items, |i| source.row(i).$($field).+);)*
        }

        /// A row from its values in column order, as `RowReader` reads them back (the inverse
        /// of writing it), with `pairs` its metadata (`metadata_pairs`); `Err(c)` names the
        /// first column `c` whose value is not of its kind.
        pub fn row_from_values<'a>(
            values: &'a [Value<'a>],
            pairs: &'a [(&'a str, &'a str)],
        ) -> Result<RowRef<'a>, usize> {
            if values.len() != COLUMNS {
                return Err(values.len().min(COLUMNS));
            }
            let mut r = RowRef::default();
            $(r.$($field).+ = from_value!($kind, &values[col::$name], pairs).ok_or(col::$name)?;)*
            Ok(r)
        }
    };
}

/// A row's metadata pairs from its `metadata_keys` and `metadata_values` values (as
/// `RowReader` reads them back), or the column at fault: a value that is no array of strings,
/// or values of another length than the keys.
pub fn metadata_pairs<'a>(values: &[Value<'a>]) -> Result<Vec<(&'a str, &'a str)>, usize> {
    match (
        values.get(col::metadata_keys),
        values.get(col::metadata_values),
    ) {
        (Some(Value::Strs(keys)), Some(Value::Strs(vals))) if keys.len() == vals.len() => {
            Ok(keys.iter().copied().zip(vals.iter().copied()).collect())
        }
        (Some(Value::Strs(_)), _) => Err(col::metadata_values),
        _ => Err(col::metadata_keys),
    }
}

/// The number of `spans` columns.
pub const COLUMNS: usize = KINDS.len();

/// Head and tail regions of every column.
pub const REGIONS: usize = 2 * COLUMNS;

spans_columns! {
    org_id: Str(org_id),
    project_id: Str(project_id),
    trace_id: Str(trace_id),
    span_id: Str(span_id),
    parent_span_id: Str(parent_span_id),
    span_type: Str(span_type),
    name: Str(name),
    start_time_ms: U64(start_time_ms),
    end_time_ms: U64(end_time_ms),
    duration_ms: U64(duration_ms),
    status: Str(status),
    error_message: Str(error_message),
    provider: Str(provider),
    model_id: Str(model_id),
    priced_model_id: Str(priced_model_id),
    input_tokens: U64(usage.input_tokens),
    output_tokens: U64(usage.output_tokens),
    total_tokens: U64(usage.total_tokens),
    reasoning_tokens: U64(usage.reasoning_tokens),
    cached_input_tokens: U64(usage.cached_input_tokens),
    cache_write_input_tokens: U64(usage.cache_write_input_tokens),
    image_count: U64(usage.image_count),
    web_search_count: U64(usage.web_search_count),
    request_count: U64(usage.request_count),
    ttft_ms: OptF64(ttft_ms),
    reasoning_duration_ms: OptU64(reasoning_duration_ms),
    model_call_ms: OptU64(model_call_ms),
    prompt_cost: Money(costs.prompt),
    completion_cost: Money(costs.completion),
    request_cost: Money(costs.request),
    image_cost: Money(costs.image),
    web_search_cost: Money(costs.web_search),
    internal_reasoning_cost: Money(costs.internal_reasoning),
    cache_read_cost: Money(costs.cache_read),
    cache_write_cost: Money(costs.cache_write),
    total_cost: Money(costs.total),
    pricing_source: Str(pricing_source),
    priced_at: OptTime(priced_at),
    trace_name: Str(trace_name),
    agent_name: Str(agent_name),
    workflow_name: Str(workflow_name),
    workflow_run_id: Str(workflow_run_id),
    session_id: Str(session_id),
    metadata_keys: MetaKeys(metadata),
    metadata_values: MetaValues(metadata),
    input: Str(input),
    output: Str(output),
    tool_catalog: Str(tool_catalog),
    system_fingerprint: Str(system_fingerprint),
    safety_metadata: Str(safety_metadata),
    sources: Str(sources),
    rate_limit_requests_limit: OptU64(rate_limit_requests_limit),
    rate_limit_requests_remaining: OptU64(rate_limit_requests_remaining),
    rate_limit_requests_reset_ms: OptU64(rate_limit_requests_reset_ms),
    rate_limit_tokens_limit: OptU64(rate_limit_tokens_limit),
    rate_limit_tokens_remaining: OptU64(rate_limit_tokens_remaining),
    rate_limit_tokens_reset_ms: OptU64(rate_limit_tokens_reset_ms),
    chunk_offsets: Ints(chunk_offsets),
    chunk_tokens: Ints(chunk_tokens),
    reasoning_offsets: Ints(reasoning_offsets),
    reasoning_chunk_tokens: Ints(reasoning_chunk_tokens),
    ingested_at: Time(ingested_at),
    // Fields newer v1 clients send.
    customer_id: Str(customer_id),
    customer_name: Str(customer_name),
    customer_image_url: Str(customer_image_url),
    response_time_ms: OptU64(response_time_ms),
    effective_output_tps: OptF64(effective_output_tps),
    effective_total_tps: OptF64(effective_total_tps),
    output_tps: OptF64(output_tps),
    input_tps: OptF64(input_tps),
    chunk_jitter_min: OptF64(chunk_jitter_min),
    chunk_jitter_p10: OptF64(chunk_jitter_p10),
    chunk_jitter_median: OptF64(chunk_jitter_median),
    chunk_jitter_avg: OptF64(chunk_jitter_avg),
    chunk_jitter_p90: OptF64(chunk_jitter_p90),
    chunk_jitter_max: OptF64(chunk_jitter_max),
    // Re-pricing (the copy with the highest version is kept).
    version: U64(version),
    // OTLP front end: the cost the client reported.
    reported_cost: Money(reported_cost),
}
