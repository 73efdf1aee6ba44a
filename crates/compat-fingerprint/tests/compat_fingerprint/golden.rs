//! Golden vectors: committed bytes and digests that pin the encoding. A change here is a
//! breaking change of every stored fingerprint and needs a new `Kind` version.
//!
//! The `str` and `record` digests were cross-checked against an independent implementation of
//! the documented byte format (Python, with the `blake3` package's `derive_key_context`).

use compat_fingerprint::{Encoder, Fingerprint, Kind};

const GOLDEN: Kind = Kind::new("agent-sdk 2026-11-30 compat-fingerprint golden v1");
const OTHER: Kind = Kind::new("agent-sdk 2026-11-30 compat-fingerprint golden-other v1");

fn bytes(f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let mut e = Encoder::new();
    f(&mut e);
    e.into_bytes()
}

#[test]
fn string_bytes_are_tag_length_payload() {
    assert_eq!(
        bytes(|e| {
            e.str("ab");
        }),
        [0x01, 2, b'a', b'b']
    );
    // Lengths are unsigned LEB128: 300 = 0xAC 0x02.
    let long = "x".repeat(300);
    assert_eq!(bytes(|e| e.str(&long))[..3], [0x01, 0xAC, 0x02]);
    assert_eq!(
        bytes(|e| {
            e.bytes(&[0xff]);
        }),
        [0x02, 1, 0xff]
    );
}

#[test]
fn scalar_bytes() {
    assert_eq!(
        bytes(|e| {
            e.u64(258);
        }),
        [0x03, 0x82, 0x02]
    );
    assert_eq!(
        bytes(|e| {
            e.i64(-1);
        }),
        [0x04, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(
        bytes(|e| {
            e.bool(false);
            e.bool(true);
        }),
        [0x05, 0x06]
    );
    assert_eq!(
        bytes(|e| {
            e.option(None::<&str>, |e, s| {
                e.str(s);
            });
        }),
        [0x07]
    );
    assert_eq!(
        bytes(|e| {
            e.option(Some(""), |e, s| {
                e.str(s);
            });
        }),
        [0x08, 0x01, 0]
    );
}

#[test]
fn set_bytes_are_sorted_and_record_bytes_carry_tags() {
    // Sorted by encoded bytes: "a" (0x01,1,..,'a') sorts before "b".
    assert_eq!(
        bytes(|e| {
            e.set(["b", "a"], |e, s| {
                e.str(s);
            });
        }),
        [
            0x0A, // set
            0x01, 0x01, 1, b'a', // item "a"
            0x01, 0x01, 1, b'b', // item "b"
            0x00, // end
        ]
    );
    assert_eq!(
        bytes(|e| {
            e.record(|r| {
                r.field(7, |e| {
                    e.bool(true);
                });
            });
        }),
        [0x0C, 7, 0x06, 0]
    );
}

fn sample(e: &mut Encoder) {
    e.record(|r| {
        r.field(1, |e| {
            e.str("agent-ui");
        });
        r.field(2, |e| {
            e.option(Some(8080u64), |e, p| {
                e.u64(p);
            });
        });
        r.field(3, |e| {
            e.list(["a", "bc"], |e, s| {
                e.str(s);
            });
        });
        r.field(4, |e| {
            e.set(["x", "y"], |e, s| {
                e.str(s);
            });
        });
        r.field(5, |e| {
            e.map(
                [("k", true)],
                |e, k| {
                    e.str(k);
                },
                |e, v| {
                    e.bool(v);
                },
            );
        });
    });
}

#[test]
fn digest_vectors() {
    let cases: [(&str, Fingerprint); 4] = [
        ("empty", Fingerprint::of(GOLDEN, |_| {})),
        (
            "str",
            Fingerprint::of(GOLDEN, |e| {
                e.str("hello");
            }),
        ),
        ("record", Fingerprint::of(GOLDEN, sample)),
        ("record-other-kind", Fingerprint::of(OTHER, sample)),
    ];
    let expected = [
        (
            "empty",
            "b3:f566d5f54b2cae94f9b37946749abb31d118d6aed94a40b650cde8bd881184ea",
        ),
        (
            "str",
            "b3:865f03b344f76a2cbd065ae955600554c38b14c3268e5f2b2eabb7260d4c7ae3",
        ),
        (
            "record",
            "b3:205a1ecc26a9342d0ae62aafd39da907e030d18174610dde2d846a3307c435ff",
        ),
        (
            "record-other-kind",
            "b3:ea3ed3ef4d4e79843bdfa6c71e6a0f7b35faa14dd2bec17397338708ece4d040",
        ),
    ];
    for ((name, got), (ename, want)) in cases.iter().zip(expected) {
        assert_eq!(*name, ename);
        assert_eq!(got.to_string(), want, "golden vector {name}");
    }
}

#[test]
fn display_parses_back_and_rejects_bad_text() {
    let fp = Fingerprint::of(GOLDEN, sample);
    assert_eq!(fp.to_string().parse::<Fingerprint>().unwrap(), fp);
    assert!("".parse::<Fingerprint>().is_err());
    assert!("b3:".parse::<Fingerprint>().is_err());
    assert!("sha256:00".parse::<Fingerprint>().is_err());
    let upper = fp.to_string().to_uppercase().replace("B3:", "b3:");
    assert!(upper.parse::<Fingerprint>().is_err() || upper == fp.to_string());
    let json = serde_json::to_string(&fp).unwrap();
    assert_eq!(json, format!("\"{fp}\""));
    assert_eq!(serde_json::from_str::<Fingerprint>(&json).unwrap(), fp);
    assert!(serde_json::from_str::<Fingerprint>("\"b3:zz\"").is_err());
    assert_eq!(fp.short().to_string().len(), 12);
    assert!(fp.to_string().starts_with(&format!("b3:{}", fp.short())));
}

#[test]
fn encoded_set_matches_the_encoder() {
    let items = ["b", "a", "ccc", "a"];
    let encoded: Vec<Encoder> = items
        .iter()
        .map(|s| {
            let mut e = Encoder::new();
            e.str(s);
            e
        })
        .collect();
    let via_encoder = Fingerprint::of(GOLDEN, |e| e.set(&encoded, |e, item| e.encoded(item)));
    let mut slices: Vec<&[u8]> = encoded.iter().map(Encoder::as_bytes).collect();
    assert_eq!(
        Fingerprint::of_encoded_set(GOLDEN, &mut slices),
        via_encoder
    );
    let mut reversed: Vec<&[u8]> = encoded.iter().rev().map(Encoder::as_bytes).collect();
    assert_eq!(
        Fingerprint::of_encoded_set(GOLDEN, &mut reversed),
        via_encoder
    );
}
