//! Tests of the pricing fuzz property (`fuzz.rs`): its input format, exact rounding, start times near change points, and its seeds.

use super::*;

#[test]
fn bytes_round_trip() {
    let call = FuzzCall {
        usage: Some([
            Some(1000),
            None,
            Some(3),
            Some(u64::MAX),
            None,
            None,
            None,
            None,
            Some(0),
        ]),
        base: [
            Some((25, -7)),
            None,
            Some((1, -2)),
            None,
            None,
            Some((3, 0)),
            None,
            None,
        ],
        tier: Some((200_000, [Some((5, -6)); 8])),
        at: AtPick {
            how: 3,
            point: 2,
            delta: 1_785_369_600_000,
        },
        changes: vec![
            Change {
                gap: 1_785_369_600_000,
                prices: [None, Some((2, -7)), None, None, None, None, None, None],
                window: None,
                tier: None,
            },
            Change {
                gap: 0,
                prices: [None; 8],
                window: Some((86_399, 0, [Some((1, 0)); 8])),
                tier: Some((
                    999,
                    [None, Some((3, -2)), None, None, None, None, None, None],
                )),
            },
        ],
        provider: Some("openai.chat".into()),
        model_id: "gpt-4o".into(),
    };
    assert_eq!(FuzzCall::from_bytes(&call.to_bytes()), call);
    let none = FuzzCall {
        model_id: "x".into(),
        ..FuzzCall::default()
    };
    assert_eq!(FuzzCall::from_bytes(&none.to_bytes()), none);
}

/// A change's own tier is priced above its threshold and not below, and not inside the
/// change's window; the oracle and the model agree on each (`check_model` panics if not).
#[test]
fn a_changes_tier_applies_above_its_threshold_outside_its_window() {
    let day = 1_785_369_600_000; // 2026-07-30 00:00 UTC
    for (input, at_ms, want_tier) in [
        (1_001, day + 1, Some(1_000)),
        (1_000, day + 1, None),
        (1_001, day + 3_600_000, None), // 01:00, in the window
    ] {
        let mut usage = [None; 9];
        usage[0] = Some(input);
        let call = FuzzCall {
            usage: Some(usage),
            base: [Some((1, -6)); 8],
            at: AtPick::anywhere(at_ms),
            changes: vec![Change {
                gap: day,
                prices: [Some((2, -6)); 8],
                window: Some((1_800, 7_200, [Some((3, -6)); 8])),
                tier: Some((1_000, [Some((4, -6)); 8])),
            }],
            model_id: "x".into(),
            ..FuzzCall::default()
        };
        fuzz_price(&call.to_bytes());
        let (prices, ..) = price_set(&call.changes[0].prices, call.changes[0].tier.as_ref());
        let in_window = at_ms != day + 1;
        let got = if in_window {
            None
        } else {
            prices
                .select(Some(&Usage {
                    input_tokens: Some(input),
                    ..Usage::default()
                }))
                .1
        };
        assert_eq!(got, want_tier, "input {input} at {at_ms}");
    }
}

#[test]
fn exact_cost_rounds_half_up_once() {
    // 3 tokens at 0.00000025 USD = 7.5e-7 USD = 7500 units exactly.
    assert_eq!(exact_cost(3, (25, -8)), Ok(7500));
    // 1 unit at 5e-11 USD is half a unit: rounds up.
    assert_eq!(exact_cost(1, (5, -11)), Ok(1));
    assert_eq!(exact_cost(1, (49, -12)), Ok(0));
    assert_eq!(exact_cost(u64::MAX, (u64::MAX, -128)), Ok(0));
    assert_eq!(exact_cost(1, (1, 8)), Err(()));
    assert_eq!(exact_cost(99_999_999, (1, 0)), Ok(999_999_990_000_000_000));
}

/// Found by the `pricing` fuzz target: a price written `0e101` is zero, and so is its cost,
/// but this oracle computed `10^111` first and called the cost an overflow.
#[test]
fn regression_zero_price_with_a_huge_exponent() {
    assert_eq!(exact_cost(7873, (0, 101)), Ok(0));
    assert_eq!(exact_cost(0, (u64::MAX, 127)), Ok(0));
    // The input as found (in the layout of the time, which has changed since).
    let call = FuzzCall {
        usage: Some([
            Some(7873),
            Some(754),
            Some(7973),
            None,
            Some(3313),
            None,
            None,
            None,
            None,
        ]),
        base: [
            Some((0, 101)),
            Some((26_151_892_790, 117)),
            None,
            Some((1_871_669_543_413_413, 48)),
            Some((0, 0)),
            None,
            None,
            None,
        ],
        ..FuzzCall::default()
    };
    fuzz_price(&call.to_bytes());
}

