//! Writes the seed corpora of the fuzz targets from the perf fixtures into
//! `$TRACEINGEST_FUZZ_SEEDS/{decode,http_request,pricing,otlp}/` (`scripts/fuzz.sh` runs it
//! before fuzzing). A unit test, not a program, so that it runs from the test build CI has
//! already made: as an example it needed the library built once more with `fuzzing`.

use std::path::Path;

use crate::perf_fixtures as fixtures;
use crate::pricing::{AtPick, Change, FuzzCall};

#[path = "../perf/otlp_fixtures.rs"]
#[rustfmt::skip] // Shared with the perf harness, which keeps its own layout.
mod otlp_fixtures;

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let dir = dir.join(target);
    std::fs::create_dir_all(&dir).expect("create the corpus directory");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

/// Small fixture batches: the fuzzers' default input cap is 4 KiB.
fn bodies() -> Vec<Vec<u8>> {
    let mut out = vec![fixtures::small()];
    for seed in 0..6 {
        out.push(fixtures::batch(
            seed,
            1 + seed as usize % 2,
            1 + seed as usize % 3,
            40,
        ));
    }
    out
}

/// Not a check: writes the seeds when `TRACEINGEST_FUZZ_SEEDS` names a directory, and is run
/// on purpose (`--ignored`).
#[test]
#[ignore = "writes the fuzz corpora; scripts/fuzz.sh runs it"]
fn write_fuzz_seeds() {
    let dir = std::env::var_os("TRACEINGEST_FUZZ_SEEDS")
        .expect("TRACEINGEST_FUZZ_SEEDS: the directory to write the fuzz corpora under");
    let dir = Path::new(&dir);
    let bodies = bodies();
    for (i, body) in bodies.iter().enumerate() {
        write(dir, "decode", &format!("fixture-{i}"), body);
        // The http target reads two control bytes (where to split), then the request.
        let mut req = vec![0x40, 0x80];
        req.extend_from_slice(
            format!(
                "POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ti_x\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        req.extend_from_slice(body);
        write(dir, "http_request", &format!("length-{i}"), &req);
        let mut req = vec![0x20, 0xc0];
        req.extend_from_slice(b"POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        for chunk in body.chunks(700) {
            req.extend_from_slice(format!("{:x};e=1\r\n", chunk.len()).as_bytes());
            req.extend_from_slice(chunk);
            req.extend_from_slice(b"\r\n");
        }
        req.extend_from_slice(b"0\r\nT: 1\r\n\r\n");
        write(dir, "http_request", &format!("chunked-{i}"), &req);
    }
    write(
        dir,
        "http_request",
        "pipelined",
        b"\x10\x10GET /health HTTP/1.1\r\nHost: t\r\n\r\nGET /metrics HTTP/1.0\r\n\r\n",
    );

    // Pricing: every llm span's (provider, modelId, usage) in the fixtures, with prices in
    // the shapes real tables have (per-million token prices, per-unit request prices).
    let mut n = 0;
    for body in &bodies {
        let batch: serde_json::Value = serde_json::from_slice(body).expect("fixtures are JSON");
        let spans = batch["traces"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["spans"].as_array().into_iter().flatten());
        for span in spans.filter(|s| s["spanType"] == "llm") {
            let u = &span["usage"];
            let count = |k: &str| u[k].as_u64();
            let call = FuzzCall {
                usage: Some([
                    count("inputTokens"),
                    count("outputTokens"),
                    count("totalTokens"),
                    count("reasoningTokens"),
                    count("cachedInputTokens"),
                    count("cacheWriteInputTokens"),
                    count("imageCount"),
                    count("webSearchCount"),
                    count("requestCount"),
                ]),
                base: [
                    Some((25, -7)),
                    Some((1, -5)),
                    Some((4, -2)),
                    None,
                    Some((1, -2)),
                    Some((6, -6)),
                    Some((125, -9)),
                    Some((3125, -10)),
                ],
                tier: (n % 2 == 0).then_some((2000, [Some((5, -6)); 8])),
                // Every other one at the start time of the fixture's span, the others around
                // a change point of the schedule.
                at: match n % 2 {
                    0 => AtPick::anywhere(span["startTime"].as_u64().unwrap_or(0)),
                    _ => AtPick {
                        how: n as u8 % 5,
                        point: n as u8 / 2,
                        delta: 7_777,
                    },
                },
                // A price change for every third call and one more for every fifth; a second
                // change has an off-peak window (16:30-00:30 UTC, across midnight).
                changes: (0..u8::from(n % 3 == 0) + u8::from(n % 5 == 0))
                    .map(|i| Change {
                        gap: [1_785_369_600_000, 86_400_000][usize::from(i)],
                        prices: [Some((2, -7)); 8],
                        window: (i == 1).then_some((59_400, 1_800, [Some((1, -7)); 8])),
                        tier: (i == 0).then_some((200_000, [Some((4, -7)); 8])),
                    })
                    .collect(),
                provider: span["provider"].as_str().map(str::to_owned),
                model_id: span["modelId"].as_str().unwrap_or("").to_owned(),
            };
            write(dir, "pricing", &format!("fixture-{n}"), &call.to_bytes());
            n += 1;
        }
    }
    // OTLP: small generated exports (protobuf) and every real client capture (protobuf and
    // JSON bodies, uncompressed).
    for (i, n) in [1usize, 2, 3, 5].into_iter().enumerate() {
        let spans = otlp_fixtures::spans(i as u64, n);
        write(
            dir,
            "otlp",
            &format!("export-{n}"),
            &otlp_fixtures::otlp_protobuf(&spans),
        );
    }
    let captures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp");
    for entry in std::fs::read_dir(&captures).expect("the captures") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".pb") || (name.ends_with(".json") && !name.contains(".decoded")) {
            let bytes = std::fs::read(&path).expect("a capture");
            write(dir, "otlp", &format!("capture-{name}"), &bytes);
        }
    }
    println!("fuzz seeds written under {}", dir.display());
}
