//! [`CursorDriver`]: one `cursor-agent -p --output-format stream-json` process per turn.

use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use driver_cli::{CliCommand, CliError, CliProcess, Version, VersionCheck};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver,
    DriverError, DriverEvent, EventSink, ExitStatus, FailureKind, Request, Response,
    ResumeRejectReason, RunFailure, SessionCodec,
};
use driver_stream_json::McpConfigError;
use run_service::TransportKind;
use runtime_env::RuntimeEnv;

use crate::argv::{self, is_flag_value};
use crate::config;
use crate::events::EventTranslator;
use crate::mcp_file::{self, LockError, TurnLock};
use crate::options::{CursorOptions, PromptTransport};
use crate::session::{self, CURSOR_CODEC, Plan};

/// The driver type: part of every Cursor Thread's fingerprint.
pub const DRIVER_TYPE: &str = "cursor";

/// Why [`CursorDriver::create_chat`] returned no chat id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateChatError {
    /// The CLI could not be run (missing binary, too old, a timeout, …).
    #[error(transparent)]
    Cli(#[from] CliError),
    /// `create-chat` exited unsuccessfully.
    #[error("cursor-agent create-chat failed ({status})")]
    Failed {
        /// How it ended.
        status: ExitStatus,
        /// The end of its stderr, redacted; not part of `Display`.
        stderr_tail: String,
    },
    /// `create-chat` succeeded but printed no chat id (a UUID).
    #[error("cursor-agent create-chat printed no chat id")]
    NoChatId,
}

/// Drives the Cursor CLI: one `cursor-agent -p --output-format stream-json` process per turn,
/// in a [`RuntimeEnv`] namespace whose `CURSOR_CONFIG_DIR` (and HOME) keep the chats across
/// host restarts.
///
/// See the [crate docs](crate) for the argv, the `mcp.json` rule and resume.
#[derive(Debug)]
pub struct CursorDriver {
    options: CursorOptions,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
}

/// What a turn needs once the request passed every check.
struct Prepared<'r> {
    plan: Plan<'r>,
    args: Vec<String>,
    workspace: String,
    mcp_json: Vec<u8>,
}

/// How reading a run's events ended early.
enum Stop {
    /// The output broke a limit or the protocol.
    Cli(CliError),
    /// A resume reported another chat than the one asked for: Cursor started a new chat.
    /// `emitted` says whether `RunStarted` already reached the sink.
    OtherChat { emitted: bool },
}

impl CursorDriver {
    /// A driver that runs Cursor in `env` with `options`.
    pub fn new(env: Arc<RuntimeEnv>, options: CursorOptions) -> Self {
        let fingerprint = config_fingerprint(&options, &env);
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &CursorOptions {
        &self.options
    }

    /// The runtime environment.
    pub fn runtime_env(&self) -> &RuntimeEnv {
        &self.env
    }

    /// Runs `cursor-agent --version` once (later calls return the cached version) and checks
    /// it against the minimum version. [`Driver::run`] calls it before the first turn.
    ///
    /// # Errors
    /// [`CliError::NotFound`], [`CliError::VersionTooOld`], [`CliError::VersionUnparseable`]
    /// and the spawn errors of [`CliProcess::spawn`].
    pub async fn check_version(&self) -> Result<Version, CliError> {
        self.version
            .get(
                &self.env,
                &self.options.binary,
                self.options.minimum_version,
                self.options.version_probe_timeout,
            )
            .await
    }

    /// Asks Cursor for a new, empty chat (`cursor-agent create-chat`) and returns its id, for
    /// a host that wants the id before the first turn. Store it as the resume id of a
    /// [`SessionState`](driver_spi::SessionState) with the request's
    /// [`SessionGuard`](driver_spi::SessionGuard) and run the first turn as a resume.
    /// [`Driver::run`] does not need it: a new session's id is taken from the turn's own
    /// events.
    ///
    /// # Errors
    /// [`CreateChatError`]: the CLI could not run, failed, or printed no UUID.
    pub async fn create_chat(&self) -> Result<String, CreateChatError> {
        self.check_version().await?;
        let limits = self.options.limits;
        let command = CliCommand::new(&self.options.binary).arg("create-chat");
        let mut process = CliProcess::spawn(&self.env, command, limits)?;
        let mut id = None;
        while let Some(line) = process.next_line().await? {
            if id.is_none() {
                id = line
                    .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
                    .find(|word| driver_cli::is_uuid(word))
                    .map(str::to_owned);
            }
        }
        let finished = process.wait().await?;
        if !finished.status.is_success() {
            return Err(CreateChatError::Failed {
                status: finished.status,
                stderr_tail: finished.stderr_tail,
            });
        }
        id.ok_or(CreateChatError::NoChatId)
    }

    /// The checks before anything runs, and the argv, workspace and `mcp.json` of the turn.
    fn prepare<'r>(&self, request: &'r Request) -> Result<Prepared<'r>, DriverError> {
        self.validate_config()?;
        self.descriptor().capabilities.check(request)?;
        let plan = session::plan(request)?;
        if request.model.as_deref().is_some_and(|m| !is_flag_value(m)) {
            return Err(
                ConfigError::invalid("model", "must be non-empty and not start with `-`").into(),
            );
        }
        let workspace = match request.workspace.as_deref() {
            Some(w) => w.to_owned(),
            None => self
                .env
                .cwd()
                .to_str()
                .ok_or(ConfigError::invalid("workspace", "must be UTF-8"))?
                .to_owned(),
        };
        if !workspace.starts_with('/') || workspace.contains('\0') {
            return Err(ConfigError::invalid("workspace", "must be an absolute path").into());
        }
        let config = config::mcp_json(&request.mcp, &request.mcp_secret_names())
            .map_err(McpConfigError::into_driver_error)?;
        let prompt = prompt_text(request);
        if self.options.prompt == PromptTransport::Argument && !argv::is_prompt_argument(&prompt) {
            // The CLI would read a leading `-` as a flag; refuse before anything is spawned.
            return Err(ConfigError::invalid(
                "prompt",
                "as an argument it must be non-empty, not start with `-` and hold no NUL",
            )
            .into());
        }
        let args = argv::build(
            &self.options,
            request.model.as_deref(),
            &workspace,
            plan,
            &prompt,
        );
        Ok(Prepared {
            plan,
            args,
            workspace,
            mcp_json: config.to_string().into_bytes(),
        })
    }

    /// Spawns the CLI, forwards its translated events and judges the turn.
    async fn drive(
        &self,
        request: &Request,
        plan: Plan<'_>,
        command: CliCommand,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let mut process = CliProcess::spawn(&self.env, command, self.options.limits)
            .map_err(CliError::into_driver_error)?;
        let servers = request.mcp.iter().map(|s| s.name.as_str());
        let mut translator = EventTranslator::new(request.redactor(), servers);
        if let Err(stop) = stream(&mut process, &mut translator, plan, sink).await {
            // The process (group included) is ended before the error is reported.
            let finished = process.terminate().await;
            let (kind, emitted, error) = match stop {
                Stop::OtherChat { emitted } => (
                    FailureKind::Protocol,
                    emitted,
                    DriverError::from(ResumeRejectReason::UnknownSession),
                ),
                Stop::Cli(err) => {
                    let failure = err.to_run_failure(Some(&finished.stderr_tail));
                    (
                        failure.kind,
                        translator.started(),
                        DriverError::Failed(failure),
                    )
                }
            };
            if emitted {
                sink.emit(DriverEvent::RunFailed { kind });
            }
            return Err(error);
        }
        match process.wait().await {
            Ok(finished) => session::judge(request, plan, &mut translator, finished, sink),
            Err(err) => {
                let failure = err.to_run_failure(None);
                if translator.started() {
                    sink.emit(DriverEvent::RunFailed { kind: failure.kind });
                }
                Err(DriverError::Failed(failure))
            }
        }
    }
}

