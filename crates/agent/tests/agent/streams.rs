//! Streamed text as a host sees it: a secret in any form the redactor knows, in text split
//! into random deltas with tool calls interleaved at random, never survives the joined deltas,
//! which equal `RunResult::output` (issue 24, finding 5).

use std::sync::Arc;

use agent::ThreadEventKind;
use driver_spi::DriverEvent;
use driver_spi::reference::{Behavior, ReferenceBackend};
use redaction::Redactor;
use secrecy::SecretString;
use thread_store::memory::MemoryStore;

use test_support::host::{ProviderSpec, RotatingProvider, host};

/// SplitMix64: seeded randomness (the agent's tests take no proptest dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// `secret` literally, percent-encoded (either hex case, `+` for a space) or JSON-escaped
/// (`\"`, `\/`, `\uXXXX`), each character's escape chosen by `rng`.
fn encoded(secret: &str, rng: &mut Rng) -> String {
    let form = rng.below(3);
    let mut out = String::new();
    for c in secret.chars() {
        let mut buf = [0; 4];
        let bytes = c.encode_utf8(&mut buf).bytes();
        match (form, rng.below(3)) {
            (1, 0) if c == ' ' => out.push('+'),
            (1, 1) => bytes.for_each(|b| out.push_str(&format!("%{b:02X}"))),
            (1, _) => bytes.for_each(|b| out.push_str(&format!("%{b:02x}"))),
            (2, 0) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            (2, _) if matches!(c, '"' | '\\' | '/') => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` in pieces of 1 to 12 bytes (never through a character).
fn pieces(text: &str, rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = (1 + rng.below(12)).min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        out.push(piece.to_owned());
        rest = tail;
    }
    out
}

/// Runs with the secret (the provider's token, with a space, quotes, `/`, `%`, `+` and a
/// non-ASCII character) printed once or twice in random forms amid text and patterns, the text
/// cut into random deltas, and tool calls (start, arguments in pieces that show the secret
/// too, result) interleaved at random: the joined text deltas equal the redacted output, each
/// call's joined arguments are its arguments redacted whole, and no event shows the secret.
#[tokio::test]
async fn randomly_interleaved_tool_calls_never_let_a_streamed_secret_through() {
    let backend = ReferenceBackend::new();
    let mut spec = ProviderSpec::semantic(1);
    spec.token_prefix = "tok \"q\"/é%+".into();
    let provider = RotatingProvider::new(spec);
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
    );
    let prose = [
        "the ",
        "value ",
        "is ",
        ", ",
        ". ",
        "\n",
        "héllo ",
        "100% ",
        "a/b ",
        "x=1 ",
        "Authorization: Bearer abc.def\n",
        "\"token\": \"t-1\" ",
    ];
    for run in 0..300u32 {
        let mut rng = Rng(u64::from(run));
        let secret = provider.allocation(run).token;
        let redactor = Redactor::with_secrets([SecretString::from(secret.clone())]);
        let words =
            |rng: &mut Rng| -> String { (0..rng.below(6)).map(|_| rng.pick(&prose)).collect() };
        let mut text = words(&mut rng);
        text.push_str(&encoded(&secret, &mut rng));
        text.push_str(&words(&mut rng));
        if rng.below(2) == 0 {
            text.push_str(&encoded(&secret, &mut rng));
        }
        let mut events = vec![DriverEvent::RunStarted];
        let mut calls = Vec::new();
        for piece in pieces(&text, &mut rng) {
            events.push(DriverEvent::text(piece));
            if rng.below(4) == 0 {
                let call = format!("call-{}", calls.len());
                let arguments = format!(r#"{{"q":"{}"}}"#, encoded(&secret, &mut rng));
                events.push(DriverEvent::tool_call_started(&call, "lookup"));
                for piece in pieces(&arguments, &mut rng) {
                    events.push(DriverEvent::tool_call_arguments(&call, piece));
                }
                events.push(DriverEvent::tool_call_result(&call, "ok", false));
                calls.push((call, redactor.redact(&arguments).into_owned()));
            }
        }
        events.push(DriverEvent::RunFinished);
        backend.push_behavior(Behavior::Events(events));
        let result = agent.thread("t").run("go").await.unwrap();

        let mut joined = String::new();
        let mut arguments: Vec<(String, String)> = Vec::new();
        for event in &result.events {
            let json = serde_json::to_string(event).unwrap();
            assert!(!redactor.finds_secret(&json), "run {run}: {json}");
            match &event.kind {
                ThreadEventKind::TextDelta { delta } => joined.push_str(delta),
                ThreadEventKind::ToolCallArguments { call_id, delta } => {
                    match arguments.iter_mut().find(|(id, _)| id == call_id) {
                        Some((_, args)) => args.push_str(delta),
                        None => arguments.push((call_id.clone(), delta.clone())),
                    }
                }
                _ => {}
            }
        }
        assert!(
            redactor.finds_secret(&text),
            "run {run}: the secret was printed"
        );
        assert!(!redactor.finds_secret(&joined), "run {run}: {joined}");
        assert_eq!(joined, result.output, "run {run}: {text:?}");
        assert_eq!(joined, redactor.redact(&text), "run {run}");
        assert_eq!(arguments, calls, "run {run}");
    }
    agent.close().await;
}

/// An ACP runtime shows its thinking and its plan: the provider's token echoed in reasoning
/// deltas (split across pieces, text and a tool call in between) and in a plan entry is
/// redacted there as in the text, and neither reaches `RunResult::output`.
#[tokio::test]
async fn a_secret_echoed_in_reasoning_or_a_plan_is_redacted() {
    use agent::{PlanEntry, PlanPriority, PlanStatus, REDACTED};

    let backend = ReferenceBackend::new();
    let provider = RotatingProvider::new(ProviderSpec::semantic(1));
    let agent = host(
        Arc::new(MemoryStore::new()),
        &backend,
        std::slice::from_ref(&provider),
    );
    let secret = provider.allocation(0).token;
    let redactor = Redactor::with_secrets([SecretString::from(secret.clone())]);
    let (head, tail) = secret.split_at(secret.len() / 2);
    backend.push_behavior(Behavior::Events(vec![
        DriverEvent::RunStarted,
        DriverEvent::reasoning(format!("the key is {head}")),
        DriverEvent::text("checking"),
        DriverEvent::tool_call_started("c1", "lookup"),
        DriverEvent::tool_call_result("c1", "ok", false),
        DriverEvent::reasoning(format!("{tail}, I should not say it")),
        DriverEvent::plan(vec![
            PlanEntry::new(
                format!("call the API with {secret}"),
                PlanStatus::InProgress,
                PlanPriority::High,
            ),
            PlanEntry::new("answer", PlanStatus::Pending, PlanPriority::Medium),
        ]),
        DriverEvent::text(" done"),
        DriverEvent::RunFinished,
    ]));
    let result = agent.thread("t").run("go").await.unwrap();

    let mut reasoning = String::new();
    let mut plans = Vec::new();
    for event in &result.events {
        let json = serde_json::to_string(event).unwrap();
        assert!(!redactor.finds_secret(&json), "{json}");
        match &event.kind {
            ThreadEventKind::ReasoningDelta { delta } => reasoning.push_str(delta),
            ThreadEventKind::Plan { entries } => plans.push(entries.clone()),
            _ => {}
        }
    }
    assert_eq!(
        reasoning,
        format!("the key is {REDACTED}, I should not say it")
    );
    assert_eq!(
        plans,
        [vec![
            PlanEntry::new(
                format!("call the API with {REDACTED}"),
                PlanStatus::InProgress,
                PlanPriority::High,
            ),
            PlanEntry::new("answer", PlanStatus::Pending, PlanPriority::Medium),
        ]]
    );
    assert_eq!(result.output, "checking done");
    agent.close().await;
}
