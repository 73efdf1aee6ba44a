//! Fuzz-style properties (issue 13): the session codecs, the event-sequence checker, the
//! serde decoders of the wire types and the redactor, fed adversarial input, never panic;
//! the codecs obey their round-trip law and the checker accepts every well-formed stream.
//!
//! 10,000 cases per target with a fixed seed, so a CI failure reproduces locally.

use std::collections::BTreeMap;

use driver_spi::reference::ReferenceCodec;
use driver_spi::{
    CodecError, DriverEvent, FailureKind, GuardedCodec, PlanEntry, PlanPriority, PlanStatus,
    Redactor, SessionCodec, SessionGuard, SessionParams, SessionState, check_sequence,
};
use proptest::prelude::*;
use proptest::test_runner::Config;
use run_service::EnvBinding;
use serde_json::{Value, json};

fn config() -> Config {
    test_support::fuzz_config()
}

/// Adversarial text: control characters, multi-byte characters, near-valid ids,
/// JSON-ish text and long runs.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,24}",
        2 => "[\\x00-\\x1f\\x7f ]{0,8}",
        3 => "[a-zA-Z0-9_-]{0,20}",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,40}",
        1 => "[é€\u{1d11e}\u{200b}\u{feff}\u{0}]{0,12}",
        1 => (any::<char>(), 100usize..400).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

fn data() -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = prop_oneof![
        Just(SessionGuard::PROFILE_KEY.to_owned()),
        Just(SessionGuard::WORKSPACE_KEY.to_owned()),
        nasty(),
    ];
    prop::collection::btree_map(key, nasty(), 0..3)
}

fn params() -> impl Strategy<Value = SessionParams> {
    (nasty(), nasty(), data()).prop_map(|(r, d, data)| SessionParams::new(r, d, data))
}

fn state() -> impl Strategy<Value = SessionState> {
    (nasty(), proptest::option::of(nasty()), data()).prop_map(|(r, d, data)| {
        let mut s = SessionState::new(r);
        if let Some(d) = d {
            s = s.with_display_id(d);
        }
        data.into_iter().fold(s, |s, (k, v)| s.with_data(k, v))
    })
}

/// A strict validator, as the CLI drivers use: one safe argv element.
fn safe_id(id: &str) -> Result<(), CodecError> {
    let ok = id.len() <= 128
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(CodecError::InvalidResumeId { len: id.len() })
    }
}

const STRICT: GuardedCodec = GuardedCodec::new("fuzz/strict", safe_id);
const LAX: GuardedCodec = GuardedCodec::new("fuzz/lax", |_| Ok(()));

/// The law every codec keeps, checked on one params value and one state value.
fn codec_law(
    codec: &dyn SessionCodec,
    p: &SessionParams,
    s: &SessionState,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(codec.from_params(None), Ok(None));
    prop_assert_eq!(codec.to_params(None), Ok(None));
    if let Ok(decoded) = codec.from_params(Some(p)) {
        let decoded = decoded.unwrap();
        prop_assert_eq!(&decoded.resume_id, &p.resume_id);
        prop_assert_eq!(&decoded.data, &p.data);
        let back = codec.to_params(Some(&decoded)).unwrap().unwrap();
        if p.display_id.trim().is_empty() {
            prop_assert_eq!(&back.display_id, &p.resume_id);
            prop_assert_eq!(&back.resume_id, &p.resume_id);
            prop_assert_eq!(&back.data, &p.data);
        } else {
            prop_assert_eq!(&back, p);
        }
        prop_assert_eq!(codec.guard_fingerprint(&back), codec.guard_fingerprint(p));
    }
    if let Ok(encoded) = codec.to_params(Some(s)) {
        let encoded = encoded.unwrap();
        prop_assert!(!encoded.display_id.trim().is_empty());
        let again = codec.from_params(Some(&encoded)).unwrap().unwrap();
        prop_assert_eq!(codec.to_params(Some(&again)).unwrap().unwrap(), encoded);
    } else {
        prop_assert!(
            codec
                .from_params(Some(&SessionParams::new(
                    s.resume_id.clone(),
                    "",
                    BTreeMap::new()
                )))
                .is_err()
        );
    }
    // Only the guard keys reach the guard fingerprint.
    let mut other = p.clone();
    other
        .data
        .retain(|k, _| codec.guard_keys().contains(&k.as_str()));
    prop_assert_eq!(codec.guard_fingerprint(&other), codec.guard_fingerprint(p));
    Ok(())
}

