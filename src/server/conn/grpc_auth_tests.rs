//! Keys over gRPC: a key revoked between two exports of one connection is refused on the
//! second, and malformed keys are `UNAUTHENTICATED` without the message repeating them.

use std::sync::Arc;

use super::harness;
use crate::server::Shared;

/// Puts `key` in the key set (or an empty set).
fn set_keys(shared: &Shared, key: Option<&str>) {
    let mut set = crate::auth::KeySet::default();
    if let Some(key) = key {
        let principal = Arc::new(crate::auth::Principal::unlimited("org-a", ""));
        set.insert(crate::auth::hash_key(key.as_bytes()), principal);
    }
    shared.keys.replace(set, crate::clock::now_ms(), true);
}

/// The same over one gRPC connection: the export after the revocation is `UNAUTHENTICATED`.
#[test]
fn a_key_revoked_between_two_exports_of_one_grpc_connection_is_refused() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let (first, second) = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let request = || harness::export_request(addr, &[("x-api-key", &key)]);
        let first = harness::call(&mut client, request(), harness::message(1))
            .await
            .unwrap();
        set_keys(&shared, None);
        let second = harness::call(&mut client, request(), harness::message(1))
            .await
            .unwrap();
        (first.status, second.status)
    });
    server.thread.join().unwrap();
    assert_eq!(first, Some(0));
    assert_eq!(second, Some(16), "UNAUTHENTICATED");
}

/// Malformed keys over gRPC: `UNAUTHENTICATED` whatever their shape, and the message never
/// repeats the key.
#[test]
fn malformed_keys_over_grpc_are_unauthenticated() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let other = crate::auth::generate_key(&shared.config.key_prefix).unwrap();
    let long = format!("ti_{}", "A".repeat(4000));
    let bearer_other = format!("Bearer {other}");
    let bearer_long = format!("Bearer {long}");
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("no key", vec![]),
        ("empty x-api-key", vec![("x-api-key", "")]),
        ("Bearer alone", vec![("authorization", "Bearer")]),
        ("Basic", vec![("authorization", "Basic abc")]),
        ("bare key", vec![("authorization", key.as_str())]),
        ("long", vec![("x-api-key", long.as_str())]),
        ("long bearer", vec![("authorization", bearer_long.as_str())]),
        ("unknown", vec![("x-api-key", other.as_str())]),
        (
            "unknown bearer wins",
            vec![
                ("authorization", bearer_other.as_str()),
                ("x-api-key", key.as_str()),
            ],
        ),
    ];
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let answers = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let mut answers = Vec::new();
        for (what, headers) in &cases {
            let a = harness::call(
                &mut client,
                harness::export_request(addr, headers),
                harness::message(1),
            )
            .await
            .unwrap();
            let message = a
                .meta
                .get("grpc-message")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            answers.push((*what, a.status, message));
        }
        answers
    });
    server.thread.join().unwrap();
    for (what, status, message) in answers {
        assert_eq!(status, Some(16), "{what}: {message}");
        assert!(
            !message.contains(&key[3..]) && !message.contains(&other[3..]),
            "{what}: {message}"
        );
    }
}
