//! The load generator's sending side: the fixtures as requests (route, headers, trace ids made
//! unique per request), keep-alive connections, and the open- and closed-loop drivers.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{fixtures, otlp_fixtures};

/// How each request of a fixture gets trace ids no other request has.
pub enum Stamp {
    /// v1 JSON: 16 hex digits at each offset, one offset per trace (`fixtures::stamp`).
    Hex(Vec<usize>),
    /// OTLP protobuf: the first 8 of the 16 raw trace-id bytes at each offset, with the index of
    /// the offset's trace (a trace's spans each carry its id), written as `fixtures::stamp_id`.
    Raw(Vec<(usize, u32)>),
    /// Compressed bodies cannot be stamped in place: one body per request, made before the
    /// phase (`Fixture::otlp_gzip`), taken in turn (from the first again if the phase sends
    /// more than were made: then rows repeat, and `Fixture::reused` counts it).
    Bodies(Vec<Vec<u8>>),
}

/// A fixture ready to send: what, where, how, and how many spans each request carries.
pub struct Fixture {
    pub name: &'static str,
    /// `/ingest` or `/v1/traces`.
    pub path: &'static str,
    pub content_type: &'static str,
    /// `Content-Encoding`, when the body is compressed.
    pub encoding: Option<&'static str>,
    /// The body (uncompressed: what the server decodes); for `Stamp::Bodies` the template the
    /// compressed bodies were made from.
    pub body: Vec<u8>,
    pub spans: u64,
    pub stamp: Stamp,
    /// The status of success: 202 on `/ingest`, 200 on `/v1/traces`.
    pub ok: u16,
    /// Connections this fixture is always sent on (the sdk fixture: 2, as an SDK's exporter
    /// keeps), whatever `--connections` says for the others.
    pub connections: Option<usize>,
    /// The next of `Stamp::Bodies` to send.
    next: AtomicUsize,
}

/// Numbers every request sent by this process, so trace ids never repeat.
static BATCH: AtomicU64 = AtomicU64::new(1);

impl Fixture {
    /// A v1 batch made by `perf/fixtures.rs` (trace ids `tr-` + 16 hex digits).
    pub fn v1(name: &'static str, body: Vec<u8>, spans: u64) -> Fixture {
        let offsets = fixtures::trace_id_offsets(&body);
        Fixture::new(
            name,
            "/ingest",
            "application/json",
            body,
            spans,
            Stamp::Hex(offsets),
        )
    }

    /// The 1.7 KB, 3-span batch real SDKs send, on 2 connections.
    pub fn sdk() -> Fixture {
        let mut f = Fixture::v1("sdk", fixtures::sdk(), 3);
        f.connections = Some(2);
        f
    }

    /// The 512-span OTLP export (`otlp_fixtures::export_512`) as protobuf on `/v1/traces`.
    pub fn otlp() -> Fixture {
        let (body, _) = otlp_fixtures::export_512();
        let offsets = otlp_fixtures::trace_id_offsets(&body, &otlp_fixtures::export_512_spans());
        let stamp = Stamp::Raw(offsets);
        let mut f = Fixture::new("otlp", "/v1/traces", PROTOBUF, body, 512, stamp);
        f.ok = 200;
        f
    }

    /// The same export gzip-compressed: `count` bodies, each stamped as `otlp` stamps one and
    /// compressed (flate2's default level, as the benches and the Python exporter use), made
    /// on two threads before the phase so that compressing is no part of what it measures.
    pub fn otlp_gzip(count: usize) -> Fixture {
        let plain = Fixture::otlp();
        let Stamp::Raw(offsets) = &plain.stamp else {
            unreachable!("Fixture::otlp stamps raw ids")
        };
        let first = BATCH.fetch_add(count as u64, Ordering::Relaxed);
        let halves: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let jobs: Vec<_> = (0..2u64)
                .map(|half| {
                    let (body, offsets) = (&plain.body, offsets);
                    s.spawn(move || {
                        let mut body = body.clone();
                        (0..count as u64)
                            .filter(|i| i % 2 == half)
                            .map(|i| {
                                stamp_raw(&mut body, offsets, first + i);
                                gzip(&body)
                            })
                            .collect()
                    })
                })
                .collect();
            jobs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        // Interleave the halves back into request order.
        let mut bodies = Vec::with_capacity(count);
        let mut its: Vec<_> = halves.into_iter().map(|h| h.into_iter()).collect();
        for i in 0..count {
            bodies.extend(its[i % 2].next());
        }
        let mut f = Fixture::new(
            "otlp-gzip",
            "/v1/traces",
            PROTOBUF,
            plain.body,
            512,
            Stamp::Bodies(bodies),
        );
        f.encoding = Some("gzip");
        f.ok = 200;
        f
    }

