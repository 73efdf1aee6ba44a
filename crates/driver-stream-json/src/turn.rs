//! One stream-json turn: spawn the CLI, forward its translated events, stop it early when a
//! required MCP server did not connect, and wait for it.

use compat_fingerprint::{Fingerprint, Kind};
use driver_cli::{CliCommand, CliError, CliProcess, Finished, Limits};
use driver_spi::{DriverError, DriverEvent, EventSink, FailureKind, RunFailure};
use runtime_env::RuntimeEnv;

use crate::events::StreamTranslator;

const SERVER_NAME: Kind = Kind::new("agent-sdk 2026-11-30 driver-stream-json mcp-server-name v1");

/// A turn whose output ended normally: the translator's state and how the process exited.
/// Judging it (clean, failed, session unknown) is the driver's business: the CLIs differ.
#[derive(Debug)]
#[non_exhaustive]
pub struct TurnOutput {
    /// Everything the events said.
    pub translator: StreamTranslator,
    /// How the process ended, with its redacted stderr tail.
    pub finished: Finished,
}

/// Runs one turn: spawns `command` in `env`, translates every stdout event and emits it to
/// `sink`, and waits for the process.
///
/// When `system/init` arrives, every server named in `required` must be listed with status
/// `connected`; otherwise the process group is ended at once, before the model can work
/// without those tools, and the turn fails with [`FailureKind::McpUnavailable`] (the message
/// names the server by a short digest, never by name).
///
/// # Errors
/// [`DriverError::Failed`] for a spawn failure, a broken or over-long line, a timeout or an
/// unavailable required server. When `RunStarted` was already emitted, a `RunFailed` with
/// the same kind is emitted first. The process is always ended before this returns.
pub async fn run_turn(
    env: &RuntimeEnv,
    command: CliCommand,
    limits: Limits,
    mut translator: StreamTranslator,
    required: &[&str],
    sink: &dyn EventSink,
) -> Result<TurnOutput, DriverError> {
    let mut process =
        CliProcess::spawn(env, command, limits).map_err(CliError::into_driver_error)?;
    let mut checked_init = false;
    let stopped = loop {
        let value = match process.next_json().await {
            Ok(Some(value)) => value,
            Ok(None) => break None,
            Err(err) => break Some(err.to_run_failure(None)),
        };
        let events = match translator.translate(&value) {
            Ok(events) => events,
            Err(_) => {
                let line = process.line_number();
                break Some(CliError::MalformedJson { line }.to_run_failure(None));
            }
        };
        for event in events {
            sink.emit(event);
        }
        if !checked_init && let Some(servers) = translator.mcp_servers() {
            checked_init = true;
            let missing = required.iter().find(|name| {
                !servers
                    .iter()
                    .any(|s| s.name == **name && s.status == "connected")
            });
            if let Some(name) = missing {
                let digest = Fingerprint::of(SERVER_NAME, |e| e.str(name)).short();
                break Some(RunFailure::new(
                    FailureKind::McpUnavailable,
                    format!("required MCP server {digest} did not connect"),
                ));
            }
        }
    };
    match stopped {
        None => {
            let finished = process.wait().await.map_err(CliError::into_driver_error)?;
            Ok(TurnOutput {
                translator,
                finished,
            })
        }
        Some(mut failure) => {
            let finished = process.terminate().await;
            if !finished.stderr_tail.trim().is_empty() {
                failure.message.push_str("\nstderr:\n");
                failure.message.push_str(&finished.stderr_tail);
            }
            if translator.started() {
                sink.emit(DriverEvent::RunFailed { kind: failure.kind });
            }
            Err(DriverError::Failed(failure))
        }
    }
}
