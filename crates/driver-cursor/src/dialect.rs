//! The Cursor dialect of the one CLI driver: `impl Dialect for CursorOptions`.
//!
//! The argv of one `cursor-agent -p` invocation is a pure function of the options, the
//! request's model and workspace, and the session plan ([`args`]); the prompt goes on stdin
//! or, with [`PromptTransport::Argument`], last in argv. The MCP servers go to the
//! namespace's `mcp.json` (`config.rs`). A chat Cursor does not know is recognised by its
//! stderr ([`UNKNOWN_CHAT`]), and failures are classified by their text ([`classify`]).

use driver_cli::{
    ConfigFiles, Dialect, Identity, Invocation, NewSessionId, Runtime, SessionPlan, Translator,
    Turn, cli_capabilities,
};
use driver_process::process::Finished;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, ExitStatus, FailureKind,
    PermissionPolicy, Redactor, Request, RunFailure, Unsupported,
};
use run_service::TransportKind;
use runtime_env::RuntimeEnv;

use crate::events::EventTranslator;
use crate::options::{CursorOptions, PromptTransport};

/// Phrases that say a chat id is unknown, lower-cased.
///
/// Unverified: Cursor documents no message for `--resume` with an unknown id, only that a
/// failed run "exits with a non-zero code and writes an error message to stderr". These are
/// the wordings other CLIs and third-party Cursor wrappers match; the fake CLI prints the
/// first one. Replace them with the real text once a transcript exists.
const UNKNOWN_CHAT: &[&str] = &[
    "chat not found",
    "no chat found",
    "chat does not exist",
    "session not found",
    "no session found",
    "conversation not found",
    "no conversation found",
];

driver_cli::dialect!(
    /// The Cursor dialect of the one CLI driver, over [`CursorOptions`].
    Cursor(CursorOptions)
);

impl Dialect for Cursor {
    type Translator = EventTranslator;

    fn runtime(&self) -> &'static Runtime {
        &crate::RUNTIME
    }

    /// The session codec of the Cursor driver: the chat id (the
    /// `session_id` of Cursor's events, which `--resume` takes) and the
    /// [`SessionGuard`](driver_spi::SessionGuard) values; nothing else is stored. It keeps any id
    /// that is safe as one argv element ([`driver_cli::is_safe_id`]); the driver resumes only
    /// UUIDs, the shape Cursor documents for `session_id`.
    ///
    /// A new chat's id is the `session_id` of the turn's own `system/init`, so a turn is one
    /// process and a turn that never starts leaves no chat behind.
    fn identity(&self) -> &Identity {
        &IDENTITY
    }

    fn capabilities(&self) -> Capabilities {
        // No fork: Cursor has no way to branch a chat.
        cli_capabilities(
            false,
            &[TransportKind::StreamableHttp, TransportKind::Stdio],
        )
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        // `force` moved to the request's policy (issue 27); its field keeps the default
        // options' value, so stored Threads keep resuming.
        builder
            .bool("trust_workspace", self.trust_workspace)
            .bool("force", false)
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        if self.cli.model.as_deref().is_some_and(|m| !is_flag_value(m)) {
            return Err(invalid_model());
        }
        Ok(())
    }

    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        request.permissions.one_of(&POLICIES)?;
        if request.model.as_deref().is_some_and(|m| !is_flag_value(m)) {
            return Err(invalid_model().into());
        }
        if self.prompt == PromptTransport::Argument && !is_flag_value(&prompt_text(request)) {
            // The CLI would read a leading `-` as a flag; refuse before anything is spawned.
            return Err(ConfigError::invalid(
                "prompt",
                "as an argument it must be non-empty, not start with `-` and hold no NUL",
            )
            .into());
        }
        Ok(())
    }

    /// The namespace's `mcp.json`, under the turn lock; the workspace is checked here too, so
    /// that a bad one is refused before anything runs.
    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        workspace(turn)?;
        crate::config::mcp_file(turn.request)
    }

    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let request = turn.request;
        let prompt = prompt_text(request);
        let model = request.model.as_deref().or(self.cli.model.as_deref());
        let force = request.permissions.one_of(&POLICIES)? == 1;
        let mut args = args(self, model, workspace(turn)?, turn.plan, force)?;
        let stdin = match self.prompt {
            PromptTransport::Argument => {
                args.push(prompt);
                String::new()
            }
            _ => prompt,
        };
        let mut invocation = Invocation::new(args);
        invocation.stdin = Some(stdin);
        Ok(invocation)
    }

    fn translator(&self, request: &Request, redactor: Redactor) -> EventTranslator {
        EventTranslator::new(redactor, request.mcp.iter().map(|s| s.name.as_str()))
    }

    /// Cursor fails before `system/init` with a "chat not found"-like message on stderr (an
    /// assumption: Cursor documents no wording; the phrases are in `dialect.rs`). A
    /// `system/init` naming another chat than the one resumed is caught by the shared event
    /// loop.
    fn unknown_session(&self, _translator: &EventTranslator, finished: &Finished) -> bool {
        is_unknown_chat(&finished.stderr_tail)
    }

    /// A failed `result` with its text (or, when it has none, the stderr tail), classified by
    /// that text; a clean exit without a successful result is a protocol failure; any other
    /// exit has its own class, refined by the stderr tail when the CLI exited with a code.
    fn failure(&self, translator: &EventTranslator, finished: &Finished) -> RunFailure {
        let stderr = &finished.stderr_tail;
        if let Some(failure) = translator.reported_failure() {
            if failure.message.is_empty() {
                return RunFailure::new(
                    classify(stderr, FailureKind::ModelProvider),
                    stderr.clone(),
                );
            }
            return failure;
        }
        let fallback = match finished.status {
            ExitStatus::Success => {
                return RunFailure::new(
                    FailureKind::Protocol,
                    "cursor-agent exited without a successful result and chat id",
                );
            }
            ExitStatus::Code(_) => {
                let fallback = driver_process::process::failure_kind(finished.status);
                classify(stderr, fallback.unwrap_or(FailureKind::Process))
            }
            status => driver_process::process::failure_kind(status).unwrap_or(FailureKind::Process),
        };
        RunFailure::new(fallback, stderr.clone())
    }
}

