//! The canary check every dialect runs: a model key the driver knows (a namespace secret, a
//! key option), echoed by the scripted model in its text, a tool's arguments and a tool's
//! result, must reach no event, no response and no log line.
//!
//! The key, [`CANARY`], is shaped like no credential, so the token patterns cannot hide it:
//! only a turn redactor that knows every secret of the turn can. Each dialect's test scripts
//! its own CLI's event lines around it; [`assert_canary_hidden`] is the one check.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use driver_spi::{Driver, DriverEvent, Request, Response};
use secrecy::SecretString;

/// The canary model key: opaque, not shaped like any token the patterns know.
pub const CANARY: &str = "opaque-canary-7f3k2q";

/// `(name, CANARY)`: a namespace secret carrying the canary under `name` (for
/// [`FakeCli::with_secrets`](crate::FakeCli::with_secrets)).
pub fn canary_secret(name: &str) -> (&str, SecretString) {
    (name, SecretString::from(CANARY))
}

/// The request of a canary turn ("say the key") in `workspace`, with a fixed profile.
///
/// # Panics
/// When `workspace` is not UTF-8.
#[allow(
    clippy::expect_used,
    reason = "a test kit: its workspaces are temporary UTF-8 paths"
)]
pub fn canary_request(workspace: &std::path::Path) -> Request {
    let kind = compat_fingerprint::Kind::new("driver-cli canary check v1");
    let profile = driver_spi::ProfilePayload::new(
        compat_fingerprint::Fingerprint::of(kind, |e| e.str("exact")),
        compat_fingerprint::Fingerprint::of(kind, |e| e.str("session")),
    );
    Request::new(run_service::RunId::new("canary"), "say the key", profile)
        .with_workspace(workspace.to_str().expect("a UTF-8 workspace"))
}

/// [`assert_canary_hidden`] for a canary turn in `workspace` whose policy asks before
/// commands and whose host approves everything: also asserts that the approval request was
/// asked with its arguments redacted (a resident protocol's approval carries the model's
/// command, canary included). Returns the events.
///
/// # Panics
/// As [`assert_canary_hidden`], and when no approval request with redacted arguments came.
pub fn assert_canary_hidden_in_approvals(
    driver: &dyn Driver,
    workspace: &std::path::Path,
) -> Vec<DriverEvent> {
    use driver_spi::{Action, Approvals, PermissionPolicy};
    let request = canary_request(workspace)
        .with_permissions(PermissionPolicy::default().ask(Action::Commands))
        .with_approvals(Approvals::approve_all());
    let (_, events) = assert_canary_hidden(driver, request);
    assert!(
        events.iter().any(|e| matches!(
            e,
            DriverEvent::ApprovalRequested { arguments, .. }
                if arguments.contains(runtime_env::REDACTED)
        )),
        "the approval request was asked, its arguments redacted: {events:?}"
    );
    events
}

/// Runs `request` on `driver` (then closes its resident processes) and asserts that
/// [`CANARY`] shows nowhere: in no event, not in the result (output, failure, structured
/// output, checkpoint), not in any line logged meanwhile through `tracing`, at any level. Also
/// asserts that the check is not vacuous: the turn is clean, and the scripted model did echo
/// the canary, since the answer, a tool call's arguments and a tool call's result each show
/// [`REDACTED`](runtime_env::REDACTED) where it was. Returns the response and the events, for
/// the dialect's own checks.
///
/// The turn runs on a current-thread runtime of its own, on a thread of its own, whose
/// `tracing` default keeps every line: the driver's tasks all run there, and no global
/// subscriber is set, so the check coexists with other tests' captures. (The threads the
/// process layer starts, the reaper and the approval timer, log process ids only.) Call it
/// from a plain `#[test]`.
///
/// # Panics
/// When the canary shows, the turn is not clean, or the model's echo was not seen redacted in
/// each place.
pub fn assert_canary_hidden(driver: &dyn Driver, request: Request) -> (Response, Vec<DriverEvent>) {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&logs);
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || Capture(Arc::clone(&sink)))
        .finish();
    // A line of the check itself: seen in the capture, it proves the logs are read.
    let probe = format!("canary check of run {}", request.run_id.as_str());
    let (result, events) = std::thread::scope(|scope| {
        let turn = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a test runtime");
            tracing::subscriber::with_default(subscriber, || {
                tracing::trace!("{probe}");
                runtime.block_on(async {
                    let ran = crate::run(driver, request).await;
                    if let Some(lifecycle) = driver.process_lifecycle() {
                        let _ = lifecycle.close_processes().await;
                    }
                    ran
                })
            })
        });
        turn.join().expect("the canary turn panicked")
    });
    let logged =
        String::from_utf8_lossy(&logs.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    assert!(logged.contains(&probe), "the canary check read no log line");
    let seen = [
        ("events", format!("{events:?}")),
        (
            "events as JSON",
            serde_json::to_string(&events).unwrap_or_default(),
        ),
        ("result", format!("{result:?}")),
        ("logs", logged),
    ];
    for (place, text) in &seen {
        assert!(
            !text.contains(CANARY),
            "the canary key shows in the {place}"
        );
    }
    let response = match result {
        Ok(response) if response.failure.is_none() => response,
        other => panic!("the canary turn is not clean: {other:?}"),
    };
    let redacted = |text: &str| text.contains(runtime_env::REDACTED);
    let echoed = [
        (
            "answer",
            events
                .iter()
                .any(|e| matches!(e, DriverEvent::TextDelta { delta } if redacted(delta))),
        ),
        (
            "tool arguments",
            events.iter().any(
                |e| matches!(e, DriverEvent::ToolCallArguments { delta, .. } if redacted(delta)),
            ),
        ),
        (
            "tool result",
            events.iter().any(
                |e| matches!(e, DriverEvent::ToolCallResult { output, .. } if redacted(output)),
            ),
        ),
        ("output", redacted(&response.output)),
    ];
    for (place, seen) in echoed {
        assert!(
            seen,
            "the script's echo of the canary in the {place} was not seen redacted: {events:?}"
        );
    }
    (response, events)
}

/// A writer into the shared log buffer.
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
