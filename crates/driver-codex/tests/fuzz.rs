//! Fuzz-style properties (issue 13): the `codex exec --json` event translator and the session
//! codec, fed adversarial input, never panic; every translated stream is well formed.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use driver_codex::{CODEX_CODEC, EventTranslator};
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
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "error",
    "item.started",
    "item.updated",
    "item.completed",
    "agent_message",
    "mcp_tool_call",
    "command_execution",
    "failed",
    "completed",
    "in_progress",
    "text",
    "item_0",
    "item_1",
    "",
];

const KEYS: &[&str] = &[
    "type",
    "thread_id",
    "usage",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "error",
    "message",
    "item",
    "id",
    "text",
    "server",
    "tool",
    "arguments",
    "status",
    "result",
    "content",
    "structured_content",
    "command",
    "aggregated_output",
    "exit_code",
];

/// JSON values shaped like Codex events: known keys and words, nested a little, with
/// wrong types and adversarial strings mixed in.
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

/// Runs `events` through one translator as the driver does: stop at the first malformed
/// event; then close open calls and end the run (`RunFinished`, or `RunFailed` after a
/// malformed event when the translator says the run started).
fn drive(events: &[Value]) -> (bool, Vec<DriverEvent>) {
    let mut t = EventTranslator::new(Redactor::default());
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

    /// Any sequence of well-formed (as far as the translator is concerned) event-shaped
    /// values: no panic, no empty delta, and the driven stream passes the sequence checker.
    #[test]
    fn translator_streams_are_well_formed(events in prop::collection::vec(eventish(), 0..6)) {
        let (malformed, out) = drive(&events);
        prop_assert!(no_empty_delta(&out), "{out:?}");
        if !malformed && !out.is_empty() {
            prop_assert_eq!(check_sequence(&out), Ok(()), "{:?} from {:?}", out, events);
        }
    }

    /// The same, including runs cut short by a malformed event.
    #[test]
    fn translator_streams_cut_short_are_well_formed(events in prop::collection::vec(eventish(), 0..6)) {
        let (_, out) = drive(&events);
        if !out.is_empty() {
            prop_assert_eq!(check_sequence(&out), Ok(()), "{:?} from {:?}", out, events);
        }
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
        let mut t = EventTranslator::new(Redactor::default());
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
        match CODEX_CODEC.from_params(Some(&p)) {
            Ok(state) => {
                prop_assert!(driver_cli::is_safe_id(&resume));
                let back = CODEX_CODEC.to_params(state.as_ref()).unwrap().unwrap();
                prop_assert_eq!(&back.resume_id, &p.resume_id);
                prop_assert_eq!(&back.data, &p.data);
                if !display.trim().is_empty() {
                    prop_assert_eq!(&back, &p);
                }
            }
            Err(_) => prop_assert!(!driver_cli::is_safe_id(&resume)),
        }
        let _ = CODEX_CODEC.guard_fingerprint(&p);
    }
}

/// The shrunk counterexample of `translator_streams_cut_short_are_well_formed`: the first
/// event is an `item.started` whose item is not an object with a string `id` and `type`.
/// `translate` pushes `RunStarted` into its local batch, sets `started`, then returns
/// `MalformedEvent` and the batch is dropped (`events.rs`, the `item.*` arm: `self.start`
/// runs before `self.item(..)?`).
#[test]
fn malformed_first_item_does_not_start_the_run_silently() {
    let mut t = EventTranslator::new(Redactor::default());
    let result = t.translate(&serde_json::json!({"type": "item.started", "item": null}));
    assert!(result.is_err());
    assert!(
        !t.started(),
        "started() is true but no RunStarted was returned"
    );
}

/// An item with an empty id opens a tool call with an empty call id, which the sequence
/// checker refuses (`BadToolCallId`); the stream-json translator skips such blocks.
#[test]
fn empty_item_id_opens_no_tool_call() {
    let (_, out) = drive(&[serde_json::json!({
        "type": "item.started",
        "item": {"id": "", "type": "command_execution", "command": "ls"}
    })]);
    assert_eq!(check_sequence(&out), Ok(()), "{out:?}");
}
