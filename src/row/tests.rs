//! Every value written and read back, the native layout, cuts, size limits, and checks of
//! batches read back from disk.

use super::test_rows::*;
use super::*;

#[test]
fn varint_lengths() {
    for (n, len) in [(0, 1), (1, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3)] {
        assert_eq!(varint_len(n), len, "{n}");
    }
    assert_eq!(varint_len(u64::MAX), 10);
}

/// The values of a row as the reader gives them back, computed from the row itself.
fn expected(r: &RowRef<'_>) -> Vec<Value<'static>> {
    fn s(v: &str) -> Value<'static> {
        Value::Str(Box::leak(v.to_owned().into_boxed_str()))
    }
    fn ou(v: Option<u64>) -> Value<'static> {
        v.map_or(Value::Null, Value::U64)
    }
    fn of(v: Option<f64>) -> Value<'static> {
        v.map_or(Value::Null, Value::F64)
    }
    fn m(v: Option<i64>) -> Value<'static> {
        v.map_or(Value::Null, Value::I64)
    }
    let leak = |s: &str| &*Box::leak(s.to_owned().into_boxed_str());
    let keys = r.metadata.iter().map(|(k, _)| leak(k)).collect();
    let values = r.metadata.iter().map(|(_, v)| leak(v)).collect();
    let c = r.costs;
    let u = r.usage;
    vec![
        s(r.org_id),
        s(r.project_id),
        s(r.trace_id),
        s(r.span_id),
        s(r.parent_span_id),
        s(r.span_type),
        s(r.name),
        Value::U64(r.start_time_ms),
        Value::U64(r.end_time_ms),
        Value::U64(r.duration_ms),
        s(r.status),
        s(r.error_message),
        s(r.provider),
        s(r.model_id),
        s(r.priced_model_id),
        Value::U64(u.input_tokens),
        Value::U64(u.output_tokens),
        Value::U64(u.total_tokens),
        Value::U64(u.reasoning_tokens),
        Value::U64(u.cached_input_tokens),
        Value::U64(u.cache_write_input_tokens),
        Value::U64(u.image_count),
        Value::U64(u.web_search_count),
        Value::U64(u.request_count),
        of(r.ttft_ms),
        ou(r.reasoning_duration_ms),
        ou(r.model_call_ms),
        m(c.prompt),
        m(c.completion),
        m(c.request),
        m(c.image),
        m(c.web_search),
        m(c.internal_reasoning),
        m(c.cache_read),
        m(c.cache_write),
        m(c.total),
        s(r.pricing_source),
        r.priced_at.map_or(Value::Null, Value::U32),
        s(r.trace_name),
        s(r.agent_name),
        s(r.workflow_name),
        s(r.workflow_run_id),
        s(r.session_id),
        Value::Strs(keys),
        Value::Strs(values),
        s(r.input),
        s(r.output),
        s(r.tool_catalog),
        s(r.system_fingerprint),
        s(r.safety_metadata),
        s(r.sources),
        ou(r.rate_limit_requests_limit),
        ou(r.rate_limit_requests_remaining),
        ou(r.rate_limit_requests_reset_ms),
        ou(r.rate_limit_tokens_limit),
        ou(r.rate_limit_tokens_remaining),
        ou(r.rate_limit_tokens_reset_ms),
        Value::Ints(r.chunk_offsets.to_vec()),
        Value::Ints(r.chunk_tokens.to_vec()),
        Value::Ints(r.reasoning_offsets.to_vec()),
        Value::Ints(r.reasoning_chunk_tokens.to_vec()),
        Value::U32(r.ingested_at),
        s(r.customer_id),
        s(r.customer_name),
        s(r.customer_image_url),
        ou(r.response_time_ms),
        of(r.effective_output_tps),
        of(r.effective_total_tps),
        of(r.output_tps),
        of(r.input_tps),
        of(r.chunk_jitter_min),
        of(r.chunk_jitter_p10),
        of(r.chunk_jitter_median),
        of(r.chunk_jitter_avg),
        of(r.chunk_jitter_p90),
        of(r.chunk_jitter_max),
        Value::U64(r.version),
        m(r.reported_cost),
    ]
}

fn rows_of<'a>(ids: &'a [String]) -> Vec<RowRef<'a>> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let mut r = row(
                "org-é",
                "trace-1",
                id,
                1_700_000_000_000 + i as u64,
                i % 3 != 1,
            );
            if i % 8 == 3 {
                r.metadata = (&[("env", "staging"), ("new", "n")][..]).into();
            }
            if i % 8 == 7 {
                // The same pairs, the second shared (as an OTLP resource's are).
                r.metadata = MetaPairs {
                    first: &[("env", "staging")],
                    then: &[("new", "n")],
                };
            }
            if i % 5 == 4 {
                r.input = Box::leak("x".repeat(300).into_boxed_str());
            }
            if i % 2 == 0 {
                r.reported_cost = Some(42 + i as i64);
            }
            r
        })
        .collect()
}

