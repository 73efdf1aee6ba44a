//! [`GeminiDriver`]: one `gemini -p --output-format stream-json` process per turn.

use std::path::PathBuf;
use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use driver_cli::{CliCommand, CliError, CliProcess, Finished, Version, VersionCheck};
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver,
    DriverError, DriverEvent, EventSink, FailureKind, Request, Response, ResumeRejectReason,
    RunFailure, SessionCodec, Unsupported,
};
use driver_stream_json::SessionPlan;
use run_service::{EnvBinding, TransportKind};
use runtime_env::{IsolationLevel, RuntimeEnv, RuntimeKind};

use crate::argv::{self, Session};
use crate::codec::GEMINI_CODEC;
use crate::events::EventTranslator;
use crate::files;
use crate::fork;
use crate::judge::{Outcome, judge};
use crate::lock::{LOCK_FILE, LockError, TurnLock};
use crate::names::ToolNames;
use crate::options::GeminiOptions;
use crate::settings::{self, SettingsPlan};

/// The driver type: part of every Gemini Thread's fingerprint.
pub const DRIVER_TYPE: &str = "gemini";

/// The most Gemini reads from stdin; it silently cuts longer input (0.61.0).
const MAX_PROMPT_BYTES: usize = 8 << 20;

/// Drives the Gemini CLI: one `gemini -p --output-format stream-json` process per turn, in a
/// [`RuntimeEnv`] namespace whose `GEMINI_CLI_HOME` keeps the sessions across host restarts.
///
/// See the [crate docs](crate) for the argv, the settings file, the turn lock and the resume
/// rules.
#[derive(Debug)]
pub struct GeminiDriver {
    options: GeminiOptions,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
}

