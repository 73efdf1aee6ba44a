//! Fuzz-style properties (issue 13): every parser of the public API, fed adversarial input,
//! answers `Ok` or `Err` and never panics; what it accepts round-trips exactly.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use compat_fingerprint::{Breakdown, ComponentName, Fingerprint, ShortDigest};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config() -> Config {
    test_support::fuzz_config()
}

/// Adversarial text: control characters, multi-byte characters, near-valid and JSON-ish
/// shapes, and long runs.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,24}",
        2 => "[\\x00-\\x1f\\x7f ]{0,8}",
        2 => "[a-z0-9.:_-]{0,70}",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,40}",
        1 => "[é€\u{1d11e}\u{200b}\u{feff}\u{0}]{0,12}",
        1 => (any::<char>(), 60usize..400).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

/// Strings shaped like fingerprints: the prefix, then hex-ish digits of about the right
/// length, with multi-byte characters where a digit should be.
fn fingerprint_like() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "b3:[0-9a-fA-F]{62,66}",
        2 => "b3:[0-9a-f]{60}[0-9a-fg-zé€]{2,6}",
        1 => "(b3|B3|b4|b)?:?[0-9a-f]{0,70}",
        1 => nasty(),
        1 => any::<[u8; 32]>().prop_map(|b| Fingerprint::from_bytes(b).to_string()),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// `Fingerprint::from_str` and the serde decoder agree, never panic, and what they accept
    /// prints back as the canonical lower-case form.
    #[test]
    fn fingerprint_parsers_never_panic(s in fingerprint_like()) {
        let parsed = s.parse::<Fingerprint>();
        let json = serde_json::to_string(&s).unwrap();
        let decoded = serde_json::from_str::<Fingerprint>(&json);
        prop_assert_eq!(parsed.is_ok(), decoded.is_ok());
        if let Ok(fp) = parsed {
            prop_assert_eq!(fp.to_string(), s.to_ascii_lowercase());
            prop_assert_eq!(decoded.unwrap(), fp);
            prop_assert_eq!(Fingerprint::from_bytes(*fp.as_bytes()), fp);
            let short = fp.short().to_string();
            prop_assert!(fp.to_string().contains(&short));
        }
    }

    /// `ComponentName::new` and its serde decoder agree; an accepted name is unchanged and
    /// keeps to the grammar.
    #[test]
    fn component_names_never_panic(s in nasty()) {
        let made = ComponentName::new(s.clone());
        let json = serde_json::to_string(&s).unwrap();
        let decoded = serde_json::from_str::<ComponentName>(&json);
        prop_assert_eq!(made.is_ok(), decoded.is_ok());
        if let Ok(name) = made {
            prop_assert_eq!(name.as_str(), s.as_str());
            prop_assert!(s.len() <= 64);
            prop_assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b".:_-".contains(&b)));
            let digest = ShortDigest::of_str(&s);
            if let Ok(with) = ComponentName::with_digest(&s, digest) {
                prop_assert_eq!(with.as_str(), format!("{s}:{digest}"));
            }
        } else {
            prop_assert!(ComponentName::with_digest(&s, ShortDigest::of_str(&s)).is_err());
        }
    }

    /// `ShortDigest::of_str` takes any text.
    #[test]
    fn short_digest_takes_any_text(s in nasty()) {
        let d = ShortDigest::of_str(&s);
        prop_assert_eq!(d, ShortDigest::of_str(&s));
        prop_assert!(d.to_string().bytes().all(|b| b.is_ascii_hexdigit()));
    }

    /// The breakdown decoder refuses any invalid name or digest and never panics; what it
    /// accepts serializes back to an equal breakdown.
    #[test]
    fn breakdown_decoder_never_panics(
        entries in prop::collection::vec((nasty(), fingerprint_like()), 0..5),
        raw in "[{}\\[\\]\":,\\\\0-9a-z b]{0,60}",
    ) {
        let object: serde_json::Map<String, serde_json::Value> = entries
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let json = serde_json::Value::Object(object.clone()).to_string();
        match serde_json::from_str::<Breakdown>(&json) {
            Ok(b) => {
                prop_assert_eq!(b.len(), object.len());
                for (name, digest) in b.iter() {
                    let stored = object.get(name.as_str()).and_then(|v| v.as_str());
                    prop_assert_eq!(stored.map(str::to_ascii_lowercase), Some(digest.to_string()));
                }
                let again: Breakdown = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
                prop_assert_eq!(&again, &b);
                prop_assert!(b.diff(&again).is_empty());
            }
            Err(_) => {
                let bad = object.iter().any(|(k, v)| {
                    let digest = v.as_str().unwrap_or_default();
                    ComponentName::new(k.clone()).is_err() || digest.parse::<Fingerprint>().is_err()
                });
                prop_assert!(bad, "a valid breakdown was refused: {json}");
            }
        }
        let _ = serde_json::from_str::<Breakdown>(&raw);
    }
}