/// Start times are picked 1 ms before, at and 1 ms after each change point (a period's
/// start; a window's opening and closing on the day its period starts and the next), a
/// little either side of one, or anywhere; the property holds at each.
#[test]
fn start_times_are_picked_around_change_points() {
    let call = FuzzCall {
        usage: Some([Some(10), Some(10), None, None, None, None, None, None, None]),
        base: [Some((1, -6)); 8],
        changes: vec![
            Change {
                gap: 5_000,
                prices: [Some((2, -6)); 8],
                window: Some((59_400, 1_800, [Some((3, -6)); 8])),
                tier: None,
            },
            Change {
                gap: 1,
                prices: [Some((4, -6)); 8],
                window: None,
                tier: None,
            },
        ],
        ..FuzzCall::default()
    };
    let (from, to) = (59_400_000, 1_800_000);
    let points = [0, 5_000, from, to, DAY_MS + from, DAY_MS + to, 5_001];
    let periods = [
        Period::always(PriceSet::default()),
        Period {
            from_ms: 5_000,
            prices: PriceSet::default(),
            windows: Box::new([Window {
                from_s: 59_400,
                to_s: 1_800,
                prices: PriceSet::default(),
            }]),
        },
        Period {
            from_ms: 5_001,
            prices: PriceSet::default(),
            windows: Box::new([]),
        },
    ];
    for (i, &point) in points.iter().enumerate() {
        for (how, delta, at) in [
            (0, 0, point.saturating_sub(1)),
            (1, 0, point),
            (2, 0, point + 1),
            (3, 43, point + 21),
            (8, 42, point.saturating_sub(21)),
            (4, 42, 42),
        ] {
            let pick = AtPick {
                how,
                point: i as u8 + 7,
                delta,
            };
            assert_eq!(pick.resolve(&periods), at, "{pick:?}");
            fuzz_price(
                &FuzzCall {
                    at: pick,
                    ..call.clone()
                }
                .to_bytes(),
            );
        }
    }
    assert_eq!(AtPick::anywhere(9).resolve(&[]), 9);
}

/// The property holds on hand-made calls around the edges.
#[test]
fn fuzz_price_seeds() {
    let max = MAX_MONEY as u64;
    let calls = [
        FuzzCall::default(),
        FuzzCall {
            usage: Some([
                Some(1000),
                Some(200),
                None,
                Some(50),
                Some(100),
                Some(10),
                Some(2),
                Some(1),
                None,
            ]),
            base: [Some((25, -7)); 8],
            tier: Some((
                500,
                [Some((5, -7)), None, None, None, None, None, None, None],
            )),
            at: AtPick {
                how: 0,
                point: 1,
                delta: 0,
            },
            changes: vec![Change {
                gap: 1_785_369_600_000,
                prices: [Some((5, -7)); 8],
                window: None,
                tier: None,
            }],
            provider: Some("anthropic.messages".into()),
            model_id: "claude-sonnet-4-5-20250929".into(),
        },
        FuzzCall {
            usage: Some([
                Some(300_000),
                Some(10),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
            ]),
            base: [Some((1, -6)); 8],
            tier: Some((272_000, [Some((2, -6)); 8])),
            at: AtPick {
                how: 1,
                point: 1,
                delta: 0,
            },
            changes: vec![Change {
                gap: 1_785_369_600_000,
                prices: [Some((2, -7)); 8],
                window: None,
                tier: None,
            }],
            provider: Some("openai".into()),
            model_id: "gpt-5.6-luna".into(),
        },
        FuzzCall {
            usage: Some([Some(u64::MAX); 9]),
            base: [Some((u64::MAX, 127)); 8],
            tier: Some((u64::MAX, [Some((1, -128)); 8])),
            at: AtPick::anywhere(u64::MAX),
            changes: vec![
                Change {
                    gap: u64::MAX,
                    prices: [Some((u64::MAX, 127)); 8],
                    window: Some((0, 86_399, [Some((1, -128)); 8])),
                    tier: Some((0, [Some((u64::MAX, 127)); 8])),
                },
                // Past `u64::MAX`: left out.
                Change::default(),
            ],
            provider: None,
            model_id: "us.anthropic.claude-3-5-sonnet-20240620-v1:0".into(),
        },
        FuzzCall {
            usage: Some([Some(max), None, None, None, None, None, None, None, None]),
            base: [Some((1, -10)), None, None, None, None, None, None, None],
            ..FuzzCall::default()
        },
    ];
    for call in calls {
        fuzz_price(&call.to_bytes());
    }
    for data in [&b""[..], b"\xff", &[0xffu8; 300], b"\x01\x05\x05\x05"] {
        fuzz_price(data);
    }
}
