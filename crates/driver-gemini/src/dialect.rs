//! The Gemini dialect of [`driver_cli::CliDriver`]: the descriptor, the codec, the
//! fingerprint fields, the checks, the argv of one `gemini` invocation, the fork's session
//! file, Gemini's unknown-session signal and how its failures are classified.
//!
//! The prompt is not in argv: it goes on stdin, with an empty `-p` to select headless mode
//! (Gemini appends `-p`'s text to stdin's, and uses stdin alone when `-p` is empty). So a
//! prompt that starts with `-` cannot be read as a flag, a long prompt does not hit the
//! kernel's per-argument limit, and no prompt shows in the process table.
//!
//! Gemini's exit codes (0.61.0): 0 ok, 41 authentication, 42 input (an unknown `--resume`
//! session among them), 44 sandbox, 52 config, 53 turn limit, 54 fatal tool error, 55
//! untrusted directory, 130 cancelled. A model API error exits with the HTTP status (modulo
//! 256, so 401 exits 145) after a `result` event with `status: "error"`, which is what the
//! classification reads.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use driver_cli::{
    ConfigFiles, Dialect, Identity, Invocation, NewSessionId, Runtime, SessionPlan,
    Translator as _, Turn, cli_capabilities,
};
use driver_process::error::ProcessError;
use driver_process::process::Finished;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, ExitStatus, FailureKind,
    PermissionPolicy, Redactor, Request, ResumeRejectReason, RunFailure,
};
use run_service::{EnvBinding, TransportKind};
use runtime_env::{IsolationLevel, RuntimeEnv};

use crate::config;
use crate::events::{EventTranslator, tool_names};
use crate::options::{AuthType, GeminiOptions};

/// The most Gemini reads from stdin; it silently cuts longer input (0.61.0).
const MAX_PROMPT_BYTES: usize = 8 << 20;

/// The allow-list entry of a turn without MCP servers: a name no request server can have
/// (they are `[A-Za-z0-9_-]`), so nothing connects. Gemini refuses an empty value.
const NO_SERVERS: &str = "sdk.no-servers";

driver_cli::dialect!(
    /// The Gemini dialect of the one CLI driver, over [`GeminiOptions`].
    Gemini(GeminiOptions)
);

impl Dialect for Gemini {
    type Translator = EventTranslator;