    /// The same 512 spans as a v1 batch on `/ingest` (32 hex digits per trace id, the first
    /// 16 stamped).
    pub fn otlp_v1() -> Fixture {
        let (_, body) = otlp_fixtures::export_512();
        let offsets = fixtures::offsets_after(&body, b"\"traceId\":\"");
        Fixture::new(
            "otlp-v1",
            "/ingest",
            "application/json",
            body,
            512,
            Stamp::Hex(offsets),
        )
    }

    fn new(
        name: &'static str,
        path: &'static str,
        content_type: &'static str,
        body: Vec<u8>,
        spans: u64,
        stamp: Stamp,
    ) -> Fixture {
        Fixture {
            name,
            path,
            content_type,
            encoding: None,
            body,
            spans,
            stamp,
            ok: 202,
            connections: None,
            next: AtomicUsize::new(0),
        }
    }

    /// Bytes the server decodes per request (the uncompressed body).
    pub fn decoded_bytes(&self) -> f64 {
        self.body.len() as f64
    }

    /// Mean bytes sent per request: the compressed size for `Stamp::Bodies`.
    pub fn wire_bytes(&self) -> f64 {
        match &self.stamp {
            Stamp::Bodies(b) if !b.is_empty() => {
                b.iter().map(|b| b.len() as f64).sum::<f64>() / b.len() as f64
            }
            _ => self.body.len() as f64,
        }
    }

    /// Requests sent that reused a pre-made body (rows repeated: 0 when enough were made).
    pub fn reused(&self) -> u64 {
        match &self.stamp {
            Stamp::Bodies(b) => self.next.load(Ordering::Relaxed).saturating_sub(b.len()) as u64,
            _ => 0,
        }
    }
}

const PROTOBUF: &str = "application/x-protobuf";

/// Overwrites the first 8 bytes of every trace id at `offsets` with the stamp of its trace:
/// the first, as `fixtures::stamp` writes the first 16 hex digits, because they decide the
/// sort order. Stamping the last 8 would leave every request's copy of trace `k` with the same
/// prefix, so ClickHouse would store the copies (the same texts) side by side and compress
/// them far better than real traffic allows.
fn stamp_raw(body: &mut [u8], offsets: &[(usize, u32)], n: u64) {
    for &(at, trace) in offsets {
        let id = fixtures::stamp_id(n, trace as u64);
        body[at..at + 8].copy_from_slice(&id.to_be_bytes());
    }
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(body).expect("gzip into memory");
    e.finish().expect("gzip into memory")
}

/// One keep-alive connection.
struct Conn {
    stream: TcpStream,
    /// The request head up to (not including) `Content-Length`.
    head: Vec<u8>,
    /// This connection's copy of the body, stamped before each request.
    body: Vec<u8>,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr, key: &str, f: &Fixture) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_nodelay(true).unwrap();
        let encoding = f
            .encoding
            .map(|e| format!("Content-Encoding: {e}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {}\r\n{encoding}\
             Authorization: Bearer {key}\r\n",
            f.path, f.content_type
        )
        .into_bytes();
        let body = match f.stamp {
            Stamp::Bodies(_) => Vec::new(),
            _ => f.body.clone(),
        };
        Conn {
            stream,
            head,
            body,
            buf: vec![0; 64 * 1024],
        }
    }

    /// Sends the fixture with fresh trace ids and returns the answer's status.
    fn post(&mut self, f: &Fixture) -> u16 {
        let n = BATCH.fetch_add(1, Ordering::Relaxed);
        let body: &[u8] = match &f.stamp {
            Stamp::Hex(offsets) => {
                fixtures::stamp(&mut self.body, offsets, n);
                &self.body
            }
            Stamp::Raw(offsets) => {
                stamp_raw(&mut self.body, offsets, n);
                &self.body
            }
            Stamp::Bodies(bodies) => &bodies[f.next.fetch_add(1, Ordering::Relaxed) % bodies.len()],
        };
        let mut head = self.head.clone();
        head.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        self.stream.write_all(&head).expect("send head");
        self.stream.write_all(body).expect("send body");
        crate::answer::read(&mut self.stream, &mut self.buf)
    }
}

/// What one phase did.
#[derive(Default)]
pub struct Tally {
    pub accepted: u64,
    pub refused: u64,
    /// Latency of each accepted request from its due time, microseconds (open loop only).
    pub latencies_us: Vec<u64>,
    /// (seconds into the phase it was due, latency ms) of requests over 10 ms (open loop).
    pub slow: Vec<(f64, f64)>,
    /// The first answer that was not the fixture's success, e.g. 404 from a server without
    /// the route.
    pub first_refusal: Option<u16>,
}

