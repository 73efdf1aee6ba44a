//! [`CodexDriver`]: one `codex exec --json` process per turn.

use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use driver_cli::{CliCommand, CliError, CliProcess, Finished, Version, VersionCheck};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver,
    DriverError, DriverEvent, EventSink, ExitStatus, FailureKind, Request, Response,
    ResumeRejectReason, RunFailure, SessionCodec, SessionGuard, SessionMode, SessionState,
};
use run_service::TransportKind;
use runtime_env::RuntimeEnv;

use crate::argv::{self, ArgvError, Invocation, is_config_key};
use crate::codec::CODEX_CODEC;
use crate::events::EventTranslator;
use crate::options::CodexOptions;
use crate::reject::is_unknown_session;
use crate::usage;

/// The driver type: part of every Codex Thread's fingerprint.
pub const DRIVER_TYPE: &str = "codex";

/// Drives the Codex CLI: one `codex exec --json` process per turn, in a
/// [`RuntimeEnv`] namespace whose `CODEX_HOME` keeps the sessions across host restarts.
///
/// See the [crate docs](crate) for the argv, MCP materialization and resume rules.
#[derive(Debug)]
pub struct CodexDriver {
    options: CodexOptions,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
}

impl CodexDriver {
    /// A driver that runs `codex` in `env` with `options`.
    pub fn new(env: Arc<RuntimeEnv>, options: CodexOptions) -> Self {
        let fingerprint = config_fingerprint(&options, &env);
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &CodexOptions {
        &self.options
    }

    /// The runtime environment.
    pub fn runtime_env(&self) -> &RuntimeEnv {
        &self.env
    }

    /// Runs `codex --version` once (later calls return the cached version) and checks it
    /// against the minimum version. Hosts may call it at startup; [`Driver::run`] calls it
    /// before the first turn.
    ///
    /// # Errors
    /// [`CliError::NotFound`] when the binary does not exist, [`CliError::VersionTooOld`] or
    /// [`CliError::VersionUnparseable`] when it is not a supported `codex`, and the spawn
    /// errors of [`CliProcess::spawn`].
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

    /// The arguments `codex` would get for `request` (without the program), after the same
    /// checks [`Driver::run`] makes before it spawns anything: config, capabilities, session
    /// guard, names. A dry run: nothing is spawned or written. Secret values never appear in
    /// it (only variable names).
    ///
    /// # Errors
    /// The [`DriverError`] that [`Driver::run`] would return before spawning.
    pub fn command_line(&self, request: &Request) -> Result<Vec<String>, DriverError> {
        self.invocation(request).map(|(_, args)| args)
    }

    fn invocation<'r>(
        &self,
        request: &'r Request,
    ) -> Result<(Invocation<'r>, Vec<String>), DriverError> {
        self.validate_config()?;
        self.descriptor().capabilities.check(request)?;
        let invocation = plan(request)?;
        let args = argv::build(
            &self.options,
            request.model.as_deref(),
            request.instructions.as_deref(),
            &request.mcp,
            &request.mcp_secret_names(),
            invocation,
        )
        .map_err(argv_error)?;
        Ok((invocation, args))
    }
}

fn config_fingerprint(options: &CodexOptions, env: &RuntimeEnv) -> Fingerprint {
    let provider = options.provider.as_ref();
    ConfigFingerprintBuilder::new(DRIVER_TYPE)
        .opt_str("model", options.model.as_deref())
        .opt_str(
            "reasoning_effort",
            options.reasoning_effort.map(|e| e.as_str()),
        )
        .str("sandbox", options.sandbox.as_str())
        .str("mcp_approval", options.mcp_approval.as_str())
        .opt_str("provider.id", provider.map(|p| p.id.as_str()))
        .opt_str("provider.base_url", provider.map(|p| p.base_url.as_str()))
        .opt_str("provider.wire_api", provider.map(|p| p.wire_api.as_str()))
        .opt_str(
            "provider.env_key",
            provider.and_then(|p| p.env_key.as_deref()),
        )
        .bool("hermetic_config", options.hermetic_config)
        .bool("skip_git_repo_check", options.skip_git_repo_check)
        .str("namespace", env.namespace().as_str())
        .str("isolation_level", env.level().name())
        .finish()
}