    fn runtime(&self) -> &'static Runtime {
        &crate::RUNTIME
    }

    /// The session codec of the Gemini driver.
    ///
    /// The resume id is the UUID the driver chose for `--session-id` when the session started
    /// (Gemini reports it back in `init`). The codec stores any id that is safe as one argv
    /// element ([`driver_cli::is_safe_id`]); the driver resumes only UUIDs, because Gemini takes
    /// `latest` and numbers for other sessions. The stored state holds the session id and the
    /// [`SessionGuard`](driver_spi::SessionGuard) values only: no secret, URL, port or env-var
    /// name.
    ///
    /// The host chooses a new session's id (`--session-id`), so it is known before Gemini
    /// starts.
    fn identity(&self) -> &Identity {
        &IDENTITY
    }

    fn capabilities(&self) -> Capabilities {
        cli_capabilities(
            true,
            &[
                TransportKind::StreamableHttp,
                TransportKind::Sse,
                TransportKind::Stdio,
            ],
        )
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        builder
            .opt_str("base_url", self.base_url.as_deref())
            .opt_str("auth_type", self.auth_type().map(AuthType::as_str))
            .bool("trust_mcp_servers", self.trust_mcp_servers)
    }

    fn validate(&self, env: &RuntimeEnv) -> Result<(), ConfigError> {
        if let Some(url) = self.base_url.as_deref()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError::invalid(
                "base_url",
                "must be an http or https URL",
            ));
        }
        if matches!(env.level(), IsolationLevel::Shared) {
            return Err(ConfigError::invalid(
                "isolation_level",
                "the Gemini driver installs its .gemini/settings.json for every turn, so it \
                 needs a namespaced or ephemeral runtime environment, not the host user's HOME",
            ));
        }
        Ok(())
    }

    /// Only the default permission policy: headless Gemini runs without its tools that
    /// need a confirmation (shell, file edits), and the request's MCP servers are allowed by
    /// name; the driver cannot widen that, nor ask the host.
    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        request.permissions.one_of(&[PermissionPolicy::DEFAULT])?;
        if request.prompt.len() > MAX_PROMPT_BYTES {
            return Err(
                ConfigError::invalid("prompt", "Gemini reads at most 8 MiB of prompt").into(),
            );
        }
        Ok(())
    }

    /// `settings.json` and the instructions file, as namespace files; a request value
    /// holding `$` is refused here, before anything runs.
    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        let settings = self.settings_json(turn.request)?;
        Ok(config::namespace_files(
            settings,
            turn.request.instructions.clone(),
        ))
    }

    /// Called with the turn lock held and the files installed: a fork's parent recording is
    /// looked up under the lock, so that no turn of that session is still recording it.
    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let fork_file = match turn.plan {
            SessionPlan::Fork(parent) => Some(
                session_file(&gemini_dir(turn.env)?, parent)
                    .ok_or(ResumeRejectReason::UnknownSession)?,
            ),
            _ => None,
        };
        let request = turn.request;
        let servers: Vec<&str> = request.mcp.iter().map(|s| s.name.as_str()).collect();
        let model = request.model.as_deref().or(self.cli.model.as_deref());
        let args = argv(model, &servers, turn.plan, fork_file.as_deref());
        let mut invocation = Invocation::new(args);
        if let Some(url) = &self.base_url {
            invocation = invocation.var("GOOGLE_GEMINI_BASE_URL", url.as_str());
        }
        if let Some(key) = &self.api_key {
            // Added after the request's secrets, so that it wins over a namespace secret of
            // the same name; the driver redacts it like them.
            invocation
                .secrets
                .push(EnvBinding::new("GEMINI_API_KEY", key.clone()));
        }
        Ok(invocation)
    }

    /// The key option is in the turn's `redactor` already: the invocation carries it.
    fn translator(&self, request: &Request, redactor: Redactor) -> EventTranslator {
        let names = tool_names(request.mcp.iter().map(|s| s.name.as_str()));
        EventTranslator::new(redactor, names)
    }

    /// Exit 42 (Gemini's input-error code) with a message about the session on stderr
    /// ("Error resuming session: Invalid session identifier …"). Other input errors (no
    /// prompt, say) are not a rejected session.
    fn unknown_session(&self, _: &EventTranslator, finished: &Finished) -> bool {
        is_unknown_session(finished.status, &finished.stderr_tail)
    }

    /// A failed `result`, refined by the exit status (41 is authentication, 53 the turn
    /// limit); else, after a successful exit, a protocol failure; else the exit status's
    /// class (Gemini's own codes first) with the last error event or the stderr tail.
    fn failure(&self, translator: &EventTranslator, finished: &Finished) -> RunFailure {
        failure(translator, finished.status, &finished.stderr_tail)
    }
}

/// `$GEMINI_CLI_HOME/.gemini` of `env`.
fn gemini_dir(env: &RuntimeEnv) -> Result<PathBuf, ProcessError> {
    Ok(env.state_dir(&crate::RUNTIME.descriptor)?.join(".gemini"))
}