#[test]
fn every_value_reads_back_as_written() {
    let ids: Vec<String> = (0..23).map(|i| format!("span-{i}")).collect();
    let rows = rows_of(&ids);
    let batch = RowBatch::from_rows(&rows);
    assert_eq!(batch.len(), 23);
    assert_eq!(batch.data().len(), batch.bounds()[REGIONS] as usize);
    let mut reader = batch.reader(0..batch.len());
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(reader.next_row().expect("a row"), expected(r), "row {i}");
    }
    assert!(reader.next_row().is_none());
    // From the middle too: the cut skips exactly the rows before.
    let mut reader = batch.reader(7..9);
    assert_eq!(reader.next_row().unwrap(), expected(&rows[7]));
    assert_eq!(reader.next_row().unwrap(), expected(&rows[8]));
    assert!(reader.next_row().is_none());
}

/// `row_from_values` is the inverse of the reader: rows rebuilt from the values read back
/// make the same batch, byte for byte (what a dead-letter replay relies on).
#[test]
fn rows_rebuilt_from_their_values_make_the_same_batch() {
    let ids: Vec<String> = (0..23).map(|i| format!("span-{i}")).collect();
    let batch = RowBatch::from_rows(&rows_of(&ids));
    let values: Vec<Vec<Value<'_>>> = {
        let mut reader = batch.reader(0..batch.len());
        std::iter::from_fn(|| reader.next_row()).collect()
    };
    let pairs: Vec<Vec<(&str, &str)>> = values.iter().map(|v| metadata_pairs(v).unwrap()).collect();
    let rows: Vec<RowRef<'_>> = values
        .iter()
        .zip(&pairs)
        .map(|(v, p)| row_from_values(v, p).unwrap())
        .collect();
    let again = RowBatch::from_rows(&rows);
    assert_eq!(again.data(), batch.data());
    assert_eq!(again.bounds(), batch.bounds());

    // A value of another kind names its column; so do metadata arrays of unequal length.
    let mut wrong = values[0].clone();
    wrong[col::priced_at] = Value::U64(1);
    assert_eq!(
        row_from_values(&wrong, &pairs[0]).err(),
        Some(col::priced_at)
    );
    wrong[col::metadata_values] = Value::Strs(vec!["only one"]);
    assert_eq!(metadata_pairs(&wrong), Err(col::metadata_values));
    wrong[col::metadata_keys] = Value::Null;
    assert_eq!(metadata_pairs(&wrong), Err(col::metadata_keys));
    assert_eq!(row_from_values(&wrong[1..], &[]).err(), Some(COLUMNS - 1));
}

#[test]
fn metadata_in_two_slices_is_written_as_in_one() {
    let ids: Vec<String> = (0..9).map(|i| format!("span-{i}")).collect();
    let split = rows_of(&ids);
    assert_eq!(
        split[7].metadata.then.len(),
        1,
        "row 7 has metadata in two slices"
    );
    let joined: Vec<Vec<(&str, &str)>> = split
        .iter()
        .map(|r| r.metadata.iter().copied().collect())
        .collect();
    let one: Vec<RowRef<'_>> = split
        .iter()
        .zip(&joined)
        .map(|(r, pairs)| RowRef {
            metadata: pairs.as_slice().into(),
            ..*r
        })
        .collect();
    let (a, b) = (RowBatch::from_rows(&split), RowBatch::from_rows(&one));
    assert_eq!(a.data(), b.data());
    assert_eq!(a.bounds(), b.bounds());
}

#[test]
fn regions_have_the_native_layout() {
    let batch = batch("o", "t", 2, 5);
    // Strings: varint length, bytes.
    assert_eq!(batch.head(col::org_id), b"\x01o\x01o");
    // UInt64.
    assert_eq!(
        batch.head(col::start_time_ms),
        [5u64.to_le_bytes(), 6u64.to_le_bytes()].concat()
    );
    // Nullable: null map, then values with zero for NULL (row 0 full, row 1 sparse).
    assert_eq!(batch.head(col::model_call_ms), [0, 1]);
    assert_eq!(
        batch.tail(col::model_call_ms),
        [1400u64.to_le_bytes(), [0; 8]].concat()
    );
    // Array: end offsets, then the values.
    assert_eq!(
        batch.head(col::chunk_offsets),
        [3u64.to_le_bytes(), 3u64.to_le_bytes()].concat()
    );
    assert_eq!(batch.tail(col::chunk_offsets).len(), 24);
    assert_eq!(batch.tail(col::metadata_keys)[..4], *b"\x03env");
}

