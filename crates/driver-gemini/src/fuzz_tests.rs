//! Fuzz-style properties of the event translator, through the shared translator harness
//! ([`driver_cli::testing`]): fed adversarial input it never panics, every translated stream
//! is well formed, and a malformed event leaves no trace. (The session codec is
//! [`driver_cli::session_codec`], fuzzed once in driver-cli.)
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use driver_cli::Translator as _;
use driver_cli::testing::{check_stream, event, events, nasty_text, take_line};
use driver_spi::Redactor;
use proptest::prelude::*;

use crate::events::{EventTranslator, ToolNames};

const WORDS: &[&str] = &[
    "init",
    "message",
    "tool_use",
    "tool_result",
    "error",
    "result",
    "user",
    "assistant",
    "success",
    "warning",
    "mcp_agent-tools_ping",
    "mcp_agent-tools_",
    "read_file",
    "t1",
    "t2",
    "",
];

const KEYS: &[&str] = &[
    "type",
    "session_id",
    "model",
    "role",
    "content",
    "delta",
    "tool_name",
    "tool_id",
    "parameters",
    "status",
    "output",
    "error",
    "message",
    "severity",
    "stats",
    "input_tokens",
    "output_tokens",
    "cached",
];

fn translator() -> EventTranslator {
    EventTranslator::new(
        Redactor::default(),
        ToolNames::new(["agent-tools", "agent"]),
    )
}

proptest! {
    #![proptest_config(test_support::fuzz_config())]

    /// Any sequence of event-shaped values: no panic, no empty delta, nothing before
    /// `RunStarted`, and the driven stream (complete or cut short by a malformed event)
    /// passes the sequence checker.
    #[test]
    fn translator_streams_are_well_formed(events in events(WORDS, KEYS)) {
        check_stream(translator(), &events)?;
    }

    /// A malformed event changes nothing: the translator answers later events as if it had
    /// never seen it.
    #[test]
    fn malformed_events_leave_no_trace(events in events(WORDS, KEYS)) {
        let mut with = translator();
        let mut without = translator();
        for e in &events {
            let a = with.translate(e);
            if a.is_ok() {
                prop_assert_eq!(a, without.translate(e));
            }
        }
        prop_assert_eq!(with.started(), without.started());
        prop_assert_eq!(with.session_id(), without.session_id());
        prop_assert_eq!(with.output(), without.output());
        prop_assert_eq!(with.succeeded(), without.succeeded());
        prop_assert_eq!(with.reported_failure(), without.reported_failure());
        prop_assert_eq!(with.usage(), without.usage());
    }

    /// Arbitrary text parsed as a JSONL line (the driver's own parser), then translated.
    #[test]
    fn translator_takes_any_line(line in prop_oneof![
        nasty_text(),
        event(WORDS, KEYS).prop_map(|v| v.to_string()),
        (event(WORDS, KEYS), 0usize..40).prop_map(|(v, cut)| {
            let s = v.to_string();
            let mut cut = cut.min(s.len());
            while !s.is_char_boundary(cut) { cut -= 1; }
            s[..cut].to_owned()
        }),
    ]) {
        take_line(translator(), &line);
    }

    /// Tool names never panic and only MCP names of declared servers change.
    #[test]
    fn tool_names_never_panic(wire in prop_oneof![nasty_text(), "mcp_[a-z_-]{0,12}_[a-z]{0,6}"]) {
        let reported = ToolNames::new(["agent-tools", "agent", "a_b"]).report(&wire);
        if !wire.starts_with("mcp_") {
            prop_assert_eq!(reported, wire);
        }
    }
}
