//! The fast derivation gives exactly what the straightforward one gave: digests of every
//! method's points (all fields), notes and derived profile on synthetic results, taken
//! with the straightforward implementation and kept here. Any change in a point, a
//! weight or an order changes a digest.

use kairos_lab::{synthesize, ScaleOptions};
use kairos_model::{Profile, SampleColumns};
use kairos_time_assignment::{assign, derive, derive_over, to_profile, Derived, Method};

/// FNV-1a over the debug text of a value: every field, in order.
fn digest(x: &impl std::fmt::Debug) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{x:?}").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn cases() -> Vec<(&'static str, Profile)> {
    let base = ScaleOptions {
        samples: 6000,
        functions: 60,
        threads: 3,
        interval_ns: 100_000,
        phase_ns: 30_000_000,
        ..Default::default()
    };
    let with = |depth, cycles| {
        synthesize(&ScaleOptions {
            branch_depth: depth,
            branch_cycles: cycles,
            ..base.clone()
        })
        .unwrap_or_default()
    };
    let mut shuffled = with(16, true);
    // Records in no particular order: the model keeps them by (sample, position), but
    // time assignment must not depend on it.
    shuffled.branches.reverse();
    vec![
        ("no branches", synthesize(&base).unwrap_or_default()),
        ("depth 16", with(16, false)),
        ("depth 8, cycles", with(8, true)),
        ("depth 32, cycles", with(32, true)),
        ("depth 16, cycles, records reversed", shuffled),
    ]
}

/// (case, method, digest of the assignment, digest of the derived profile).
fn digests() -> Vec<(String, Method, u64, u64)> {
    let mut out = Vec::new();
    for (name, p) in cases() {
        for m in Method::ALL {
            let (a, d) = match assign(&p, m) {
                Ok(a) => (
                    digest(&(&a.points, &a.notes, a.points_per_sample.to_bits())),
                    digest(&to_profile(&p, &a)),
                ),
                Err(e) => (digest(&e.to_string()), 0),
            };
            out.push((name.to_string(), m, a, d));
        }
    }
    out
}

/// What a derivation gives, in the form `assign` + `to_profile` is compared in.
fn parts(d: Derived) -> (Profile, Vec<u64>, u64, Vec<String>) {
    (
        d.to_profile(),
        d.record_time.to_vec(&d.samples.time),
        d.points_per_sample.to_bits(),
        d.notes,
    )
}

#[test]
fn derive_equals_assign_then_to_profile() {
    for (name, p) in cases() {
        for m in Method::ALL {
            let slow = assign(&p, m).map(|a| {
                let mut times = vec![
                    u64::MAX;
                    if m == Method::None {
                        0
                    } else {
                        p.branches.len()
                    }
                ];
                for pt in &a.points {
                    if let Some(t) = pt.record.and_then(|r| times.get_mut(r as usize)) {
                        *t = pt.time_ns;
                    }
                }
                (
                    to_profile(&p, &a),
                    times,
                    a.points_per_sample.to_bits(),
                    a.notes,
                )
            });
            let fast = derive(&p, m).map(parts);
            // The page keeps samples apart from the profile and gives them beside it.
            let bare = Profile {
                samples: Vec::new(),
                ..p.clone()
            };
            let beside = derive_over(&bare, p.samples.as_slice(), m).map(parts);
            assert!(
                fast == beside,
                "{name}, {m}: samples given beside the profile change the result"
            );
            // The page gives them as columns.
            let mut cols = SampleColumns::with_capacity(p.samples.len(), 0, 0, 0);
            p.samples.iter().for_each(|&s| cols.push(s));
            let columns = derive_over(&bare, &cols, m).map(parts);
            assert!(
                fast == columns,
                "{name}, {m}: samples given as columns change the result"
            );
            assert!(
                slow == fast,
                "{name}, {m}: derive differs from assign + to_profile"
            );
        }
    }
}

#[test]
fn points_are_those_of_the_straightforward_implementation() {
    let got = digests();
    if std::env::var("KAIROS_PRINT_DIGESTS").is_ok() {
        for (c, m, a, d) in &got {
            println!("    (\"{c}\", \"{m}\", {a:#018x}, {d:#018x}),");
        }
    }
    for (c, m, a, d) in &got {
        let want = EXPECTED.iter().find(|e| e.0 == c && e.1 == m.as_str());
        assert_eq!(want.map(|e| (e.2, e.3)), Some((*a, *d)), "{c}, {m}");
    }
}