fn call_id() -> impl Strategy<Value = String> {
    prop_oneof![4 => "[a-c]", 1 => Just(String::new()), 1 => "\\PC{2,6}"]
}

/// Short text, sometimes empty: the checker looks only at emptiness and equality.
fn short() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 3 => "[a-z\u{e9}]{1,3}"]
}

/// Any event at all, including malformed ones (empty deltas, unknown call ids).
fn any_event() -> impl Strategy<Value = DriverEvent> {
    prop_oneof![
        2 => Just(DriverEvent::RunStarted),
        2 => Just(DriverEvent::RunFinished),
        1 => Just(DriverEvent::RunFailed { kind: FailureKind::ModelProvider }),
        3 => short().prop_map(DriverEvent::text),
        2 => short().prop_map(DriverEvent::reasoning),
        1 => prop::collection::vec(short(), 0..3).prop_map(|c| DriverEvent::plan(
            c.into_iter()
                .map(|c| PlanEntry::new(c, PlanStatus::InProgress, PlanPriority::Low))
                .collect::<Vec<_>>(),
        )),
        3 => (call_id(), short()).prop_map(|(c, n)| DriverEvent::tool_call_started(c, n)),
        3 => (call_id(), short()).prop_map(|(c, d)| DriverEvent::tool_call_arguments(c, d)),
        3 => (call_id(), short(), any::<bool>()).prop_map(|(c, o, e)| DriverEvent::tool_call_result(c, o, e)),
    ]
}

/// A well-formed stream: start, interleaved text and tool calls with unique ids, every call
/// closed, one terminal event.
fn good_stream() -> impl Strategy<Value = Vec<DriverEvent>> {
    let step = prop_oneof![
        "\\PC{1,8}".prop_map(|t| vec![DriverEvent::text(t)]),
        "\\PC{1,8}".prop_map(|t| vec![DriverEvent::reasoning(t)]),
        prop::collection::vec("\\PC{0,8}", 0..3).prop_map(|c| vec![DriverEvent::plan(
            c.into_iter()
                .map(|c| PlanEntry::new(c, PlanStatus::Pending, PlanPriority::Medium))
                .collect::<Vec<_>>(),
        )]),
        (
            "\\PC{0,8}",
            prop::collection::vec("\\PC{1,6}", 0..3),
            "\\PC{0,8}",
            any::<bool>()
        )
            .prop_map(|(name, args, out, err)| {
                let mut v = vec![DriverEvent::tool_call_started("", name)];
                v.extend(
                    args.into_iter()
                        .map(|a| DriverEvent::tool_call_arguments("", a)),
                );
                v.push(DriverEvent::tool_call_result("", out, err));
                v
            }),
    ];
    (prop::collection::vec(step, 0..6), any::<bool>()).prop_map(|(steps, ok)| {
        let mut out = vec![DriverEvent::RunStarted];
        for (n, step) in steps.into_iter().enumerate() {
            for mut e in step {
                if let DriverEvent::ToolCallStarted { call_id, .. }
                | DriverEvent::ToolCallArguments { call_id, .. }
                | DriverEvent::ToolCallResult { call_id, .. } = &mut e
                {
                    *call_id = format!("call-{n}");
                }
                out.push(e);
            }
        }
        out.push(if ok {
            DriverEvent::RunFinished
        } else {
            DriverEvent::RunFailed {
                kind: FailureKind::Timeout,
            }
        });
        out
    })
}