/// The session plan of one request.
fn plan(request: &Request) -> Result<Invocation<'_>, DriverError> {
    let session = &request.session;
    Ok(match session.mode {
        SessionMode::Stateless => Invocation::Stateless,
        SessionMode::ContinueOrStart if session.state.is_none() => Invocation::Start,
        SessionMode::ContinueOrStart | SessionMode::ContinueOnly => {
            Invocation::Resume(stored_id(request, session.state.as_ref())?)
        }
        SessionMode::Fork => Invocation::Fork(stored_id(request, session.state.as_ref())?),
        _ => return Err(driver_spi::Unsupported::Resume.into()),
    })
}

/// The thread id of a stored state that is well-formed and whose guard admits `request`.
fn stored_id<'r>(
    request: &Request,
    state: Option<&'r SessionState>,
) -> Result<&'r str, DriverError> {
    let state = state.ok_or(ResumeRejectReason::MissingState)?;
    if CODEX_CODEC.to_params(Some(state)).is_err() {
        return Err(ResumeRejectReason::InvalidState.into());
    }
    SessionGuard::for_request(request).check(state)?;
    Ok(state.resume_id.as_str())
}

fn argv_error(err: ArgvError) -> DriverError {
    match err {
        ArgvError::InvalidServerName { .. } => {
            ConfigError::invalid("mcp.name", "must be 1-64 ASCII letters, digits, `-` or `_`")
                .into()
        }
        ArgvError::DuplicateServerName => {
            ConfigError::invalid("mcp.name", "must be unique within a run").into()
        }
        ArgvError::UnsupportedTransport => {
            driver_spi::Unsupported::McpTransport(TransportKind::Sse).into()
        }
        ArgvError::InvalidProviderId { .. } => ConfigError::invalid(
            "provider.id",
            "must be 1-64 ASCII letters, digits, `-` or `_`",
        )
        .into(),
        ArgvError::InvalidSessionId { .. } => ResumeRejectReason::InvalidState.into(),
    }
}

/// Why reading a run's events stopped early.
enum Stop {
    /// The output broke a limit or the protocol.
    Cli(CliError),
    /// A resume reported another thread than the one asked for: Codex took the id for an
    /// unknown thread name and started a new thread.
    OtherThread,
}

/// Reads every event of a run and forwards its translation to `sink`.
async fn stream(
    process: &mut CliProcess,
    translator: &mut EventTranslator,
    invocation: Invocation<'_>,
    sink: &dyn EventSink,
) -> Result<(), Stop> {
    while let Some(value) = process.next_json().await.map_err(Stop::Cli)? {
        let events = translator.translate(&value).map_err(|_| {
            Stop::Cli(CliError::MalformedJson {
                line: process.line_number(),
            })
        })?;
        // Checked before the first event is emitted: `thread.started` comes first.
        if let (Invocation::Resume(wanted), Some(got)) = (invocation, translator.thread_id())
            && !got.eq_ignore_ascii_case(wanted)
        {
            return Err(Stop::OtherThread);
        }
        for event in events {
            sink.emit(event);
        }
    }
    Ok(())
}