/// The argv of one invocation (without the program): a pure function of the model, the
/// request's MCP server names, the session plan and, for a fork, the parent's recording.
///
/// | plan | argv after `-p "" --output-format stream-json --skip-trust [-m <model>]` |
/// |---|---|
/// | start | `--session-id <uuid>` |
/// | resume | `--resume <uuid>` |
/// | fork | `--session-file <recording>`: Gemini's only way to fork |
/// | stateless | nothing: Gemini 0.61.0 has no switch that stops it recording |
///
/// Each server becomes one `--allowed-mcp-server-names=<name>`, so a server declared
/// elsewhere (a workspace's `.gemini/settings.json`) does not connect. The `=` form keeps a
/// name that starts with `-` a value. Without servers the list holds [`NO_SERVERS`], since
/// an empty list would allow every server.
fn argv(
    model: Option<&str>,
    servers: &[&str],
    plan: SessionPlan<'_>,
    fork_file: Option<&Path>,
) -> Vec<String> {
    let mut args: Vec<String> = ["-p", "", "--output-format", "stream-json", "--skip-trust"]
        .map(str::to_owned)
        .to_vec();
    if let Some(model) = model {
        args.extend(["-m".to_owned(), model.to_owned()]);
    }
    match (plan, fork_file) {
        (SessionPlan::Fork(_), Some(file)) => args.extend([
            "--session-file".to_owned(),
            file.to_string_lossy().into_owned(),
        ]),
        (SessionPlan::Fork(_), None) => {}
        // `--session-id <id>`, `--resume <id>`, or nothing for a stateless turn.
        (plan, _) => args.extend(plan.session_id_flags(None)),
    }
    let allowed = if servers.is_empty() {
        &[NO_SERVERS][..]
    } else {
        servers
    };
    args.extend(
        allowed
            .iter()
            .map(|name| format!("--allowed-mcp-server-names={name}")),
    );
    args
}

/// Whether Gemini refused the `--resume` session (see [`Dialect::unknown_session`]).
fn is_unknown_session(status: ExitStatus, stderr: &str) -> bool {
    status == ExitStatus::Code(42) && stderr.to_ascii_lowercase().contains("session")
}

/// [`Dialect::failure`] of a turn that exited with `status` after printing `stderr`.
fn failure(translator: &EventTranslator, status: ExitStatus, stderr: &str) -> RunFailure {
    if let Some(mut failure) = translator.reported_failure() {
        match status {
            ExitStatus::Code(41) => failure.kind = FailureKind::Authentication,
            ExitStatus::Code(53) => failure.kind = FailureKind::Limit,
            _ => {}
        }
        return failure;
    }
    if status == ExitStatus::Success {
        return RunFailure::new(
            FailureKind::Protocol,
            "gemini exited without a successful result",
        );
    }
    let mut message = format!("gemini ended: {status}");
    let detail = translator.last_error().unwrap_or(stderr);
    if !detail.trim().is_empty() {
        message.push('\n');
        message.push_str(detail);
    }
    RunFailure::new(exit_kind(status), message)
}

/// The failure class of an exit status without a failed `result` event.
fn exit_kind(status: ExitStatus) -> FailureKind {
    match status {
        ExitStatus::Code(41) => FailureKind::Authentication,
        ExitStatus::Code(53) => FailureKind::Limit,
        // Input, config and untrusted-directory errors: the run was refused as asked.
        ExitStatus::Code(42 | 52 | 55) => FailureKind::Other,
        status => driver_process::process::failure_kind(status).unwrap_or(FailureKind::Process),
    }
}

// ---------------------------------------------------------------------------------------
// Forking: the parent's recording
// ---------------------------------------------------------------------------------------
//
// Gemini has no fork flag, but `--session-file <file>` imports a recorded session under a
// new session id (verified against 0.61.0: the new session carries the whole history, is
// reported in `init`, and can itself be resumed).
//
// Gemini records a session in `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` as
// `session-<time>-<first 8 characters of the id>.jsonl`, whose first line is its metadata
// (`{"sessionId": …}`). One session can have several such files (an imported session keeps
// both the import and its own recording); like Gemini's own `--resume`, the most recently
// updated one is taken.

/// The longest metadata line read from a recording.
const MAX_METADATA: u64 = 1 << 20;

