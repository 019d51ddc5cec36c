//! The 512-span OTLP export of the benches and the load harness (`perf/otlp_fixtures.rs`) and
//! its v1 twin must store the same rows, byte for byte: issue 15's target compares the two
//! front ends' CPU per byte on the same spans, which is only fair if the rows after them (and
//! so the rows' cost, the flush thread's and ClickHouse's) are the same.

#[path = "../perf/otlp_fixtures.rs"]
#[rustfmt::skip]
mod otlp_fixtures;

use bumpalo::Bump;
use traceingest::auth::Principal;
use traceingest::ingest::body::PaddedBody;
use traceingest::ingest::otlp::OtlpDecoder;
use traceingest::ingest::v1::Decoder;
use traceingest::ingest::{rows, BatchLimit};
use traceingest::pricing::{PriceTable, Pricer};

#[test]
fn the_v1_twin_stores_the_same_rows_as_the_otlp_export() {
    let (proto, v1) = otlp_fixtures::export_512();
    let principal = Principal::unlimited("org-twin", "project-twin");
    let table = PriceTable::builtin();
    let mut pricer = Pricer::new();
    let now = 1_760_000_000_000;

    let arena = Bump::new();
    let decoded = OtlpDecoder::new()
        .decode_protobuf(&proto, &arena)
        .expect("valid export");
    assert_eq!(decoded.batch.span_count, 512);
    let otlp = rows::build(
        &decoded.batch,
        &principal,
        &table,
        &mut pricer,
        now,
        BatchLimit::NONE,
        &arena,
    )
    .expect("rows");

    let v1_arena = Bump::new();
    let mut body = v1.clone();
    let batch = Decoder::new()
        .decode(PaddedBody::pad(&mut body), &v1_arena)
        .expect("valid batch");
    let twin = rows::build(
        &batch,
        &principal,
        &table,
        &mut pricer,
        now,
        BatchLimit::NONE,
        &v1_arena,
    )
    .expect("rows");

    assert_eq!(otlp.len(), twin.len());
    let (mut a, mut b) = (otlp.reader(0..otlp.len()), twin.reader(0..twin.len()));
    for row in 0..otlp.len() {
        assert_eq!(a.next_row(), b.next_row(), "row {row}");
    }
    assert!(otlp == twin, "the batches differ byte for byte");
}