/// Judges a run whose output ended and whose process exited.
fn finish(
    request: &Request,
    invocation: Invocation<'_>,
    translator: &mut EventTranslator,
    finished: Finished,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let resuming = matches!(invocation, Invocation::Resume(_) | Invocation::Fork(_));
    if resuming
        && !translator.started()
        && (is_unknown_session(&finished.stderr_tail)
            || translator.last_error().is_some_and(is_unknown_session))
    {
        return Err(ResumeRejectReason::UnknownSession.into());
    }
    let previous = if resuming {
        request.session.state.as_ref()
    } else {
        None
    };
    let usage = translator.usage().map(|u| usage::this_turn(u, previous));

    let missing_thread = invocation != Invocation::Stateless && translator.thread_id().is_none();
    let clean = finished.status.is_success()
        && translator.turn_completed()
        && translator.failure().is_none()
        && !missing_thread;
    if !clean {
        let (kind, message) = match (translator.failure(), finished.status) {
            (Some(f), _) => (f.kind, f.message.clone()),
            (None, ExitStatus::Success) if missing_thread => (
                FailureKind::Protocol,
                "codex reported no thread id".to_owned(),
            ),
            (None, ExitStatus::Success) => (
                FailureKind::Protocol,
                "codex exited without completing the turn".to_owned(),
            ),
            (None, status) => (
                driver_cli::failure_kind(status).unwrap_or(FailureKind::Process),
                translator
                    .last_error()
                    .map(str::to_owned)
                    .unwrap_or(finished.stderr_tail),
            ),
        };
        return driver_cli::fail_turn(
            sink,
            translator.started(),
            RunFailure::new(kind, message),
            finished.status,
            translator.output(),
            usage,
        );
    }

    let checkpoint = translator
        .thread_id()
        .filter(|_| invocation != Invocation::Stateless)
        .map(|thread_id| {
            let mut state = SessionState::new(thread_id);
            if let Some(total) = translator.usage() {
                state
                    .data
                    .insert(usage::TOTAL_KEY.to_owned(), usage::encode(total));
            }
            driver_cli::checkpoint(request, state, &CODEX_CODEC)
        });
    let closing = translator.close_open_calls();
    Ok(driver_cli::finish_turn(
        sink,
        closing,
        translator.output(),
        usage,
        checkpoint,
    ))
}

#[async_trait::async_trait]
impl Driver for CodexDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(DRIVER_TYPE, "Codex CLI").with_capabilities(
            Capabilities::none()
                .with_resume(true)
                .with_fork(true)
                .with_streaming(true)
                .with_mcp_transport(TransportKind::StreamableHttp)
                .with_mcp_transport(TransportKind::Stdio),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.options.binary.as_os_str().is_empty() {
            return Err(ConfigError::missing("binary"));
        }
        if let Some(provider) = &self.options.provider {
            if !is_config_key(&provider.id) {
                return Err(ConfigError::invalid(
                    "provider.id",
                    "must be 1-64 ASCII letters, digits, `-` or `_`",
                ));
            }
            if !(provider.base_url.starts_with("http://")
                || provider.base_url.starts_with("https://"))
            {
                return Err(ConfigError::invalid(
                    "provider.base_url",
                    "must be an http or https URL",
                ));
            }
            if provider
                .env_key
                .as_deref()
                .is_some_and(|k| k.is_empty() || k.contains(['=', '\0']))
            {
                return Err(ConfigError::invalid(
                    "provider.env_key",
                    "must be an environment variable name",
                ));
            }
        }
        if self.options.model.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::invalid("model", "must not be empty"));
        }
        Ok(())
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let (invocation, args) = self.invocation(&request)?;
        self.check_version()
            .await
            .map_err(CliError::into_driver_error)?;

        let redactor = request.redactor();
        let mut command = CliCommand::new(&self.options.binary)
            .args(args)
            .secret_env(&request.runtime.secret_env)
            .stdin_text(request.prompt.clone())
            .redactor(redactor.clone());
        if let Some(workspace) = &request.workspace {
            command = command.cwd(workspace);
        }
        let mut process = CliProcess::spawn(&self.env, command, self.options.limits)
            .map_err(CliError::into_driver_error)?;

        let mut translator = EventTranslator::new(redactor);
        if let Err(stop) = stream(&mut process, &mut translator, invocation, &*sink).await {
            // The process (group included) is ended before the error is reported.
            let finished = process.terminate().await;
            return Err(match stop {
                Stop::OtherThread => ResumeRejectReason::UnknownSession.into(),
                Stop::Cli(err) => {
                    let failure = err.to_run_failure(Some(&finished.stderr_tail));
                    if translator.started() {
                        sink.emit(DriverEvent::RunFailed { kind: failure.kind });
                    }
                    DriverError::Failed(failure)
                }
            });
        }
        let finished = process.wait().await.map_err(CliError::into_driver_error)?;
        finish(&request, invocation, &mut translator, finished, &*sink)
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&CODEX_CODEC)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }
}

impl ConfigFingerprinter for CodexDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}