/// The session id on the first line of a recording, if it has one.
fn recorded_id(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file.take(MAX_METADATA))
        .read_line(&mut line)
        .ok()?;
    let metadata: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    metadata
        .get("sessionId")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// Regular files (not symlinks) in `dir`.
fn files_in(dir: &Path) -> impl Iterator<Item = fs::DirEntry> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
}

/// The recording of session `id` under `gemini_dir` (`$GEMINI_CLI_HOME/.gemini`): the most
/// recently modified `tmp/*/chats/session-*-<id8>.jsonl` whose metadata names `id`; `None`
/// when there is none.
fn session_file(gemini_dir: &Path, id: &str) -> Option<PathBuf> {
    let short = id.get(..8)?;
    let suffix = format!("-{short}.jsonl");
    let projects = fs::read_dir(gemini_dir.join("tmp")).ok()?;
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for project in projects.flatten() {
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for entry in files_in(&project.path().join("chats")) {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with("session-") || !name.ends_with(&suffix) {
                continue;
            }
            let path = entry.path();
            if !recorded_id(&path).is_some_and(|got| got.eq_ignore_ascii_case(id)) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if best.as_ref().is_none_or(|(t, _)| modified >= *t) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, path)| path)
}

/// Who the driver is.
const IDENTITY: Identity = Identity::new("gemini", "Gemini CLI", "gemini/v1", NewSessionId::Host);

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use driver_cli::Tracked;

    const ID: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

    #[test]
    fn argv_by_session_plan() {
        let head = ["-p", "", "--output-format", "stream-json", "--skip-trust"];
        let file = Path::new("/g/.gemini/tmp/w/chats/session-x-0199a213.jsonl");
        // (plan, fork file, model, server names, argv after the head)
        type Row<'a> = (
            SessionPlan<'a>,
            Option<&'a Path>,
            Option<&'a str>,
            &'a [&'a str],
            Vec<&'a str>,
        );
        let table: [Row<'_>; 6] = [
            (
                SessionPlan::Start(Some(ID)),
                None,
                Some("gemini-default"),
                &["agent-ui"],
                vec![
                    "-m",
                    "gemini-default",
                    "--session-id",
                    ID,
                    "--allowed-mcp-server-names=agent-ui",
                ],
            ),
            (
                SessionPlan::Resume(ID),
                None,
                Some("gemini-other"),
                &["a", "-b"],
                vec![
                    "-m",
                    "gemini-other",
                    "--resume",
                    ID,
                    "--allowed-mcp-server-names=a",
                    "--allowed-mcp-server-names=-b",
                ],
            ),
            (
                SessionPlan::Stateless,
                None,
                Some("gemini-default"),
                &[],
                vec![
                    "-m",
                    "gemini-default",
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
            (
                SessionPlan::Fork(ID),
                Some(file),
                Some("gemini-default"),
                &[],
                vec![
                    "-m",
                    "gemini-default",
                    "--session-file",
                    "/g/.gemini/tmp/w/chats/session-x-0199a213.jsonl",
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
            (
                SessionPlan::Start(Some(ID)),
                None,
                Some("m"),
                &[],
                vec![
                    "-m",
                    "m",
                    "--session-id",
                    ID,
                    "--allowed-mcp-server-names=sdk.no-servers",
                ],
            ),
            // Without any model, `-m` is left out (Gemini picks `auto`).
            (
                SessionPlan::Stateless,
                None,
                None,
                &["s"],
                vec!["--allowed-mcp-server-names=s"],
            ),
        ];
        for (plan, fork_file, model, servers, tail) in table {
            let args = argv(model, servers, plan, fork_file);
            let want: Vec<&str> = head.iter().copied().chain(tail).collect();
            assert_eq!(args, want, "{plan:?}");
        }
    }

    #[test]
    fn finds_the_latest_recording_of_the_session() {
        const ID: &str = "ec2ddec0-fabd-46c8-b7b5-7e29b19a29c5";
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(session_file(dir.path(), ID), None);
        let chats = dir.path().join("tmp/work/chats");
        fs::create_dir_all(&chats).unwrap();
        let meta = format!(r#"{{"sessionId":"{ID}","kind":"main"}}"#);
        // Names as gemini 0.61.0 writes them: an import and the session's own recording.
        let import = chats.join("session-1796088318363-ec2ddec0.jsonl");
        let own = chats.join("session-2026-12-01T01-25-ec2ddec0.jsonl");
        fs::write(&own, format!("{meta}\n")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&import, format!("{meta}\n{{\"$set\":{{}}}}\n")).unwrap();
        // Same short id, another session; and a file that is not a recording.
        fs::write(
            chats.join("session-2026-12-01T01-26-ec2ddec0.jsonl"),
            r#"{"sessionId":"ec2ddec0-0000-4000-8000-000000000000"}"#,
        )
        .unwrap();
        fs::write(chats.join("notes-ec2ddec0.jsonl"), &meta).unwrap();
        assert_eq!(session_file(dir.path(), ID), Some(import));
        assert_eq!(session_file(dir.path(), "short"), None);
    }

    #[test]
    fn exit_codes_and_the_unknown_session() {
        assert_eq!(exit_kind(ExitStatus::Code(41)), FailureKind::Authentication);
        assert_eq!(exit_kind(ExitStatus::Code(53)), FailureKind::Limit);
        assert_eq!(exit_kind(ExitStatus::Code(55)), FailureKind::Other);
        assert_eq!(exit_kind(ExitStatus::Code(1)), FailureKind::Process);
        assert_eq!(exit_kind(ExitStatus::Signal(9)), FailureKind::Process);
        assert_eq!(exit_kind(ExitStatus::TimedOut), FailureKind::Timeout);
        // Verbatim from gemini 0.61.0 (`--resume` of a UUID its namespace does not hold).
        let unknown = "Error resuming session: Invalid session identifier \
                       \"1f9c3813-6aa8-448e-8c61-b9a6080c42ad\".";
        assert!(is_unknown_session(ExitStatus::Code(42), unknown));
        assert!(!is_unknown_session(ExitStatus::Code(1), unknown));
        assert!(!is_unknown_session(
            ExitStatus::Code(42),
            "No input provided via stdin."
        ));
    }

    #[test]
    fn failures_are_classified_by_result_and_exit_code() {
        use serde_json::json;
        let failed = |result: serde_json::Value| {
            let mut t = Tracked::new(EventTranslator::default());
            t.translate(&result).unwrap();
            t
        };
        let kind = |t: &EventTranslator, status| failure(t, status, "").kind;
        // The exit code wins over the result's text for authentication and the turn limit.
        let provider = failed(
            json!({"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: boom]"}}),
        );
        assert_eq!(
            kind(&provider, ExitStatus::Code(1)),
            FailureKind::ModelProvider
        );
        assert_eq!(
            kind(&provider, ExitStatus::Code(41)),
            FailureKind::Authentication
        );
        assert_eq!(kind(&provider, ExitStatus::Code(53)), FailureKind::Limit);
        let unauthenticated = failed(
            json!({"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: 401]"}}),
        );
        assert_eq!(
            kind(&unauthenticated, ExitStatus::Code(145)),
            FailureKind::Authentication
        );
        // Without a failed result: the exit code, with stderr.
        let none = EventTranslator::default();
        let limit = failure(&none, ExitStatus::Code(53), "Reached max");
        assert_eq!(limit.kind, FailureKind::Limit);
        assert_eq!(limit.message, "gemini ended: exit code 53\nReached max");
        assert_eq!(kind(&none, ExitStatus::Success), FailureKind::Protocol);
        assert_eq!(kind(&none, ExitStatus::Code(42)), FailureKind::Other);
    }
}
