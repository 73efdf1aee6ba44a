//! Fuzz-style properties (issue 13): the public parsers of stored values (`RecordId`,
//! `RecordStatus`, records through serde) never panic, accept exactly their documented form,
//! and never echo a rejected value.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use proptest::prelude::*;
use proptest::test_runner::Config;
use thread_store::{RecordId, RecordStatus};

fn config() -> Config {
    test_support::fuzz_config()
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,24}",
        1 => "[\\x00-\\x1f]{0,4}",
        1 => Just("active".to_owned()),
        1 => Just("archived".to_owned()),
        1 => (any::<char>(), 400usize..700).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn record_ids_accept_their_form_and_round_trip(s in text()) {
        match RecordId::new(s.clone()) {
            Ok(id) => {
                prop_assert_eq!(id.as_str(), s.as_str());
                prop_assert!(!s.is_empty() && !s.contains('\0'));
                let json = serde_json::to_string(&id).unwrap();
                let back: RecordId = serde_json::from_str(&json).unwrap();
                prop_assert_eq!(back, id);
            }
            Err(e) => {
                if s.len() >= 8 {
                    prop_assert!(!e.to_string().contains(s.as_str()));
                }
            }
        }
        // serde agrees with `new`.
        let decoded: Result<RecordId, _> = serde_json::from_value(serde_json::Value::String(s.clone()));
        prop_assert_eq!(decoded.is_ok(), RecordId::new(s).is_ok());
    }

    #[test]
    fn record_status_parses_only_its_two_forms(s in text()) {
        match RecordStatus::parse(&s) {
            Some(status) => prop_assert_eq!(status.as_str(), s.as_str()),
            None => prop_assert!(s != "active" && s != "archived"),
        }
    }
}