/// Whether `text` (Cursor's stderr) says the chat is unknown.
fn is_unknown_chat(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    UNKNOWN_CHAT.iter().any(|phrase| lower.contains(phrase))
}

/// The failure class of a failed turn's text: authentication, rate limits, else `fallback`.
pub(crate) fn classify(text: &str, fallback: FailureKind) -> FailureKind {
    let lower = text.to_ascii_lowercase();
    let says = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if says(&["401", "unauthorized", "authentication", "api key"]) {
        FailureKind::Authentication
    } else if says(&["429", "rate limit"]) {
        FailureKind::RateLimited
    } else {
        fallback
    }
}

/// The policies Cursor enforces: the default (no `--force`: no command runs, no file is
/// written, without the asking a `-p` run cannot do) and everything allowed (`--force`).
/// MCP tools are always allowed (`--approve-mcps`).
const POLICIES: [PermissionPolicy; 2] = [PermissionPolicy::DEFAULT, PermissionPolicy::ALLOW_ALL];

/// The argv (without the program and the prompt); `force` for an all-allowing policy.
///
/// `--approve-mcps` is always passed: nobody can approve the request's MCP servers in `-p`
/// mode, and the driver wrote them itself.
fn args(
    options: &CursorOptions,
    model: Option<&str>,
    workspace: &str,
    plan: SessionPlan<'_>,
    force: bool,
) -> Result<Vec<String>, DriverError> {
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--workspace"]
        .map(str::to_owned)
        .to_vec();
    args.push(workspace.to_owned());
    match plan {
        SessionPlan::Resume(id) => args.extend(["--resume".to_owned(), id.to_owned()]),
        SessionPlan::Fork(_) => return Err(Unsupported::Fork.into()),
        _ => {}
    }
    if let Some(model) = model {
        args.extend(["--model".to_owned(), model.to_owned()]);
    }
    args.push("--approve-mcps".to_owned());
    if options.trust_workspace {
        args.push("--trust".to_owned());
    }
    if force {
        args.push("--force".to_owned());
    }
    Ok(args)
}

