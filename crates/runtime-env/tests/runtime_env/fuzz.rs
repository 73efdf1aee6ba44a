//! Fuzz-style properties (issue 13): the namespace and session-id parsers (constructors,
//! `FromStr`, `TryFrom`, serde) and the redactor, fed adversarial input, never panic; the
//! parsers agree with each other and what they accept round-trips exactly.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use runtime_env::{CredentialNamespace, Redactor, SessionId, redact};
use secrecy::SecretString;

fn config() -> ProptestConfig {
    test_support::fuzz_config()
}

/// Adversarial text: control characters, multi-byte characters, near-valid shapes (with
/// colons, dots, slashes and case), JSON-ish text and long runs.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,24}",
        2 => "[\\x00-\\x1f\\x7f ]{0,8}",
        3 => "[a-zA-Z0-9._@+:/\\\\-]{0,40}",
        2 => "[a-z][a-z0-9_-]{0,34}(:[A-Za-z0-9._@+-]{0,100})?",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,40}",
        1 => "[é€\u{1d11e}\u{200b}\u{feff}\u{0}]{0,12}",
        1 => (any::<char>(), 60usize..400).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

/// Text shaped like the things the redactor looks for: headers, assignments, URLs with
/// credentials, JSON fields and token prefixes, cut at arbitrary points.
fn secretish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("Authorization: Bearer ".to_owned()),
        Just("Cookie: a=".to_owned()),
        Just("\"access_token\":\"".to_owned()),
        Just("postgresql://u:".to_owned()),
        Just("https://".to_owned()),
        Just("@".to_owned()),
        Just("sk-".to_owned()),
        Just("ghp_".to_owned()),
        Just("xoxb-".to_owned()),
        Just("AKIA".to_owned()),
        Just("eyJ".to_owned()),
        Just("-----BEGIN PRIVATE KEY-----".to_owned()),
        Just("%2F".to_owned()),
        Just("\\u00".to_owned()),
        Just("=".to_owned()),
        "[A-Za-z0-9+/=._-]{0,24}",
        nasty(),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(config())]

    /// Every namespace parser gives the same answer; an accepted namespace keeps its text,
    /// splits at the first colon and maps to one lower-case-safe directory name.
    #[test]
    fn namespace_parsers_agree_and_never_panic(s in nasty()) {
        let made = CredentialNamespace::new(&s);
        prop_assert_eq!(&s.parse::<CredentialNamespace>(), &made);
        prop_assert_eq!(&CredentialNamespace::try_from(s.as_str()), &made);
        prop_assert_eq!(&CredentialNamespace::try_from(s.clone()), &made);
        let json = serde_json::to_string(&s).unwrap();
        let decoded = serde_json::from_str::<CredentialNamespace>(&json);
        prop_assert_eq!(decoded.is_ok(), made.is_ok());
        if let Ok(ns) = made {
            prop_assert_eq!(ns.as_str(), s.as_str());
            prop_assert_eq!(ns.to_string(), s.clone());
            prop_assert_eq!(decoded.unwrap(), ns.clone());
            prop_assert_eq!(serde_json::to_string(&ns).unwrap(), json);
            match s.split_once(':') {
                Some((kind, id)) => {
                    prop_assert_eq!(ns.kind(), kind);
                    prop_assert_eq!(ns.id(), Some(id));
                }
                None => {
                    prop_assert_eq!(ns.kind(), s.as_str());
                    prop_assert_eq!(ns.id(), None);
                }
            }
            let dir = ns.dir_name();
            prop_assert!(!dir.contains(['/', '\\', ':', '\0']) && !dir.starts_with('.'));
            prop_assert!(!dir.bytes().any(|b| b.is_ascii_uppercase()));
            prop_assert_eq!(String::from(ns), s);
        } else {
            let err = made.unwrap_err().to_string();
            prop_assert!(s.len() < 6 || !err.contains(&s), "the error repeats its input: {err}");
        }
    }

    /// `SessionId::new`, `TryFrom` and serde give the same answer; an accepted id keeps its
    /// text and maps to a directory name with no upper case and no separator.
    #[test]
    fn session_id_parsers_agree_and_never_panic(s in nasty()) {
        let made = SessionId::new(&s);
        prop_assert_eq!(&SessionId::try_from(s.clone()), &made);
        let decoded = serde_json::from_str::<SessionId>(&serde_json::to_string(&s).unwrap());
        prop_assert_eq!(decoded.is_ok(), made.is_ok());
        if let Ok(id) = made {
            prop_assert_eq!(id.as_str(), s.as_str());
            prop_assert_eq!(decoded.unwrap(), id.clone());
            let dir = id.dir_name();
            prop_assert!(!dir.contains(['/', '\\', '\0']) && !dir.starts_with('.'));
            prop_assert!(!dir.bytes().any(|b| b.is_ascii_uppercase()));
        }
    }

    /// The pattern redactor and a redactor holding a secret take any text; the secret never
    /// survives, wherever it is placed.
    #[test]
    fn redactors_never_panic(
        text in secretish(),
        secret in "[a-z0-9]{4,16}",
        at in any::<prop::sample::Index>(),
    ) {
        let _ = redact(&text);
        let mut cut = at.index(text.len() + 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let with = format!("{}{secret}{}", &text[..cut], &text[cut..]);
        let r = Redactor::with_secrets([SecretString::from(secret.clone())]);
        let out = r.redact(&with);
        prop_assert!(!out.contains(&secret), "{secret:?} survived in {out:?}");
    }
}