#[test]
fn cuts_point_at_row_starts() {
    let ids: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    let rows = rows_of(&ids);
    let whole = RowBatch::from_rows(&rows);
    for split in 0..=rows.len() {
        let front = RowBatch::from_rows(&rows[..split]);
        let cut = whole.cut(split);
        for (i, &at) in cut.iter().enumerate() {
            let c = i / 2;
            let front_len = front.region(i).len();
            let expected = if KINDS[c].is_array() && i % 2 == 0 {
                // Offsets are per row: the head cut is arithmetic.
                8 * split
            } else {
                front_len
            };
            assert_eq!(at, expected, "region {i} at row {split}");
        }
        // Cutting further on from an earlier cut lands on the same offsets.
        for from in 0..=split {
            assert_eq!(
                whole.cut_from(from, &whole.cut(from), split),
                cut,
                "{from}..{split}"
            );
        }
    }
}

#[test]
fn too_large_is_refused_before_allocating() {
    let ids: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
    let rows = rows_of(&ids);
    let size = RowBatch::from_rows(&rows).data().len() as u64;
    assert_eq!(
        RowBatch::from_rows_within(&rows, size - 1).unwrap_err(),
        TooLarge {
            bytes: size,
            limit: size - 1
        }
    );
    assert!(RowBatch::from_rows_within(&rows, size).is_ok());
}

#[test]
fn from_parts_takes_a_batch_back_and_refuses_a_damaged_one() {
    let b = batch("org", "trace", 5, 1);
    let back = RowBatch::from_parts(b.len(), *b.bounds(), b.data().to_vec()).unwrap();
    assert_eq!(back, b);

    // One byte more or less anywhere, a bad string length, a bad null flag, offsets that
    // go back, invalid UTF-8: every one refused.
    let mut bounds = *b.bounds();
    bounds[REGIONS] += 1;
    let mut longer = b.data().to_vec();
    longer.push(0);
    assert!(RowBatch::from_parts(5, bounds, longer).is_err());
    assert!(RowBatch::from_parts(4, *b.bounds(), b.data().to_vec()).is_err());

    let mut data = b.data().to_vec();
    data[b.region(2 * col::org_id).start] = 9;
    assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

    let mut data = b.data().to_vec();
    data[b.region(2 * col::ttft_ms).start] = 2;
    assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

    let mut data = b.data().to_vec();
    let offsets = b.region(2 * col::chunk_tokens).start;
    data[offsets..offsets + 8].copy_from_slice(&9u64.to_le_bytes());
    assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

    for region in [2 * col::org_id, 2 * col::metadata_values + 1] {
        let mut data = b.data().to_vec();
        data[b.region(region).start + 1] = 0xFF;
        assert_eq!(
            RowBatch::from_parts(5, *b.bounds(), data).unwrap_err(),
            "a string is not UTF-8",
            "region {region}"
        );
    }
}

/// `select` makes the batch the selected rows make on their own, byte for byte (what the flush
/// thread spools of a batch partly inserted or dead-lettered), and refuses runs out of order.
#[test]
#[allow(clippy::single_range_in_vec_init)] // Lists of runs, some of one.
fn selected_rows_make_the_batch_they_make_alone() {
    let ids: Vec<String> = (0..23).map(|i| format!("span-{i}")).collect();
    let rows = rows_of(&ids);
    let whole = RowBatch::from_rows(&rows);
    let cases: [&[std::ops::Range<usize>]; 5] = [
        &[0..23],
        &[1..23],
        &[0..1, 3..4, 7..12, 20..23],
        &[5..5, 6..9, 22..23],
        &[],
    ];
    for runs in cases {
        let picked: Vec<RowRef<'_>> = runs.iter().flat_map(|r| rows[r.clone()].to_vec()).collect();
        let alone = RowBatch::from_rows(&picked);
        let selected = whole.select(runs).unwrap();
        assert_eq!(selected.len(), picked.len(), "{runs:?}");
        assert_eq!(selected.bounds(), alone.bounds(), "{runs:?}");
        assert_eq!(selected.data(), alone.data(), "{runs:?}");
    }
    assert!(whole.select(&[3..5, 4..6]).is_err());
    assert!(whole.select(&[20..24]).is_err());
}