/// The workspace (`--workspace`): the request's, else the namespace's cwd; an absolute UTF-8
/// path without NUL.
fn workspace<'a>(turn: &Turn<'a>) -> Result<&'a str, ConfigError> {
    let workspace = match turn.request.workspace.as_deref() {
        Some(w) => w,
        None => turn
            .env
            .cwd()
            .to_str()
            .ok_or(ConfigError::invalid("workspace", "must be UTF-8"))?,
    };
    if !workspace.starts_with('/') || workspace.contains('\0') {
        return Err(ConfigError::invalid(
            "workspace",
            "must be an absolute path",
        ));
    }
    Ok(workspace)
}

/// The prompt as Cursor reads it: Cursor has no system-prompt flag, so instructions come
/// first, marked off.
fn prompt_text(request: &Request) -> String {
    match &request.instructions {
        Some(instructions) => format!(
            "<instructions>\n{instructions}\n</instructions>\n\n{}",
            request.prompt
        ),
        None => request.prompt.clone(),
    }
}

/// Whether `value` can be its own argv element after a flag (or as the prompt): non-empty,
/// without NUL, and not starting with `-` (the CLI would read it as another flag).
fn is_flag_value(value: &str) -> bool {
    !value.is_empty() && !value.starts_with('-') && !value.contains('\0')
}

fn invalid_model() -> ConfigError {
    ConfigError::invalid("model", "must be non-empty and not start with `-`")
}

/// Who the driver is.
const IDENTITY: Identity = Identity::new("cursor", "Cursor CLI", "cursor/v1", NewSessionId::Cli);

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

    #[test]
    fn argv_table() {
        let plain = CursorOptions::new();
        let tuned = CursorOptions::new().with_trust_workspace(false);
        let head = "-p --output-format stream-json --workspace /srv/ws";
        let cases: [(&CursorOptions, Option<&str>, SessionPlan<'_>, String); 6] = [
            (
                &plain,
                None,
                SessionPlan::Start(None),
                format!("{head} --approve-mcps --trust"),
            ),
            (
                &plain,
                None,
                SessionPlan::Stateless,
                format!("{head} --approve-mcps --trust"),
            ),
            (
                &plain,
                None,
                SessionPlan::Resume(ID),
                format!("{head} --resume {ID} --approve-mcps --trust"),
            ),
            (
                &plain,
                Some("sonnet-4"),
                SessionPlan::Start(None),
                format!("{head} --model sonnet-4 --approve-mcps --trust"),
            ),
            (
                &tuned,
                Some("gpt-5"),
                SessionPlan::Resume(ID),
                format!("{head} --resume {ID} --model gpt-5 --approve-mcps --force"),
            ),
            (
                &tuned,
                None,
                SessionPlan::Start(None),
                format!("{head} --approve-mcps --force"),
            ),
        ];
        for (options, model, plan, want) in cases {
            let force = std::ptr::eq(options, &tuned);
            let got = args(options, model, "/srv/ws", plan, force).map(|a| a.join(" "));
            assert_eq!(got, Ok(want), "{plan:?}");
        }
        assert_eq!(
            args(&plain, None, "/srv/ws", SessionPlan::Fork(ID), false),
            Err(Unsupported::Fork.into())
        );
    }

    #[test]
    fn flag_values() {
        assert!(is_flag_value("sonnet-4"));
        assert!(is_flag_value("/srv/ws"));
        assert!(is_flag_value("hi there"));
        assert!(!is_flag_value(""));
        assert!(!is_flag_value("--force"));
        assert!(!is_flag_value("a\0b"));
    }

    #[test]
    fn unknown_chat_phrases() {
        assert!(is_unknown_chat(
            "Error: Chat not found: 1f9c3813-6aa8-448e-8c61-b9a6080c42ad"
        ));
        assert!(is_unknown_chat("No conversation found with id x"));
        assert!(!is_unknown_chat("Error: network unreachable"));
        assert!(!is_unknown_chat(""));
    }

    #[test]
    fn classification_keeps_the_fallback_for_plain_errors() {
        let cases = [
            ("401 Unauthorized", FailureKind::Authentication),
            ("Invalid API key", FailureKind::Authentication),
            ("rate limit exceeded", FailureKind::RateLimited),
            ("HTTP 429", FailureKind::RateLimited),
            ("segfault", FailureKind::Process),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text, FailureKind::Process), kind, "{text}");
        }
    }
}
