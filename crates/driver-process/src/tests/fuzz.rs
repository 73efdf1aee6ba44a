//! Fuzz-style properties (issue 13): the version finder and the JSONL line parser, fed
//! adversarial input, never panic; a version embedded in text is found exactly, and a parse
//! error names the line number only.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::error::ProcessError;
use crate::lines::parse_json_line;
use crate::version::Version;

fn config() -> Config {
    test_support::fuzz_config()
}

fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,24}",
        1 => "[\\x00-\\x1f\\x7f ]{0,6}",
        3 => "[0-9.v -]{0,30}",
        2 => "[{}\\[\\]\":,\\\\0-9a-z .eE+-]{0,40}",
        1 => "[é€\u{1d11e}\u{200b}\u{0}]{0,8}",
        1 => (any::<char>(), 100usize..400).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// `find_in` takes any text; a version after digit-free text is found exactly.
    #[test]
    fn version_finder_never_panics(
        text in nasty(),
        prefix in "[a-zA-Z é(-]{0,12}",
        v in (any::<u64>(), any::<u64>(), any::<u64>()),
        suffix in "([ -][a-z0-9.]{0,8})?",
    ) {
        let _ = Version::find_in(&text);
        let line = format!("{prefix}{}.{}.{}{suffix}", v.0, v.1, v.2);
        prop_assert_eq!(Version::find_in(&line), Some(Version::new(v.0, v.1, v.2)));
    }

    /// `parse_json_line` agrees with serde_json, and its error carries only the line number.
    #[test]
    fn json_line_parser_never_panics(line in nasty(), n in any::<usize>()) {
        match parse_json_line(&line, n) {
            Ok(v) => prop_assert_eq!(Some(v), serde_json::from_str::<serde_json::Value>(&line).ok()),
            Err(e) => {
                prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_err());
                let right = matches!(e, ProcessError::MalformedJson { line } if line == n);
                prop_assert!(right);
                let shown = e.to_string();
                prop_assert!(line.trim().len() < 6 || !shown.contains(line.trim()), "{shown}");
            }
        }
    }
}
