//! The driver test kit (feature `testing`): one fuzz that every [`Translator`] runs, and the
//! replay of recorded CLI transcripts against blessed goldens; one typed fake CLI for every
//! dialect ([`FakeCli`]) and one conformance factory over it ([`FakeCliFactory`]); the one
//! check that a model key the driver knows reaches no event, output or log
//! ([`assert_canary_hidden`]); and the measuring part of every driver's `turns` bench
//! ([`thread_of_turns`]).
//!
//! Translators are private to their driver crates, so both are called from a `#[cfg(test)]`
//! module inside the crate:
//!
//! ```ignore
//! // The fuzz: well-formed streams, no trace of a malformed event, any line taken.
//! driver_cli::fuzz_translator!(translator(), WORDS, KEYS);
//!
//! #[test]
//! fn transcripts() {
//!     driver_cli::testing::replay_dir(fixtures, |request| {
//!         options.translator(request, request.redactor())
//!     });
//! }
//! ```

use std::fmt::Write as _;
use std::path::Path;

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{DriverEvent, FailureKind, ProfilePayload, Request, check_sequence};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use run_service::{McpServer, RunId};
use serde_json::Value;

use crate::{Tracked, Translator};

mod canary;
mod fake;
mod turns;

pub use canary::{
    CANARY, assert_canary_hidden, assert_canary_hidden_in_approvals, canary_request, canary_secret,
};
pub use fake::FakeCli;
pub use turns::{TurnsRow, run_turns_bench, thread_of_turns};

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
        matches!(e, DriverEvent::TextDelta { delta } | DriverEvent::ToolCallArguments { delta, .. }
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
                events in $crate::testing::events($words, $keys),
            ) {
                $crate::testing::check_stream($make, &events)?;
            }

            #[test]
            fn malformed_events_leave_no_trace(
                events in $crate::testing::events($words, $keys),
            ) {
                $crate::testing::check_no_trace(|| $make, &events)?;
            }

            #[test]
            fn translator_takes_any_line(line in $crate::testing::any_line($words, $keys)) {
                $crate::testing::take_line($make, &line);
            }
        }
    };
}

/// Runs `request` on `driver` and returns the result with every event the run emitted: the
/// start of most driver tests.
pub async fn run(
    driver: &dyn driver_spi::Driver,
    request: Request,
) -> (
    Result<driver_spi::Response, driver_spi::DriverError>,
    Vec<DriverEvent>,
) {
    let sink = std::sync::Arc::new(driver_spi::CollectingSink::new());
    let result = driver.run(request, sink.clone()).await;
    (result, sink.take())
}

/// The failure class of a run's result: a failed run's, or a response's failure; `None` for a
/// success or an error that is not a failure (a refusal, a rejected resume).
pub fn failed_kind(
    result: &Result<driver_spi::Response, driver_spi::DriverError>,
) -> Option<FailureKind> {
    match result {
        Err(driver_spi::DriverError::Failed(f)) => Some(f.kind),
        Ok(r) => r.failure.as_ref().map(|f| f.kind),
        Err(_) => None,
    }
}

/// The checkpoint a host would store from `response`.
///
/// # Panics
/// When the response has none: the test expected a clean turn.
pub fn checkpoint(response: &driver_spi::Response) -> driver_spi::SessionState {
    response
        .persistable_checkpoint()
        .expect("a clean turn's checkpoint")
        .clone()
}

/// Drives `translator` over `events` as the driver does and returns it with every event it
/// produced: the start of most translator unit tests.
///
/// # Panics
/// When an event is malformed: the test's input must be well formed.
pub fn translate_all<T: Translator>(
    translator: T,
    events: &[Value],
) -> (Tracked<T>, Vec<DriverEvent>) {
    let mut translator = Tracked::new(translator);
    let mut out = Vec::new();
    for event in events {
        out.extend(translator.translate(event).expect("a well-formed event"));
    }
    (translator, out)
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

/// Replays one recorded transcript (JSONL, one CLI event per line) through `translator` and
/// renders what a host would learn: every event, then the translator's judgement.
///
/// # Panics
/// When a line is not JSON: a fixture must be a real transcript.
pub fn replay(translator: impl Translator, transcript: &str) -> String {
    let mut translator = Tracked::new(translator);
    let mut out = String::new();
    for (index, line) in transcript.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not JSON: {e}", index + 1));
        match translator.translate(&value) {
            Ok(events) => {
                for event in events {
                    let _ = writeln!(out, "{}", render(&event));
                }
            }
            Err(_) => {
                let _ = writeln!(out, "malformed line {}", index + 1);
            }
        }
    }
    for event in translator.close_open_calls() {
        let _ = writeln!(out, "{} (closed at the end)", render(&event));
    }
    let _ = writeln!(out, "---");
    let _ = writeln!(out, "started: {}", translator.started());
    let _ = writeln!(out, "session: {}", translator.session_id().is_some());
    let _ = writeln!(out, "succeeded: {}", translator.succeeded());
    if let Some(failure) = translator.reported_failure() {
        let _ = writeln!(out, "failure: {:?}: {}", failure.kind, failure.message);
    }
    if let Some(usage) = translator.usage() {
        let _ = writeln!(out, "usage: {usage:?}");
    }
    if let Some(servers) = translator.mcp_servers() {
        for server in servers {
            let _ = writeln!(out, "mcp server {}: {}", server.name, server.status);
        }
    }
    let _ = writeln!(out, "output: {:?}", translator.output());
    out
}

