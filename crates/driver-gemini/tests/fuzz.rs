//! Fuzz-style properties: the stream-json event translator and the session codec, fed
//! adversarial input, never panic; every translated stream is well formed.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use driver_gemini::{EventTranslator, GEMINI_CODEC, ToolNames};
use driver_spi::{DriverEvent, FailureKind, Redactor, SessionCodec, SessionParams, check_sequence};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;

fn config() -> Config {
    test_support::fuzz_config()
}

/// Adversarial text, shared with the other translators' fuzz tests.
fn nasty() -> impl Strategy<Value = String> {
    test_support::nasty_text()
}

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

/// JSON values shaped like Gemini events: known keys and words, nested a little, with wrong
/// types and adversarial strings mixed in.
fn eventish() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        2 => prop_oneof![any::<i64>(), 0i64..3].prop_map(Value::from),
        1 => any::<f64>().prop_map(Value::from),
        2 => nasty().prop_map(Value::from),
        5 => prop::sample::select(WORDS).prop_map(Value::from),
    ];
    let key = prop_oneof![5 => prop::sample::select(KEYS).prop_map(str::to_owned), 1 => nasty()];
    let value = leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            3 => prop::collection::btree_map(key.clone(), inner, 0..7)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (prop::sample::select(WORDS), value).prop_map(|(kind, v)| match v {
        Value::Object(mut m) => {
            m.entry("type").or_insert_with(|| Value::from(kind));
            Value::Object(m)
        }
        other => other,
    })
}

fn translator() -> EventTranslator {
    EventTranslator::new(
        Redactor::default(),
        ToolNames::new(["agent-tools", "agent"]),
    )
}

/// Runs `events` through one translator as the driver does: stop at the first malformed
/// event; then close open calls and end the run (`RunFinished`, or `RunFailed` after a
/// malformed event when the translator says the run started).
fn drive(events: &[Value]) -> (bool, Vec<DriverEvent>) {
    let mut t = translator();
    let mut out = Vec::new();
    let mut malformed = false;
    for e in events {
        match t.translate(e) {
            Ok(batch) => out.extend(batch),
            Err(_) => {
                malformed = true;
                break;
            }
        }
    }
    if t.started() {
        out.extend(t.close_open_calls());
        assert!(t.close_open_calls().is_empty());
        out.push(if malformed {
            DriverEvent::RunFailed {
                kind: FailureKind::Protocol,
            }
        } else {
            DriverEvent::RunFinished
        });
    } else {
        assert!(out.is_empty(), "events before the run started: {out:?}");
    }
    (malformed, out)
}

fn no_empty_delta(out: &[DriverEvent]) -> bool {
    !out.iter().any(|e| matches!(e,
        DriverEvent::TextDelta { delta } | DriverEvent::ToolCallArguments { delta, .. } if delta.is_empty()))
}

proptest! {
    #![proptest_config(config())]

    /// Any sequence of event-shaped values: no panic, no empty delta, and the driven stream
    /// (complete or cut short by a malformed event) passes the sequence checker.
    #[test]
    fn translator_streams_are_well_formed(events in prop::collection::vec(eventish(), 0..6)) {
        let (_, out) = drive(&events);
        prop_assert!(no_empty_delta(&out), "{out:?}");
        if !out.is_empty() {
            prop_assert_eq!(check_sequence(&out), Ok(()), "{:?} from {:?}", out, events);
        }
    }

    /// A malformed event changes nothing: the translator answers later events as if it had
    /// never seen it.
    #[test]
    fn malformed_events_leave_no_trace(events in prop::collection::vec(eventish(), 0..6)) {
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
        prop_assert_eq!(with.result(), without.result());
    }

    /// Arbitrary text parsed as a JSONL line (the driver's own parser), then translated.
    #[test]
    fn translator_takes_any_line(line in prop_oneof![
        nasty(),
        eventish().prop_map(|v| v.to_string()),
        (eventish(), 0usize..40).prop_map(|(v, cut)| {
            let s = v.to_string();
            let mut cut = cut.min(s.len());
            while !s.is_char_boundary(cut) { cut -= 1; }
            s[..cut].to_owned()
        }),
    ]) {
        let mut t = translator();
        if let Ok(v) = driver_cli::parse_json_line(&line, 1) {
            let _ = t.translate(&v);
            let _ = t.close_open_calls();
        }
    }

    /// The session codec keeps its round-trip law and accepts only safe argv ids.
    #[test]
    fn codec_never_panics(resume in nasty(), display in nasty(), value in nasty()) {
        let data = BTreeMap::from([("guard.workspace".to_owned(), value)]);
        let p = SessionParams::new(resume.clone(), display.clone(), data);
        match GEMINI_CODEC.from_params(Some(&p)) {
            Ok(state) => {
                prop_assert!(driver_cli::is_safe_id(&resume));
                let back = GEMINI_CODEC.to_params(state.as_ref()).unwrap().unwrap();
                prop_assert_eq!(&back.resume_id, &p.resume_id);
                prop_assert_eq!(&back.data, &p.data);
                if !display.trim().is_empty() {
                    prop_assert_eq!(&back, &p);
                }
            }
            Err(_) => prop_assert!(!driver_cli::is_safe_id(&resume)),
        }
        let _ = GEMINI_CODEC.guard_fingerprint(&p);
    }

    /// Tool names never panic and only MCP names of declared servers change.
    #[test]
    fn tool_names_never_panic(wire in prop_oneof![nasty(), "mcp_[a-z_-]{0,12}_[a-z]{0,6}"]) {
        let reported = ToolNames::new(["agent-tools", "agent", "a_b"]).report(&wire);
        if !wire.starts_with("mcp_") {
            prop_assert_eq!(reported, wire);
        }
    }
}