impl GeminiDriver {
    /// A driver that runs `gemini` in `env` with `options`.
    pub fn new(env: Arc<RuntimeEnv>, options: GeminiOptions) -> Self {
        let fingerprint = config_fingerprint(&options, &env);
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &GeminiOptions {
        &self.options
    }

    /// The runtime environment.
    pub fn runtime_env(&self) -> &RuntimeEnv {
        &self.env
    }

    /// Runs `gemini --version` once (later calls return the cached version) and checks it
    /// against the minimum version. [`Driver::run`] calls it before the first turn.
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

    /// The settings this driver lays over the namespace's `settings.json` for `request`:
    /// environment-variable names, never values. A dry run: nothing is written.
    ///
    /// # Errors
    /// [`DriverError::InvalidConfig`] for MCP servers that cannot be written (see the
    /// [crate docs](crate)).
    pub fn settings_json(&self, request: &Request) -> Result<serde_json::Value, DriverError> {
        let plan = SettingsPlan {
            auth_type: self.options.auth_type().map(|a| a.as_str()),
            offline: self.options.offline,
            trust: self.options.trust_mcp_servers,
            instructions: request.instructions.is_some(),
        };
        settings::settings(&request.mcp, &request.mcp_secret_names(), plan)
            .map_err(|e| ConfigError::invalid("mcp", e.rule()).into())
    }

    /// The command of one turn: argv, plain variables, the secrets and the prompt on stdin.
    fn command(&self, request: &Request, session: Session<'_>) -> CliCommand {
        let names: Vec<&str> = request.mcp.iter().map(|s| s.name.as_str()).collect();
        let args = argv::build(&self.options, request.model.as_deref(), &names, session);
        let mut command = CliCommand::new(&self.options.binary)
            .args(args)
            .secret_env(&request.runtime.secret_env)
            .stdin_text(request.prompt.clone())
            .redactor(self.redactor(request));
        if let Some(url) = &self.options.base_url {
            command = command.var("GOOGLE_GEMINI_BASE_URL", url.as_str());
        }
        if let Some(key) = &self.options.api_key {
            // Last, so that it wins over a namespace secret of the same name.
            command = command.secret_env([&EnvBinding::new("GEMINI_API_KEY", key.clone())]);
        }
        if let Some(workspace) = &request.workspace {
            command = command.cwd(workspace);
        }
        command
    }

    /// The request's secrets and the key.
    fn redactor(&self, request: &Request) -> driver_spi::Redactor {
        let mut redactor = request.redactor();
        if let Some(key) = &self.options.api_key {
            redactor.insert(key.clone());
        }
        redactor
    }

    fn gemini_dir(&self) -> PathBuf {
        self.env.state_dir(RuntimeKind::Gemini).join(".gemini")
    }

    /// Spawns the turn's process, forwards its events and waits for it.
    async fn turn(
        &self,
        command: CliCommand,
        translator: &mut EventTranslator,
        plan: SessionPlan<'_>,
        sink: &dyn EventSink,
    ) -> Result<Finished, DriverError> {
        let mut process = CliProcess::spawn(&self.env, command, self.options.limits)
            .map_err(CliError::into_driver_error)?;
        // Whether `RunStarted` reached the sink (the translator may have produced one that
        // is dropped below).
        let mut emitted = false;
        let stop = loop {
            let value = match process.next_json().await {
                Ok(Some(value)) => value,
                Ok(None) => break None,
                Err(err) => break Some(Stop::Cli(err)),
            };
            let Ok(events) = translator.translate(&value) else {
                let line = process.line_number();
                break Some(Stop::Cli(CliError::MalformedJson { line }));
            };
            // Checked before anything is emitted: `init` is the first event.
            if let Some(got) = translator.session_id() {
                match plan {
                    SessionPlan::Start(want) | SessionPlan::Resume(want)
                        if !got.eq_ignore_ascii_case(want) =>
                    {
                        break Some(Stop::OtherSession);
                    }
                    SessionPlan::Fork(parent) if got.eq_ignore_ascii_case(parent) => {
                        break Some(Stop::NotForked);
                    }
                    _ => {}
                }
            }
            for event in events {
                emitted = true;
                sink.emit(event);
            }
        };
        let Some(stop) = stop else {
            return process.wait().await.map_err(CliError::into_driver_error);
        };
        // The process (group included) is ended before the error is reported.
        let finished = process.terminate().await;
        let error = match stop {
            Stop::OtherSession if plan.is_resuming() && !emitted => {
                return Err(ResumeRejectReason::UnknownSession.into());
            }
            Stop::OtherSession => RunFailure::new(
                FailureKind::Protocol,
                "gemini reported another session id than the one it was given",
            ),
            Stop::NotForked => RunFailure::new(
                FailureKind::Protocol,
                "gemini continued the session it was asked to fork",
            ),
            Stop::Cli(err) => err.to_run_failure(Some(&finished.stderr_tail)),
        };
        if emitted {
            sink.emit(DriverEvent::RunFailed { kind: error.kind });
        }
        Err(DriverError::Failed(error))
    }
}

/// Why reading a turn's events stopped early.
enum Stop {
    /// The output broke a limit or the protocol.
    Cli(CliError),
    /// `init` named another session than the one asked for.
    OtherSession,
    /// `init` of a fork named the parent session.
    NotForked,
}

fn failed(kind: FailureKind, message: impl Into<String>) -> DriverError {
    DriverError::Failed(RunFailure::new(kind, message))
}

fn config_fingerprint(options: &GeminiOptions, env: &RuntimeEnv) -> Fingerprint {
    ConfigFingerprintBuilder::new(DRIVER_TYPE)
        .opt_str("model", options.model.as_deref())
        .opt_str("base_url", options.base_url.as_deref())
        .opt_str("auth_type", options.auth_type().map(|a| a.as_str()))
        .bool("trust_mcp_servers", options.trust_mcp_servers)
        .str("namespace", env.namespace().as_str())
        .str("isolation_level", env.level().name())
        .finish()
}

impl From<LockError> for DriverError {
    fn from(err: LockError) -> Self {
        let kind = match err {
            LockError::TimedOut { .. } => FailureKind::Timeout,
            LockError::Io { .. } => FailureKind::Other,
        };
        let mut message = err.to_string();
        if let Some(source) = std::error::Error::source(&err) {
            message.push_str(&format!(": {source}"));
        }
        failed(kind, message)
    }
}

#[async_trait::async_trait]
impl Driver for GeminiDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(DRIVER_TYPE, "Gemini CLI").with_capabilities(
            Capabilities::none()
                .with_resume(true)
                .with_fork(true)
                .with_streaming(true)
                .with_mcp_transport(TransportKind::StreamableHttp)
                .with_mcp_transport(TransportKind::Sse)
                .with_mcp_transport(TransportKind::Stdio),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        if self.options.binary.as_os_str().is_empty() {
            return Err(ConfigError::missing("binary"));
        }
        if let Some(url) = self.options.base_url.as_deref()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(ConfigError::invalid(
                "base_url",
                "must be an http or https URL",
            ));
        }
        if self.options.model.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::invalid("model", "must not be empty"));
        }
        if matches!(self.env.level(), IsolationLevel::Shared) {
            return Err(ConfigError::invalid(
                "isolation_level",
                "the Gemini driver installs its .gemini/settings.json for every turn, so it \
                 needs a namespaced or ephemeral runtime environment, not the host user's HOME",
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.validate_config()?;
        self.descriptor().capabilities.check(&request)?;
        // The host chooses a new session's id, so it is known before Gemini starts.
        let new_id = uuid::Uuid::now_v7().to_string();
        let plan = SessionPlan::of(&request, &GEMINI_CODEC, &new_id)?;
        if request.model.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::invalid("model", "must not be empty").into());
        }
        if request.prompt.len() > MAX_PROMPT_BYTES {
            return Err(
                ConfigError::invalid("prompt", "Gemini reads at most 8 MiB of prompt").into(),
            );
        }
        let settings = self.settings_json(&request)?;
        self.check_version()
            .await
            .map_err(CliError::into_driver_error)?;

        let lock = TurnLock::acquire(
            &self.gemini_dir().join(LOCK_FILE),
            self.options.limits.total_timeout,
        )
        .await?;
        // Looked up under the lock, so that no turn of the session is still recording it.
        let fork_file;
        let session = match plan {
            SessionPlan::Start(id) => Session::Start(id),
            SessionPlan::Resume(id) => Session::Resume(id),
            SessionPlan::Fork(id) => {
                fork_file = fork::session_file(&self.gemini_dir(), id)
                    .ok_or(ResumeRejectReason::UnknownSession)?;
                Session::Fork(&fork_file)
            }
            SessionPlan::Stateless => Session::Stateless,
            _ => return Err(Unsupported::Resume.into()),
        };
        let command = self.command(&request, session);
        let files = files::install(&self.env, settings, request.instructions.as_deref())
            .map_err(CliError::into_driver_error)?;
        let names = ToolNames::new(request.mcp.iter().map(|s| s.name.as_str()));
        let mut translator = EventTranslator::new(self.redactor(&request), names);
        let finished = self.turn(command, &mut translator, plan, &*sink).await;
        // Put back, and the lock released, only once the process has ended; a cancelled run
        // does both when its future is dropped.
        // A file that cannot be put back holds variable names only; the turn's outcome
        // stands.
        if let Err(e) = files.restore() {
            tracing::warn!(error = %e, "could not restore the namespace's Gemini settings");
        }
        drop(lock);
        let outcome = Outcome {
            plan,
            translator,
            finished: finished?,
        };
        judge(&request, outcome, &*sink)
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&GEMINI_CODEC)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }
}

impl ConfigFingerprinter for GeminiDriver {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}
