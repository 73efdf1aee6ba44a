//! Property tests with a fixed seed: determinism, set order, injectivity, field sensitivity.

use compat_fingerprint::{Encoder, Fingerprint, Kind};
use proptest::prelude::*;
use proptest::test_runner::Config;

const KIND: Kind = Kind::new("agent-sdk 2026-11-30 compat-fingerprint properties v1");
const OTHER: Kind = Kind::new("agent-sdk 2026-11-30 compat-fingerprint properties-other v1");

fn config() -> Config {
    test_support::proptest_config(test_support::PROPERTY_CASES, 0x5eed_c0de)
}

/// A projection shaped like a service declaration, covering every encoder primitive.
#[derive(Debug, Clone, PartialEq)]
struct Service {
    id: String,
    url: Option<String>,
    port: Option<u64>,
    required: bool,
    offset: i64,
    args: Vec<String>,
    env_names: Vec<String>,
    metadata: Vec<(String, String)>,
    blob: Vec<u8>,
}

fn service() -> impl Strategy<Value = Service> {
    (
        ".{0,12}",
        proptest::option::of(".{0,12}"),
        proptest::option::of(any::<u64>()),
        any::<bool>(),
        any::<i64>(),
        prop::collection::vec(".{0,6}", 0..4),
        prop::collection::btree_set("[A-Z_]{1,8}", 0..4),
        prop::collection::btree_map("[a-z]{1,6}", ".{0,6}", 0..4),
        prop::collection::vec(any::<u8>(), 0..8),
    )
        .prop_map(
            |(id, url, port, required, offset, args, env, meta, blob)| Service {
                id,
                url,
                port,
                required,
                offset,
                args,
                env_names: env.into_iter().collect(),
                metadata: meta.into_iter().collect(),
                blob,
            },
        )
}

fn encode(e: &mut Encoder, s: &Service) {
    e.record(|r| {
        r.field(1, |e| {
            e.str(&s.id);
        });
        r.field(2, |e| {
            e.option(s.url.as_deref(), |e, u| {
                e.str(u);
            });
        });
        r.field(3, |e| {
            e.option(s.port, |e, p| {
                e.u64(p);
            });
        });
        r.field(4, |e| {
            e.bool(s.required);
        });
        r.field(5, |e| {
            e.i64(s.offset);
        });
        r.field(6, |e| {
            e.list(&s.args, |e, a| {
                e.str(a);
            });
        });
        r.field(7, |e| {
            e.set(&s.env_names, |e, n| {
                e.str(n);
            });
        });
        r.field(8, |e| {
            e.map(
                s.metadata.iter().map(|(k, v)| (k, v)),
                |e, k| {
                    e.str(k);
                },
                |e, v| {
                    e.str(v);
                },
            );
        });
        r.field(9, |e| {
            e.bytes(&s.blob);
        });
    });
}

fn fp(s: &Service) -> Fingerprint {
    Fingerprint::of(KIND, |e| encode(e, s))
}

fn str_list(items: &[&str]) -> Fingerprint {
    Fingerprint::of(KIND, |e| {
        e.list(items, |e, s| {
            e.str(s);
        });
    })
}

#[test]
fn injectivity_pairs() {
    assert_ne!(str_list(&["a", "bc"]), str_list(&["ab", "c"]));
    assert_ne!(str_list(&[]), str_list(&[""]));
    let none = Fingerprint::of(KIND, |e| {
        e.option(None::<&str>, |e, s| {
            e.str(s);
        });
    });
    let some_empty = Fingerprint::of(KIND, |e| {
        e.option(Some(""), |e, s| {
            e.str(s);
        });
    });
    assert_ne!(none, some_empty);
    // A string and a byte string with the same payload differ.
    assert_ne!(
        Fingerprint::of(KIND, |e| {
            e.str("a");
        }),
        Fingerprint::of(KIND, |e| {
            e.bytes(b"a");
        })
    );
    // An empty map differs from an absent field.
    let with_map = Fingerprint::of(KIND, |e| {
        e.record(|r| {
            r.field(1, |e| {
                e.map(std::iter::empty::<(&str, &str)>(), |_, _| {}, |_, _| {});
            });
        });
    });
    let without = Fingerprint::of(KIND, |e| {
        e.record(|_| {});
    });
    assert_ne!(with_map, without);
    // A set differs from a list with the same items.
    let set = Fingerprint::of(KIND, |e| {
        e.set(["a"], |e, s| {
            e.str(s);
        });
    });
    assert_ne!(set, str_list(&["a"]));
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn deterministic_across_clones_and_threads(s in service()) {
        let a = fp(&s);
        prop_assert_eq!(a, fp(&s.clone()));
        let t = s.clone();
        let b = std::thread::spawn(move || fp(&t)).join().unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn sets_and_maps_ignore_order(s in service(), seed in any::<u64>()) {
        let mut shuffled = s.clone();
        // Rotate instead of a random shuffle: deterministic and still reorders.
        let n = shuffled.env_names.len().max(1);
        shuffled.env_names.rotate_left((seed as usize) % n);
        shuffled.metadata.reverse();
        prop_assert_eq!(fp(&s), fp(&shuffled));
    }

    #[test]
    fn lists_keep_order(a in ".{1,6}", b in ".{1,6}") {
        prop_assume!(a != b);
        prop_assert_ne!(str_list(&[&a, &b]), str_list(&[&b, &a]));
    }

    #[test]
    fn boundary_shifts_never_collide(l in prop::collection::vec(".{0,4}", 0..4), r in prop::collection::vec(".{0,4}", 0..4)) {
        prop_assume!(l != r);
        let l: Vec<&str> = l.iter().map(String::as_str).collect();
        let r: Vec<&str> = r.iter().map(String::as_str).collect();
        prop_assert_ne!(str_list(&l), str_list(&r));
    }

    #[test]
    fn changing_any_single_field_changes_the_digest(s in service(), field in 0usize..9, salt in ".{1,4}") {
        let mut m = s.clone();
        match field {
            0 => m.id.push_str(&salt),
            1 => m.url = match m.url { None => Some(String::new()), Some(_) => None },
            2 => m.port = Some(m.port.map_or(0, |p| p.wrapping_add(1))),
            3 => m.required = !m.required,
            4 => m.offset = m.offset.wrapping_add(1),
            5 => m.args.push(salt.clone()),
            6 => m.env_names.push(format!("{}_{}", "Z".repeat(9), m.env_names.len())),
            7 => m.metadata.push(("zzzzzzz".into(), salt.clone())),
            _ => m.blob.push(0),
        }
        prop_assert_ne!(fp(&s), fp(&m), "field {} did not change the digest", field);
    }

    #[test]
    fn kinds_are_domain_separated(s in service()) {
        prop_assert_ne!(Fingerprint::of(KIND, |e| encode(e, &s)), Fingerprint::of(OTHER, |e| encode(e, &s)));
    }
}
