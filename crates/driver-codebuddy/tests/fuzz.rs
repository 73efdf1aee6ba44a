//! Fuzz-style properties (issue 13): the session codec, fed adversarial params and states,
//! never panics, keeps its round-trip law and accepts only ids that are safe argv elements.
//! (The stream-json event translator this driver uses is fuzzed in driver-stream-json.)
//!
//! 10,000 cases with a fixed seed, so a CI failure reproduces locally.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use driver_codebuddy::CODEBUDDY_CODEC;
use driver_spi::{SessionCodec, SessionParams, SessionState};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config() -> Config {
    test_support::fuzz_config()
}

fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,16}",
        1 => "[\\x00-\\x1f\\x7f ]{0,6}",
        3 => "-?[a-zA-Z0-9_-]{0,12}",
        1 => "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        1 => "[é€\u{1d11e}\u{200b}\u{0}]{0,8}",
        1 => (any::<char>(), 100usize..300).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn codec_never_panics(resume in nasty(), display in nasty(), value in nasty()) {
        let codec = &CODEBUDDY_CODEC;
        let data = BTreeMap::from([("guard.workspace".to_owned(), value)]);
        let p = SessionParams::new(resume.clone(), display.clone(), data.clone());
        match codec.from_params(Some(&p)) {
            Ok(state) => {
                prop_assert!(driver_cli::is_safe_id(&resume));
                let back = codec.to_params(state.as_ref()).unwrap().unwrap();
                prop_assert_eq!(&back.resume_id, &p.resume_id);
                prop_assert_eq!(&back.data, &p.data);
                if !display.trim().is_empty() {
                    prop_assert_eq!(&back, &p);
                }
                prop_assert_eq!(codec.guard_fingerprint(&back), codec.guard_fingerprint(&p));
            }
            Err(_) => prop_assert!(!driver_cli::is_safe_id(&resume)),
        }
        let mut s = SessionState::new(resume.clone()).with_display_id(display);
        s.data = data;
        prop_assert_eq!(codec.to_params(Some(&s)).is_ok(), driver_cli::is_safe_id(&resume));
    }
}