/// Runs `connections` threads against the server. With `rate`, request `i` is due at
/// `start + i / rate` (open loop); without, each connection sends back to back (closed loop).
pub fn drive(
    addr: SocketAddr,
    key: &str,
    f: &Fixture,
    connections: usize,
    rate: Option<f64>,
    run: Duration,
) -> Tally {
    let total = Arc::new(Mutex::new(Tally::default()));
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now() + Duration::from_millis(50);
    std::thread::scope(|s| {
        for _ in 0..connections {
            let (total, next) = (total.clone(), next.clone());
            s.spawn(move || {
                let mut conn = Conn::open(addr, key, f);
                let mut t = Tally::default();
                loop {
                    let due = match rate {
                        Some(r) => {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            start + Duration::from_secs_f64(i as f64 / r)
                        }
                        None => Instant::now().max(start),
                    };
                    if due >= start + run {
                        break;
                    }
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let status = conn.post(f);
                    if status == f.ok {
                        t.accepted += 1;
                        if rate.is_some() {
                            let us = due.elapsed().as_micros() as u64;
                            t.latencies_us.push(us);
                            if us > 10_000 {
                                let at = due.duration_since(start).as_secs_f64();
                                t.slow.push((at, us as f64 / 1000.0));
                            }
                        }
                    } else {
                        t.refused += 1;
                        t.first_refusal.get_or_insert(status);
                    }
                }
                let mut total = total.lock().unwrap();
                total.accepted += t.accepted;
                total.refused += t.refused;
                total.latencies_us.extend(t.latencies_us);
                total.slow.extend(t.slow);
                if total.first_refusal.is_none() {
                    total.first_refusal = t.first_refusal;
                }
            });
        }
    });
    Arc::into_inner(total).unwrap().into_inner().unwrap()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::io::Read as _;

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;

    use super::*;

    /// Every span's trace id, as prost (an independent decoder) reads the export.
    fn trace_ids(body: &[u8]) -> Vec<Vec<u8>> {
        let req = ExportTraceServiceRequest::decode(body).expect("a valid export");
        req.resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .map(|s| s.trace_id.clone())
            .collect()
    }

    #[test]
    fn otlp_requests_get_trace_ids_of_their_own() {
        let f = Fixture::otlp();
        let Stamp::Raw(offsets) = &f.stamp else {
            panic!("raw stamps")
        };
        let original = trace_ids(&f.body);
        assert_eq!(original.len(), 512);
        let mut seen = HashSet::new();
        for n in [1, 2, 1 << 39] {
            let mut body = f.body.clone();
            stamp_raw(&mut body, offsets, n);
            let ids = trace_ids(&body);
            assert_eq!(ids.len(), 512);
            for (i, (id, orig)) in ids.iter().zip(&original).enumerate() {
                // The first 8 bytes (the sort order) are new; a trace's spans share its id.
                assert_ne!(id[..8], orig[..8]);
                assert_eq!(id[8..], orig[8..]);
                assert_eq!(id, &ids[i / 16 * 16], "span {i}");
            }
            let distinct: HashSet<_> = ids.into_iter().collect();
            assert_eq!(distinct.len(), 32);
            for id in distinct {
                assert!(seen.insert(id), "a trace id repeats across requests");
            }
        }
    }

    #[test]
    fn gzip_bodies_and_the_v1_twin_are_stamped_too() {
        let g = Fixture::otlp_gzip(3);
        let Stamp::Bodies(bodies) = &g.stamp else {
            panic!("one body per request")
        };
        let mut seen = HashSet::new();
        for b in bodies {
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(&b[..])
                .read_to_end(&mut plain)
                .unwrap();
            assert_eq!(plain.len(), g.body.len());
            seen.extend(trace_ids(&plain));
        }
        assert_eq!(seen.len(), 3 * 32);
        assert!(g.wire_bytes() < g.decoded_bytes());

        let v1 = Fixture::otlp_v1();
        let Stamp::Hex(offsets) = &v1.stamp else {
            panic!("hex stamps")
        };
        assert_eq!(offsets.len(), 32);
        let mut body = v1.body.clone();
        fixtures::stamp(&mut body, offsets, 7);
        let changed = body.iter().zip(&v1.body).filter(|(a, b)| a != b).count();
        assert!(changed > 0 && changed <= 32 * 16);
        serde_json::from_slice::<serde_json::Value>(&body).expect("still JSON");
    }
}