/// Reads every event of a run and forwards its translation to `sink`.
async fn stream(
    process: &mut CliProcess,
    translator: &mut EventTranslator,
    plan: Plan<'_>,
    sink: &dyn EventSink,
) -> Result<(), Stop> {
    while let Some(value) = process.next_json().await.map_err(Stop::Cli)? {
        let emitted = translator.started();
        let events = translator.translate(&value).map_err(|_| {
            Stop::Cli(CliError::MalformedJson {
                line: process.line_number(),
            })
        })?;
        // Checked before the batch is emitted: `system/init` names the chat first.
        if let (Plan::Resume(wanted), Some(got)) = (plan, translator.session_id())
            && !got.eq_ignore_ascii_case(wanted)
        {
            return Err(Stop::OtherChat { emitted });
        }
        for event in events {
            sink.emit(event);
        }
    }
    Ok(())
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

fn config_fingerprint(options: &CursorOptions, env: &RuntimeEnv) -> Fingerprint {
    ConfigFingerprintBuilder::new(DRIVER_TYPE)
        .opt_str("model", options.model.as_deref())
        .bool("trust_workspace", options.trust_workspace)
        .bool("force", options.force)
        .str("namespace", env.namespace().as_str())
        .str("isolation_level", env.level().name())
        .finish()
}

fn lock_error(err: LockError) -> DriverError {
    match err {
        LockError::Cli(e) => e.into_driver_error(),
        LockError::Busy(after) => DriverError::Failed(RunFailure::new(
            FailureKind::Timeout,
            format!(
                "another Cursor turn of this namespace held its mcp.json for {}s",
                after.as_secs()
            ),
        )),
    }
}

#[async_trait::async_trait]
impl Driver for CursorDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(DRIVER_TYPE, "Cursor CLI").with_capabilities(
            Capabilities::none()
                .with_resume(true)
                .with_streaming(true)
                .with_mcp_transport(TransportKind::StreamableHttp)
                .with_mcp_transport(TransportKind::Stdio),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.options.binary.as_os_str().is_empty() {
            return Err(ConfigError::missing("binary"));
        }
        if self
            .options
            .model
            .as_deref()
            .is_some_and(|m| !is_flag_value(m))
        {
            return Err(ConfigError::invalid(
                "model",
                "must be non-empty and not start with `-`",
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let Prepared {
            plan,
            args,
            workspace,
            mcp_json,
        } = self.prepare(&request)?;
        self.check_version()
            .await
            .map_err(CliError::into_driver_error)?;
        let command = CliCommand::new(&self.options.binary)
            .args(args)
            .cwd(&workspace)
            .secret_env(&request.runtime.secret_env)
            .stdin_text(match self.options.prompt {
                PromptTransport::Argument => String::new(),
                _ => prompt_text(&request),
            })
            .redactor(request.redactor());
        // Declared in this order so that dropping the run future ends the process first,
        // then restores `mcp.json`, then lets the namespace's next turn in.
        let turn = TurnLock::acquire(&self.env, self.options.limits.total_timeout)
            .await
            .map_err(lock_error)?;
        let mcp = mcp_file::install(&self.env, &mcp_json).map_err(CliError::into_driver_error)?;
        let result = self.drive(&request, plan, command, &*sink).await;
        // A file that cannot be restored is not the run's failure.
        if let Err(e) = mcp.restore() {
            tracing::warn!(error = %e, "could not restore the namespace's Cursor mcp.json");
        }
        drop(turn);
        result
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&CURSOR_CODEC)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }
}

impl ConfigFingerprinter for CursorDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}
