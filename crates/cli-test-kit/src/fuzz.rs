//! The translator fuzz every dialect runs ([`fuzz_translator!`](crate::fuzz_translator)):
//! adversarial text and event-shaped values, and the rules every translator keeps on them (no
//! panic, no empty delta, nothing before `RunStarted`, no trace of a malformed event, a
//! well-formed stream).

use driver_cli::{Tracked, Translator};
use driver_spi::{DriverEvent, FailureKind, check_sequence};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

/// Text that breaks naive parsers: control characters, JSON punctuation, non-BMP and
/// zero-width characters, long runs.
pub fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,16}",
        1 => "[\\x00-\\x1f\\x7f ]{0,6}",
        3 => "[a-zA-Z0-9_$.{}-]{0,12}",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,32}",
        1 => "[é€\u{1d11e}\u{200b}\u{0}]{0,8}",
        1 => (any::<char>(), 60usize..300).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

/// Event-shaped JSON values: objects whose `type` (and other strings) are drawn mostly from
/// `words` and whose keys mostly from `keys`, nested up to four deep.
pub fn event(
    words: &'static [&'static str],
    keys: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        2 => nasty_text().prop_map(Value::from),
        5 => prop::sample::select(words).prop_map(Value::from),
    ];
    let key = prop_oneof![
        5 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => nasty_text(),
    ];
    let value = leaf.prop_recursive(4, 24, 6, move |inner| {
        prop_oneof![
            2 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            3 => prop::collection::btree_map(key.clone(), inner, 0..7)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (prop::sample::select(words), value).prop_map(|(kind, v)| match v {
        Value::Object(mut m) => {
            m.entry("type").or_insert_with(|| Value::from(kind));
            Value::Object(m)
        }
        other => other,
    })
}

/// Up to six events of [`event`].
pub fn events(
    words: &'static [&'static str],
    keys: &'static [&'static str],
) -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(event(words, keys), 0..6)
}

/// Drives `translator` over `events` as the driver does (stop at the first malformed event,
/// close open calls, end the run) and checks the rules every translator keeps: no panic, no
/// empty delta, nothing before `RunStarted`, a malformed event changes nothing, and a
/// finished stream passes [`check_sequence`].
///
/// # Errors
/// A [`TestCaseError`] naming the broken rule and the events.
pub fn check_stream(translator: impl Translator, events: &[Value]) -> Result<(), TestCaseError> {
    let mut translator = Tracked::new(translator);
    let mut out = Vec::new();
    let mut malformed = false;
    for event in events {
        let started = translator.started();
        let session = translator.session_id().map(str::to_owned);
        match translator.translate(event) {
            Ok(batch) => out.extend(batch),
            Err(_) => {
                prop_assert_eq!(
                    translator.started(),
                    started,
                    "a malformed event started the run"
                );
                if session.is_some() {
                    prop_assert_eq!(translator.session_id().map(str::to_owned), session);
                }
                malformed = true;
                break;
            }
        }
    }
    let empty = out.iter().any(|e| {
        matches!(e, DriverEvent::TextDelta { delta }
            | DriverEvent::ReasoningDelta { delta }
            | DriverEvent::ToolCallArguments { delta, .. }
            if delta.is_empty())
    });
    prop_assert!(!empty, "an empty delta: {:?}", out);
    if !translator.started() {
        prop_assert!(out.is_empty(), "events without RunStarted: {:?}", out);
        return Ok(());
    }
    if malformed {
        out.push(DriverEvent::RunFailed {
            kind: FailureKind::Protocol,
        });
    } else {
        out.extend(translator.close_open_calls());
        prop_assert!(translator.close_open_calls().is_empty());
        out.push(DriverEvent::RunFinished);
    }
    prop_assert_eq!(check_sequence(&out), Ok(()), "{:?} from {:?}", out, events);
    Ok(())
}

/// A JSONL line as a CLI might print it, or not: adversarial text, an event-shaped value
/// (from `words` and `keys`, as [`event`]), or one cut short at any character.
pub fn any_line(
    words: &'static [&'static str],
    keys: &'static [&'static str],
) -> impl Strategy<Value = String> {
    prop_oneof![
        nasty_text(),
        event(words, keys).prop_map(|v| v.to_string()),
        (event(words, keys), 0usize..40).prop_map(|(v, cut)| {
            let s = v.to_string();
            let mut cut = cut.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s[..cut].to_owned()
        }),
    ]
}

/// A malformed event changes nothing: a translator fed every event answers like one fed
/// only the events the first accepted, and both accept the same events the same way.
///
/// # Errors
/// The property's counterexample.
pub fn check_no_trace<T: Translator>(
    mut translator: impl FnMut() -> T,
    events: &[Value],
) -> Result<(), TestCaseError> {
    let (mut with, mut without) = (Tracked::new(translator()), Tracked::new(translator()));
    for event in events {
        let translated = with.translate(event);
        if translated.is_ok() {
            prop_assert_eq!(translated, without.translate(event));
        }
    }
    prop_assert_eq!(with.started(), without.started());
    prop_assert_eq!(with.session_id(), without.session_id());
    prop_assert_eq!(with.output(), without.output());
    prop_assert_eq!(with.succeeded(), without.succeeded());
    prop_assert_eq!(with.reported_failure(), without.reported_failure());
    prop_assert_eq!(with.usage(), without.usage());
    prop_assert_eq!(with.last_error(), without.last_error());
    prop_assert_eq!(with.checkpoint_data(), without.checkpoint_data());
    prop_assert_eq!(with.close_open_calls(), without.close_open_calls());
    Ok(())
}

/// The translator fuzz every dialect runs, from a `#[cfg(test)]` module of its own crate:
/// `fuzz_translator!(make, WORDS, KEYS)` declares three proptests over translators from the
/// expression `make` (evaluated afresh for each), event-shaped values built from the crate's
/// `WORDS` and `KEYS`, and adversarial text: [`check_stream`] (no panic, no empty delta,
/// nothing before `RunStarted`, a well-formed stream, also when cut short), [`check_no_trace`]
/// and [`take_line`] on [`any_line`]. The crate needs `proptest` and `test-support` as
/// dev-dependencies (the fixed-seed fuzz configuration).
#[macro_export]
macro_rules! fuzz_translator {
    ($make:expr, $words:expr, $keys:expr $(,)?) => {
        proptest::proptest! {
            #![proptest_config(test_support::fuzz_config())]

            #[test]
            fn translator_streams_are_well_formed(
                events in $crate::events($words, $keys),
            ) {
                $crate::check_stream($make, &events)?;
            }

            #[test]
            fn malformed_events_leave_no_trace(
                events in $crate::events($words, $keys),
            ) {
                $crate::check_no_trace(|| $make, &events)?;
            }

            #[test]
            fn translator_takes_any_line(line in $crate::any_line($words, $keys)) {
                $crate::take_line($make, &line);
            }
        }
    };
}

/// Parses `line` as the driver does and translates it: never a panic, whatever the text.
pub fn take_line(translator: impl Translator, line: &str) {
    let mut translator = Tracked::new(translator);
    if let Ok(value) = driver_process::lines::parse_json_line(line, 1) {
        let _ = translator.translate(&value);
        let _ = translator.close_open_calls();
        let _ = translator.output();
        let _ = translator.reported_failure();
    }
}