/// Taken with the straightforward implementation (before the fast path).
const EXPECTED: &[(&str, &str, u64, u64)] = &[
    (
        "no branches",
        "none",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "equal",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "ratio",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "proportional",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "cycles",
        0x9db7fb72619de3c5,
        0x0000000000000000,
    ),
    (
        "no branches",
        "segments",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "nesting",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "visits",
        0xb405b91682f7ff5c,
        0x325bd4f7345d5a05,
    ),
    (
        "no branches",
        "covered",
        0x6c2a55c542b0ce77,
        0x325bd4f7345d5a05,
    ),
    ("depth 16", "none", 0xb5a4a8e317ace1dc, 0xf5de6bfef4c4b530),
    ("depth 16", "equal", 0x96304af4884b8c87, 0x0a57c7b77f7a57a6),
    ("depth 16", "ratio", 0xfb37de315dc091d6, 0xba0f7b5668fb1f62),
    (
        "depth 16",
        "proportional",
        0x16945b5f9543dbd8,
        0x24762938e3825c23,
    ),
    ("depth 16", "cycles", 0x9db7fb72619de3c5, 0x0000000000000000),
    (
        "depth 16",
        "segments",
        0x7290aab3ef9115ee,
        0x095361347a7d9abd,
    ),
    (
        "depth 16",
        "nesting",
        0xa9db6e5ac23880a1,
        0xdb5f3cf51b2482fe,
    ),
    ("depth 16", "visits", 0xe434df5ce0171daa, 0x7488818a8dc09990),
    (
        "depth 16",
        "covered",
        0x045201cac68d7212,
        0x5b4664fe9a830a00,
    ),
    (
        "depth 8, cycles",
        "none",
        0xed9a80add6d0c9a0,
        0x0b495b948345c78b,
    ),
    (
        "depth 8, cycles",
        "equal",
        0xf363bfd2cdcde18e,
        0x081788af8ea2e052,
    ),
    (
        "depth 8, cycles",
        "ratio",
        0x067abffba5085285,
        0x23f456e35508323f,
    ),
    (
        "depth 8, cycles",
        "proportional",
        0x36ee7807cee28413,
        0x6d76565e27011868,
    ),
    (
        "depth 8, cycles",
        "cycles",
        0x4b3e7808f013d7a3,
        0x5c6d0bf54a72e4b3,
    ),
    (
        "depth 8, cycles",
        "segments",
        0x4b86944f59f40a09,
        0x7bb3d01d75ab06c2,
    ),
    (
        "depth 8, cycles",
        "nesting",
        0x4f9f869d1bfe5e07,
        0x781d178e63949d87,
    ),
    (
        "depth 8, cycles",
        "visits",
        0x968cfd2278c54392,
        0x42cdb6d706f8bcf0,
    ),
    (
        "depth 8, cycles",
        "covered",
        0xff61a5f169c98b04,
        0xa69ef1230d752c8a,
    ),
    (
        "depth 32, cycles",
        "none",
        0xf6efd12eaca67857,
        0x517f4d1161a8f71b,
    ),
    (
        "depth 32, cycles",
        "equal",
        0xbbedcd3f1541a29a,
        0x0ce3bc4ae4f22e88,
    ),
    (
        "depth 32, cycles",
        "ratio",
        0x0438ad6b54a973ed,
        0x8936ea4678fbd824,
    ),
    (
        "depth 32, cycles",
        "proportional",
        0x57ce2f575584ae4c,
        0xfd2756ef98f98518,
    ),
    (
        "depth 32, cycles",
        "cycles",
        0x6398ab13c74019ed,
        0xe0a136a16aa250a3,
    ),
    (
        "depth 32, cycles",
        "segments",
        0x812d2784c295aecb,
        0x106d144912dd626b,
    ),
    (
        "depth 32, cycles",
        "nesting",
        0x000a96fa59dec0cf,
        0x3f9d0bc521595e65,
    ),
    (
        "depth 32, cycles",
        "visits",
        0xc8beb1eda2b5fdda,
        0xe8402b9596608f75,
    ),
    (
        "depth 32, cycles",
        "covered",
        0x2807cab7c7bdef92,
        0x70437aded727ba52,
    ),
    (
        "depth 16, cycles, records reversed",
        "none",
        0xb5a4a8e317ace1dc,
        0xcfe6f8512bbfa583,
    ),
    (
        "depth 16, cycles, records reversed",
        "equal",
        0x8433c838411e331f,
        0x2083657e80a98391,
    ),
    (
        "depth 16, cycles, records reversed",
        "ratio",
        0xf20b0aba2361ce6e,
        0xb6013c9cae7cb6c5,
    ),
    (
        "depth 16, cycles, records reversed",
        "proportional",
        0x86938e4b0a2f771c,
        0x742a82a370e47b0e,
    ),
    (
        "depth 16, cycles, records reversed",
        "cycles",
        0x295c3acaecb999be,
        0xd05ec5e13f465fc5,
    ),
    (
        "depth 16, cycles, records reversed",
        "segments",
        0x39d309e1bfce3c60,
        0x2520848fd621ce3e,
    ),
    (
        "depth 16, cycles, records reversed",
        "nesting",
        0x478e22eb1f31fea9,
        0x2c1f04fa7b92a18d,
    ),
    (
        "depth 16, cycles, records reversed",
        "visits",
        0x98d7252cd57707fc,
        0x675ef622c7289321,
    ),
    (
        "depth 16, cycles, records reversed",
        "covered",
        0x45c57ec8cf267758,
        0x52d9eeffe9c989b6,
    ),
];