fn render(event: &DriverEvent) -> String {
    serde_json::to_string(event).unwrap_or_else(|_| format!("{event:?}"))
}

/// Replays every `*.jsonl` transcript in `dir` with a fresh translator that `translator`
/// builds for the request the transcripts were recorded with (the `agent-tools` MCP server
/// attached, as `tests/fixtures/README.md` describes), and compares each rendering with its
/// `*.events` golden beside it. With `BLESS=1` in the environment the goldens are written
/// instead.
///
/// # Panics
/// When `dir` holds no transcript, or a rendering differs from its golden (the message shows
/// both and the command that re-blesses).
pub fn replay_dir<T: Translator>(dir: &Path, mut translator: impl FnMut(&Request) -> T) {
    const REPLAY: Kind = Kind::new("driver-cli transcript replay 2026-12-02 v1");
    let fingerprint = Fingerprint::of(REPLAY, |e| e.str("replay"));
    let profile = ProfilePayload::new(fingerprint, fingerprint);
    let request = Request::new(RunId::new("replay"), "replay", profile).with_mcp([
        McpServer::streamable_http("agent-tools", "http://127.0.0.1:9/mcp"),
    ]);
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no transcript in {}", dir.display());
    let mut failures = Vec::new();
    for path in entries {
        let transcript = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let rendered = replay(translator(&request), &transcript);
        let golden = path.with_extension("events");
        if bless {
            std::fs::write(&golden, &rendered)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", golden.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected.replace("\r\n", "\n") != rendered {
            failures.push(format!(
                "{}:\n--- expected\n{expected}\n+++ replayed\n{rendered}",
                golden.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "replayed transcripts differ from their goldens (after review, re-bless with `cargo xtask transcripts bless`):\n{}",
        failures.join("\n")
    );
}

/// The one conformance factory for any [`CliDriver`](crate::CliDriver) over the scripted fake
/// CLI: drivers built from `options` with the fake as their binary, requests run in the
/// harness's workspace, and the materialization the kit inspects is the last invocation's
/// argv, its captured files and the recorded values of the kit's bearer variables.
#[derive(Debug)]
pub struct FakeCliFactory<D> {
    harness: fake_cli::Harness,
    options: D,
    before_run: fn(&fake_cli::Harness, &driver_spi::Request),
    tool_use: Option<ToolUse>,
    /// A tool use scripted for the next run: its prompt is rewritten to [`TOOL_USE_PROMPT`].
    scripted: std::sync::atomic::AtomicBool,
}

/// The process mode a real-binary scenario asks for: resident (default pool limits) or one
/// process per turn.
pub fn process_mode(resident: bool) -> crate::ProcessMode {
    if resident {
        crate::ProcessMode::Resident(driver_process::pool::PoolLimits::default())
    } else {
        crate::ProcessMode::PerTurn
    }
}

/// The permission-policy and approval clauses (POL, APR) the kit skips for a factory that
/// scripts no tool use (a per-turn fake, which cannot model its CLI's permission flags), to
/// name as accepted skips: all of them for a driver that declares approvals; POL-03 (a policy
/// that asks is refused) still runs for one that does not.
pub fn unscripted_policy_clauses(approvals: bool) -> Vec<driver_spi::conformance::Clause> {
    use driver_spi::conformance::Clause::*;
    let mut clauses = vec![Pol01, Pol02];
    if approvals {
        clauses.push(Pol03);
    }
    clauses.extend([Apr01, Apr02, Apr03, Apr04, Apr05, Apr06, Apr07]);
    clauses
}

/// The prompt a [`FakeCliFactory`] gives a run the kit scripted a tool use for (see
/// [`FakeCliFactory::with_tool_use`]): the fake's line rules match it.
pub const TOOL_USE_PROMPT: &str = "KIT-TOOL-USE";

/// How a fake serves the kit's tool uses.
#[derive(Debug)]
struct ToolUse {
    action: driver_spi::Action,
    served: std::path::PathBuf,
    allowed: &'static str,
}

impl<D: crate::CommonOptions + Clone> driver_spi::conformance::Factory for FakeCliFactory<D> {
    fn create(&self) -> std::sync::Arc<dyn driver_spi::Driver> {
        let options = self.options.clone().with_binary(fake_cli::binary_path());
        std::sync::Arc::new(crate::CliDriver::<D::Dialect>::new(
            self.harness.env.clone(),
            options,
        ))
    }

    fn prepare(&self, mut request: driver_spi::Request) -> driver_spi::Request {
        (self.before_run)(&self.harness, &request);
        if self
            .scripted
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            request.prompt = TOOL_USE_PROMPT.to_owned();
        }
        request.with_workspace(self.harness.workspace.to_string_lossy())
    }

    /// With [`with_tool_use`](FakeCliFactory::with_tool_use): the next run's prompt becomes
    /// [`TOOL_USE_PROMPT`], which the fake's line rules answer with a tool use of
    /// [`TOOL_ARGUMENTS`](driver_spi::conformance::TOOL_ARGUMENTS).
    fn script_tool_use(&self, _arguments: &str) -> Option<driver_spi::Action> {
        let tool_use = self.tool_use.as_ref()?;
        self.scripted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Some(tool_use.action)
    }

    /// The answers that let the fake's tool run: lines sent to the fakes that contain the
    /// factory's `allowed` marker.
    fn tools_run(&self) -> Option<usize> {
        let tool_use = self.tool_use.as_ref()?;
        let lines = fake_cli::read_served_lines(&tool_use.served).ok()?;
        Some(
            lines
                .iter()
                .filter(|l| l.contains(tool_use.allowed))
                .count(),
        )
    }

    /// In resident mode, how many fake processes the drivers started are still running (read
    /// from `/proc`, not from the pool); `None` with one process per turn.
    fn live_processes(&self) -> Option<u64> {
        let crate::ProcessMode::Resident(_) = self.options.cli().process_mode else {
            return None;
        };
        let live = self
            .harness
            .invocations()
            .iter()
            .filter(|call| fake_cli::is_running(call.pid))
            .count();
        Some(live as u64)
    }

    fn observed_materialization(&self) -> Option<secrecy::SecretString> {
        let call = self.harness.invocations().pop()?;
        let env: Vec<String> = call.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let files: Vec<&str> = call.files.values().map(|f| f.contents.as_str()).collect();
        Some(secrecy::SecretString::from(format!(
            "argv: {}\nfiles: {}\nenv: {}",
            call.argv.join(" "),
            files.join("\n"),
            env.join(" ")
        )))
    }
}

impl<D: crate::CommonOptions + Clone> FakeCliFactory<D> {
    /// A factory of drivers built from `options` over the fake of `harness`.
    pub fn new(harness: fake_cli::Harness, options: D) -> Self {
        Self {
            harness,
            options,
            before_run: |_, _| {},
            tool_use: None,
            scripted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Lets the kit script tool uses (the POL and APR clauses): a run the kit scripts one for
    /// gets the prompt [`TOOL_USE_PROMPT`], which the fake's line rules answer with a permission
    /// request of the CLI for a tool taking `action`; the fake records every line it is sent in
    /// `served` ([`Scenario::serve_record`](fake_cli::Scenario::serve_record)), and a line
    /// containing `allowed` is an answer that lets the tool run.
    pub fn with_tool_use(
        mut self,
        action: driver_spi::Action,
        served: impl Into<std::path::PathBuf>,
        allowed: &'static str,
    ) -> Self {
        self.tool_use = Some(ToolUse {
            action,
            served: served.into(),
            allowed,
        });
        self
    }

    /// A factory of drivers in resident mode ([`ProcessMode::Resident`](crate::ProcessMode),
    /// default pool limits), whose process clauses the kit then exercises for real.
    pub fn resident(harness: fake_cli::Harness, options: D) -> Self {
        let resident = crate::ProcessMode::Resident(driver_process::pool::PoolLimits::default());
        Self::new(harness, options.with_process_mode(resident))
    }

    /// Runs the kit, prints its report, and asserts that every clause passed.
    ///
    /// # Panics
    /// When a clause did not pass: this is the test.
    pub fn assert_kit_passes(&self) {
        let report = self.run_kit();
        println!("{report}");
        report.assert_passed();
    }

    /// Runs `before_run` on every request the kit is about to run, for state the real CLI
    /// would have left that the fake does not (Gemini's recording of a forked session).
    pub fn with_before_run(
        mut self,
        before_run: fn(&fake_cli::Harness, &driver_spi::Request),
    ) -> Self {
        self.before_run = before_run;
        self
    }

    /// Runs the driver kit on a two-worker runtime of its own and returns its report.
    ///
    /// # Panics
    /// When the runtime cannot be built: this is test support.
    pub fn run_kit(&self) -> driver_spi::conformance::Report {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a test runtime");
        runtime.block_on(driver_spi::conformance::run(self))
    }
}