/// JSON shaped like the wire types, with the right and wrong field names and value types.
fn wireish() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        nasty().prop_map(Value::from),
        prop_oneof![
            Just("run_started"),
            Just("run_finished"),
            Just("run_failed"),
            Just("text_delta"),
            Just("reasoning_delta"),
            Just("plan"),
            Just("tool_call_started"),
            Just("tool_call_arguments"),
            Just("tool_call_result"),
            Just("provider"),
            Just("timeout"),
        ]
        .prop_map(Value::from),
    ];
    let key = prop_oneof![
        Just("type"),
        Just("delta"),
        Just("entries"),
        Just("content"),
        Just("status"),
        Just("priority"),
        Just("call_id"),
        Just("name"),
        Just("output"),
        Just("is_error"),
        Just("kind"),
        Just("resume_id"),
        Just("display_id"),
        Just("data"),
        Just("x"),
    ]
    .prop_map(str::to_owned);
    leaf.prop_recursive(2, 16, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    /// Every codec (reference, strict, lax) keeps the round-trip law on any input.
    #[test]
    fn session_codecs_keep_the_round_trip_law(p in params(), s in state()) {
        codec_law(&ReferenceCodec, &p, &s)?;
        codec_law(&STRICT, &p, &s)?;
        codec_law(&LAX, &p, &s)?;
        let blank = p.resume_id.trim().is_empty();
        prop_assert_eq!(LAX.from_params(Some(&p)).is_err(), blank);
        if blank {
            prop_assert_eq!(STRICT.from_params(Some(&p)), Err(CodecError::MissingResumeId));
        }
    }

    /// The checker takes any sequence; when it accepts, the stream has the documented shape.
    #[test]
    fn check_sequence_never_panics(events in prop::collection::vec(any_event(), 0..10)) {
        if check_sequence(&events).is_ok() {
            prop_assert_eq!(events.first(), Some(&DriverEvent::RunStarted));
            prop_assert!(events.last().unwrap().is_terminal());
            prop_assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
            let empty = events.iter().any(|e| matches!(e,
                DriverEvent::TextDelta { delta }
                | DriverEvent::ReasoningDelta { delta }
                | DriverEvent::ToolCallArguments { delta, .. } if delta.is_empty()));
            prop_assert!(!empty);
        }
    }

    /// Every well-formed stream is accepted, and dropping its start or end is refused.
    #[test]
    fn check_sequence_accepts_well_formed_streams(events in good_stream()) {
        prop_assert_eq!(check_sequence(&events), Ok(()));
        prop_assert!(check_sequence(&events[1..]).is_err());
        prop_assert!(check_sequence(&events[..events.len() - 1]).is_err());
    }

    /// The serde decoders of the wire types take any JSON; what they accept re-encodes to
    /// a value that decodes to the same thing.
    #[test]
    fn wire_decoders_never_panic(v in wireish(), text in "[{}\\[\\]\":,a-z_ 0-9]{0,48}") {
        if let Ok(e) = serde_json::from_value::<DriverEvent>(v.clone()) {
            let again: DriverEvent = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
            prop_assert_eq!(again, e);
        }
        if let Ok(p) = serde_json::from_value::<SessionParams>(v.clone()) {
            let again: SessionParams = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
            prop_assert_eq!(again, p);
        }
        if let Ok(s) = serde_json::from_value::<SessionState>(v) {
            let again: SessionState = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
            prop_assert_eq!(again, s);
        }
        let _ = serde_json::from_str::<DriverEvent>(&text);
        let _ = serde_json::from_str::<SessionState>(&text);
        let _ = serde_json::from_value::<DriverEvent>(json!({"type": text}));
    }

    /// The driver redactor takes any text and removes a bound secret wherever it sits.
    #[test]
    fn redactor_never_panics(
        text in nasty(),
        secret in "[a-z0-9]{4,16}",
        at in any::<prop::sample::Index>(),
    ) {
        let mut cut = at.index(text.len() + 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let with = format!("{}{secret}{}", &text[..cut], &text[cut..]);
        let r = Redactor::from_iter(([&EnvBinding::new("FUZZ_TOKEN", secret.clone())]).into_iter().map(|b| b.value().clone()));
        let out = r.redact(&with);
        prop_assert!(!out.contains(&secret), "{secret:?} survived in {out:?}");
        let _ = Redactor::default().redact(&text);
    }
}
