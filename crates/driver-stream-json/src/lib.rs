//! The stream-json protocol that Claude Code and CodeBuddy Code share, written once for both
//! dialects of the one CLI driver ([`driver_cli::CliDriver`]).
//!
//! Both CLIs run headless as `<cli> -p --output-format stream-json` and print one JSON event
//! per line (`system/init`, `assistant`, `user`, `result`, and CodeBuddy's top-level
//! `error`); both take MCP servers from a `--mcp-config` file. This crate holds exactly what
//! is the same, and nothing that any other CLI uses:
//!
//! * the events' [`Translator`](driver_cli::Translator): text, tool-call
//!   start, arguments and result (MCP tool names as each CLI rewrites them, mapped back to
//!   `mcp__<declared server>__<tool>`), the session id, the `system/init` MCP statuses (so the
//!   driver stops a turn whose required server did not connect), and the `result` verdict,
//!   classified by each CLI's own rule, and its `structured_output` (the answer as data, for
//!   a turn run with `--json-schema`);
//! * [`StreamJsonDialect`]: the one [`Dialect`](driver_cli::Dialect) of both CLIs (argv,
//!   environment, config file, resident mode, the checks of a request and of the options),
//!   over an options type that says what its CLI does differently ([`StreamJsonCli`]);
//! * the per-run `{"mcpServers": …}` file, with bearer tokens as `${VAR}` references so that
//!   only variable names reach the disk, and an [`McpDialect`] for what differs;
//! * [`PermissionFlags`]: the request's permission policy as both CLIs' flags;
//! * the resident mode both share (`--input-format stream-json`, one `user`
//!   message per turn, the turn ending at `result`, `interrupt` as a control request,
//!   `can_use_tool` permission requests decided by the policy or the host), and the framing
//!   of its control protocol on the resident peer (`control_request`/`control_response`,
//!   every other line an event by its `type`).
//!
//! The scripted resident fake both dialects' tests run is `cli_test_kit::stream_json`.
//!
//! # Invariants
//! - No secret value is ever written: bearer tokens and stdio secrets are `${NAME}`
//!   references, and a request value containing `${` is refused rather than handed to the
//!   CLI's expansion (it could pull another variable, such as an API key, into a URL or
//!   header).
//! - Provider text kept for errors (`result` text, `error` messages) passes through the
//!   request's redactor.
//! - Unknown event types and content blocks are ignored; a known event with a broken shape
//!   is a [`MalformedEvent`](driver_cli::MalformedEvent) and changes nothing.
//!
//! # What it deliberately does not do
//! It spawns nothing and writes no file: the shared driver does both. What one of the two CLIs
//! does differently (its argv head, variables, identity, how its failures are classified)
//! stays in its own crate, as its [`StreamJsonCli`] implementation.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod control;
mod dialect;
mod events;
#[cfg(test)]
mod fuzz_tests;
mod mcp_config;
mod permissions;
mod resident;

use driver_cli::{ConfigFiles, Turn};
use driver_spi::{Capabilities, ConfigError, DriverError, Request};
use run_service::TransportKind;

pub use dialect::{StreamJsonCli, StreamJsonDialect};
// The translator is `pub` only as the dialect's `Translator` type: not re-exported, it is no
// part of the API (its tests and fuzz run inside the crate).
use events::StreamJson;
pub use events::TurnResult;
pub use mcp_config::McpDialect;
pub use permissions::PermissionFlags;
use resident::Resident;

/// The request's MCP servers as the per-run `mcp.json` file that `--mcp-config` names.
///
/// # Errors
/// [`DriverError::InvalidConfig`] naming the broken rule (see [`McpRefError`](driver_cli::McpRefError)).
pub(crate) fn mcp_file(request: &Request, dialect: McpDialect) -> Result<ConfigFiles, DriverError> {
    let config = mcp_config::mcp_config(&request.mcp, &request.mcp_secret_names(), dialect)?;
    Ok(ConfigFiles::RunFile {
        name: "mcp.json",
        contents: config.to_string().into_bytes(),
    })
}

/// The argv Claude Code and CodeBuddy share, in order: `head` (`-p --output-format
/// stream-json`, and whatever the CLI needs beside), the session flags (`no_persistence` for a
/// stateless turn, where the CLI has one), `--model` (the request's, else `default_model`),
/// `--append-system-prompt`, `--max-turns`, `--json-schema '<schema>'` (the turn's output
/// schema as inline JSON, which both CLIs take) and `--mcp-config <file> --strict-mcp-config`. The
/// dialect appends its permission flags and its variadic `--allowedTools` last; the prompt
/// goes to stdin, so no prompt argument can be read as a tool name.
///
/// In resident mode (`resident`) the messages come on stdin (`--input-format stream-json`)
/// and the session flags are left out: they name the session of a new process only
/// ([`Resident::launch_session`](driver_cli::ResidentProtocol::launch_session)), so they are not
/// part of its signature. `--json-schema` is: both CLIs take the schema only at launch and
/// apply it to every turn of the process (neither has a per-message schema), so a turn with
/// another schema, or none, gets a process of its own.
pub(crate) fn argv(
    head: &[&str],
    turn: &Turn<'_>,
    default_model: Option<&str>,
    no_persistence: Option<&str>,
    max_turns: Option<u32>,
    resident: bool,
) -> Vec<String> {
    let mut args: Vec<String> = head.iter().map(|a| (*a).to_owned()).collect();
    if resident {
        args.extend(["--input-format".to_owned(), "stream-json".to_owned()]);
    } else {
        args.extend(turn.plan.session_id_flags(no_persistence));
    }
    if let Some(model) = turn.request.model.as_deref().or(default_model) {
        args.extend(["--model".to_owned(), model.to_owned()]);
    }
    if let Some(instructions) = &turn.request.instructions {
        args.extend(["--append-system-prompt".to_owned(), instructions.clone()]);
    }
    if let Some(turns) = max_turns {
        args.extend(["--max-turns".to_owned(), turns.to_string()]);
    }
    if let Some(schema) = turn.output_schema() {
        args.extend(["--json-schema".to_owned(), schema.to_string()]);
    }
    if let Some(path) = turn.run_file {
        let path = path.to_string_lossy().into_owned();
        args.extend([
            "--mcp-config".to_owned(),
            path,
            "--strict-mcp-config".to_owned(),
        ]);
    }
    args
}

/// What Claude Code and CodeBuddy can both do headless: resume, fork, streaming, MCP
/// servers over streamable HTTP, SSE and stdio, and structured output (`--json-schema`: the
/// model answers through a `StructuredOutput` tool, reported as the `result` event's
/// `structured_output`).
pub(crate) fn capabilities() -> Capabilities {
    driver_cli::cli_capabilities(
        true,
        &[
            TransportKind::StreamableHttp,
            TransportKind::Sse,
            TransportKind::Stdio,
        ],
    )
    .with_structured_output(true)
}

/// The check Claude Code and CodeBuddy make of the option they share: an http(s) model
/// endpoint.
///
/// # Errors
/// A [`ConfigError::invalid`] naming `base_url`.
pub(crate) fn check_base_url(base_url: Option<&str>) -> Result<(), ConfigError> {
    match base_url {
        Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => Err(
            ConfigError::invalid("base_url", "must be an http or https URL"),
        ),
        _ => Ok(()),
    }
}
