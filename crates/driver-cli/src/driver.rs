//! [`CliDriver`]: the one implementation of [`Driver`] for every CLI, over a [`Dialect`].
//!
//! One turn, in this order for every CLI:
//! 1. the common options, that the environment serves the dialect's runtime (its state
//!    directory and variable exist only then), and the dialect's own options
//!    ([`Driver::validate_config`]);
//! 2. the request's needs against the descriptor, the [`SessionPlan`] (guard checked, a
//!    host-chosen id drawn), the dialect's request checks and its config files: everything
//!    that can be refused is refused here, before anything runs;
//! 3. the version probe (once per driver);
//! 4. the config files put in place: a per-run file, or namespace files under the turn lock;
//! 5. the dialect's invocation, and the turn's one redactor ([`turn_redactor`]) for both its
//!    process and its translator, spawned in the namespace's environment;
//! 6. the one event loop ([`crate::turn`]) and the one judgement.

pub(crate) mod options;
mod prewarm;
mod side;
pub(crate) mod turn;

use std::ffi::OsString;
use std::sync::Arc;

use compat_fingerprint::Fingerprint;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, ConfigFingerprinter, Descriptor, Driver,
    DriverError, EventSink, FailureKind, Prewarmed, ProcessLifecycle, Redactor, Request, Response,
    RunFailure, SessionCodec, SteerError,
};
use runtime_env::RuntimeEnv;

use crate::dialect::session::SessionPlan;
use crate::dialect::{ConfigFiles, Dialect, Invocation, NamespaceConfig, NewSessionId, Turn};
use crate::driver::options::CommonOptions as _;
use crate::driver::options::ProcessMode;
use crate::resident::ResidentProcess;
use driver_process::command::CliCommand;
use driver_process::error::ProcessError;
use driver_process::files::RunFiles;
use driver_process::pool::{ConversationKey, PoolStats, ProcessPool};
use driver_process::probe::VersionCheck;
use driver_process::turn_lock::NamespaceFiles;
use driver_process::turn_lock::TurnLock;
use driver_process::turn_lock::TurnLockError;
use driver_process::version::Version;

/// The turn lock's file in a runtime's state directory.
pub const TURN_LOCK_FILE: &str = "sdk-turn.lock";

/// The one redactor of a turn whose command is `invocation`: every secret value the driver
/// knows for it, so that no secret reaches an event, the output, a failure or the stderr
/// tail while another is hidden. It is assembled here only, and handed to both the
/// translator ([`Dialect::translator`]) and the process (its stderr tail, and a resident
/// turn's approval requests). It knows:
/// - the secrets the namespace injects into every child ([`RuntimeEnv::redactor`]);
/// - the driver's own, construction-time keys, which its dialect puts in the child's
///   environment ([`Invocation::secrets`]);
/// - the request's bindings, its runtime's and its services' ([`Request::redactor`]).
///
/// Config files add none: they name variables, never values ([`ConfigFiles`]).
pub(crate) fn turn_redactor(turn: &Turn<'_>, invocation: &Invocation) -> Redactor {
    let mut redactor = turn.env.redactor();
    redactor.merge(&turn.request.redactor());
    redactor.extend(invocation.secrets.iter().map(|b| b.value().clone()));
    redactor
}

/// A CLI driver: the CLI that `D` describes, one process per turn or resident
/// ([`ProcessMode`]), in a [`RuntimeEnv`] namespace whose state directory keeps the CLI's
/// sessions across host restarts.
///
/// Each driver crate names its instance (`pub type ClaudeCodeDriver = CliDriver<ClaudeCode>`,
/// over a dialect private to the crate) and is built from the crate's options.
#[derive(Debug)]
pub struct CliDriver<D: Dialect> {
    options: D,
    env: Arc<RuntimeEnv>,
    fingerprint: Fingerprint,
    version: VersionCheck,
    /// The resident processes, in [`ProcessMode::Resident`].
    pool: Option<ProcessPool<ConversationKey, ResidentProcess>>,
}

impl<D: Dialect> CliDriver<D> {
    /// The dialect's capabilities, with persistent processes and pre-warm in resident mode, approvals
    /// where the dialect's protocol delivers them (in either mode: a per-turn run that asks
    /// gets a one-turn protocol process), and steering in resident mode where the protocol
    /// steers (a per-turn CLI has read its whole stdin before the turn runs).
    fn capabilities(&self) -> Capabilities {
        let protocol = self.options.resident();
        self.options
            .capabilities()
            .with_persistent_processes(self.pool.is_some())
            .with_prewarm(self.prewarms())
            .with_approvals(protocol.is_some_and(|p| p.approvals()))
            .with_steer(self.pool.is_some() && protocol.is_some_and(|p| p.steers()))
    }

    /// A driver that runs the CLI in `env` with `options` (the driver crate's options type).
    pub fn new(env: Arc<RuntimeEnv>, options: impl Into<D>) -> Self {
        let options: D = options.into();
        let builder = ConfigFingerprintBuilder::new(options.identity().driver_type)
            .opt_str("model", options.cli().model.as_deref());
        let fingerprint = options
            .fingerprint(builder)
            .str("namespace", env.namespace().as_str())
            .str("isolation_level", env.level().name())
            .finish();
        let pool = match options.cli().process_mode {
            ProcessMode::Resident(limits) => Some(ProcessPool::new(limits)),
            ProcessMode::PerTurn => None,
        };
        Self {
            options,
            env,
            fingerprint,
            version: VersionCheck::new(),
            pool,
        }
    }

    /// The resident-process pool's counts and decisions so far; `None` with one process per
    /// turn.
    pub fn pool_stats(&self) -> Option<PoolStats> {
        self.pool.as_ref().map(ProcessPool::stats)
    }

    /// The options.
    pub fn options(&self) -> &D::Target {
        &self.options
    }

    /// The dialect: what this CLI does differently (for benchmarks and the driver crate's
    /// own tests; a host has no use for it).
    pub fn dialect(&self) -> &D {
        &self.options
    }

    /// The runtime's registry entry (its descriptor names the state directory).
    pub fn runtime(&self) -> &'static crate::Runtime {
        self.options.runtime()
    }

    /// The runtime environment.
    pub fn runtime_env(&self) -> &RuntimeEnv {
        &self.env
    }

    /// Runs `<binary> --version` once (later calls return the cached version) and checks it
    /// against the minimum version. Hosts may call it at startup, to learn of a wrong binary
    /// path before any Thread runs; [`Driver::run`] calls it before the first turn, and a
    /// binary that cannot be started fails that turn with a
    /// [`RunFailure::program`](driver_spi::RunFailure::program) naming its path. (The
    /// binary is not checked when the driver is built: behind a worker launched with a
    /// prefix, such as `ssh` or `docker exec`, it lives on another file system.)
    ///
    /// # Errors
    /// [`ProcessError::NotFound`], [`ProcessError::NotExecutable`],
    /// [`ProcessError::VersionTooOld`], [`ProcessError::VersionUnparseable`] and the other
    /// errors of starting the binary.
    pub async fn check_version(&self) -> Result<Version, ProcessError> {
        let cli = self.options.cli();
        self.version
            .get(
                &self.env,
                &cli.binary,
                cli.minimum_version,
                cli.version_probe_timeout,
            )
            .await
    }

    /// The arguments the CLI would get for `request` (without the program), after the checks
    /// [`Driver::run`] makes before it runs anything. A dry run: nothing is spawned, written
    /// or locked, and a per-run file is shown as `<run-dir>/<name>`. Secret values never
    /// appear (only variable names).
    ///
    /// # Errors
    /// The [`DriverError`] that [`Driver::run`] would return before spawning.
    pub fn command_line(&self, request: &Request) -> Result<Vec<String>, DriverError> {
        let new_id = uuid::Uuid::now_v7().to_string();
        let (plan, config, resident) = self.prepare(request, &new_id)?;
        let shown;
        let run_file = match &config {
            ConfigFiles::RunFile { name, .. } => {
                shown = std::path::PathBuf::from(format!("<run-dir>/{name}"));
                Some(shown.as_path())
            }
            _ => None,
        };
        let turn = Turn {
            env: &self.env,
            request,
            plan,
            run_file,
            resident,
        };
        Ok(self.options.invocation(&turn)?.args)
    }

    /// Whether a turn of `request` runs on a process speaking the dialect's resident
    /// protocol ([`Turn::resident`]): in resident mode, for a per-turn run whose policy asks
    /// the host (a per-turn CLI cannot ask), and always for a CLI that speaks only its
    /// protocol ([`ResidentProtocol::per_turn_cli`](crate::ResidentProtocol::per_turn_cli)).
    fn resident_turn(&self, request: &Request) -> bool {
        let Some(protocol) = self.options.resident() else {
            return false;
        };
        let asking = request.permissions.asks() && protocol.approvals();
        self.pool.is_some() || asking || !protocol.per_turn_cli()
    }

    /// Step 2: what can be refused before anything runs; the turn's plan, config files and
    /// whether it is [resident](Turn::resident) (the dialect's config sees it).
    fn prepare<'r>(
        &self,
        request: &'r Request,
        new_id: &'r str,
    ) -> Result<(SessionPlan<'r>, ConfigFiles, bool), DriverError> {
        self.validate_config()?;
        self.capabilities().check(request)?;
        let new_id =
            (self.options.identity().new_session_id == NewSessionId::Host).then_some(new_id);
        let plan = SessionPlan::of(request, self.options.identity(), new_id)?;
        if request.model.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::invalid("model", "must not be empty").into());
        }
        self.options.check_request(request)?;
        let resident = self.resident_turn(request);
        let turn = Turn {
            env: &self.env,
            request,
            plan,
            run_file: None,
            resident,
        };
        let config = self.options.config(&turn)?;
        Ok((plan, config, resident))
    }

    /// Steps 5 and 6 with the config files in place.
    async fn spawn_and_drive(
        &self,
        turn: &Turn<'_>,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let request = turn.request;
        let mut invocation = self.options.invocation(turn)?;
        let stdin = invocation
            .stdin
            .take()
            .unwrap_or_else(|| request.prompt.clone());
        // One turn, one redactor: the process's stderr and the translator's events.
        let redactor = turn_redactor(turn, &invocation);
        let translator = self.options.translator(request, redactor.clone());
        let command = self
            .command(request, invocation, redactor)
            .stdin_text(stdin);
        crate::driver::turn::drive(&self.options, &self.env, command, turn, translator, sink).await
    }

    /// The command of `invocation` for `request`: the binary, its argv and variables, the
    /// request's and the invocation's secrets, the workspace, and the turn's `redactor` (see
    /// [`turn_redactor`]).
    fn command(&self, request: &Request, invocation: Invocation, redactor: Redactor) -> CliCommand {
        let mut command = CliCommand::new(&self.options.cli().binary, redactor)
            .args(invocation.args.into_iter().map(OsString::from))
            .request_env(&request.runtime.secret_env)
            .secret_env(&invocation.secrets);
        for (name, value) in invocation.vars {
            command = command.var(name, value);
        }
        if let Some(workspace) = &request.workspace {
            command = command.cwd(workspace);
        }
        command
    }

    /// Step 4 for namespace files: the turn lock, then the files; both released (files
    /// first) when the turn ends or its future is dropped.
    async fn with_namespace_files(
        &self,
        turn: &Turn<'_>,
        config: NamespaceConfig,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let lock = self.turn_lock().await?;
        let NamespaceConfig { paths, contents } = config;
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let files = NamespaceFiles::install(
            &self.env,
            &self.options.runtime().descriptor,
            &paths,
            contents,
        )?;
        let result = self.spawn_and_drive(turn, sink).await;
        // A file that cannot be put back holds variable names only; the turn's outcome stands.
        if let Err(e) = files.restore() {
            tracing::warn!(error = %e, "could not restore the namespace's config files");
        }
        drop(lock);
        result
    }

    async fn turn_lock(&self) -> Result<TurnLock, DriverError> {
        // Created once under the config lock (with runtime-env's directory checks), so it is
        // never replaced while someone holds it.
        let runtime = &self.options.runtime().descriptor;
        let path = {
            let lock = self.env.lock_config().map_err(ProcessError::from)?;
            if lock
                .read(runtime, TURN_LOCK_FILE)
                .map_err(ProcessError::from)?
                .is_none()
            {
                lock.write(runtime, TURN_LOCK_FILE, b"")
                    .map_err(ProcessError::from)?;
            }
            self.env
                .state_dir(runtime)
                .map_err(ProcessError::from)?
                .join(TURN_LOCK_FILE)
        };
        let wait = self.options.cli().limits.total_timeout;
        TurnLock::acquire(&path, wait).await.map_err(|err| {
            let kind = match err {
                TurnLockError::TimedOut { .. } => FailureKind::Timeout,
                _ => FailureKind::Other,
            };
            let mut message = err.to_string();
            if let Some(source) = std::error::Error::source(&err) {
                message.push_str(&format!(": {source}"));
            }
            DriverError::Failed(RunFailure::new(kind, message))
        })
    }
}

#[async_trait::async_trait]
impl<D: Dialect> Driver for CliDriver<D> {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new(
            self.options.identity().driver_type,
            self.options.identity().display_name,
        )
        .with_capabilities(self.capabilities())
        .with_endpoint_vars(
            self.options
                .runtime()
                .descriptor
                .endpoint_vars
                .iter()
                .copied(),
        )
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        let cli = self.options.cli();
        if cli.binary.as_os_str().is_empty() {
            return Err(ConfigError::missing("binary"));
        }
        if cli.model.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::invalid("model", "must not be empty"));
        }
        // Its state directory and variable exist only in an environment that serves it.
        if self
            .env
            .state_dir(&self.options.runtime().descriptor)
            .is_err()
        {
            return Err(ConfigError::invalid(
                "runtime_env",
                "does not serve this driver's runtime: name it in RuntimeEnvBuilder::runtimes",
            ));
        }
        if self.pool.is_some() && self.options.resident().is_none() {
            return Err(ConfigError::invalid(
                "process_mode",
                "this CLI has no resident mode: use ProcessMode::PerTurn",
            ));
        }
        self.options.validate(&self.env)
    }

    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let new_id = uuid::Uuid::now_v7().to_string();
        let (plan, config, resident) = self.prepare(&request, &new_id)?;
        if self.options.probes_version() {
            self.check_version().await?;
        }
        let protocol = self.options.resident();
        let turn = Turn {
            env: &self.env,
            request: &request,
            plan,
            run_file: None,
            resident,
        };
        if let (Some(protocol), true) = (protocol, turn.resident) {
            // A per-turn run whose policy asks the host (a per-turn CLI cannot ask): a
            // one-turn protocol process in a pool of its own, closed after the turn, so no
            // limit beyond the documented ones applies and no run closes another's process.
            let one_turn;
            let pool = match &self.pool {
                Some(pool) => pool,
                None => {
                    one_turn = ProcessPool::new(
                        driver_process::pool::PoolLimits::default().with_max_live(1),
                    );
                    &one_turn
                }
            };
            let command = |invocation, redactor| self.command(&request, invocation, redactor);
            let result = crate::resident::run(
                &self.options,
                protocol,
                pool,
                &turn,
                config,
                command,
                &*sink,
            )
            .await;
            if self.pool.is_none() {
                pool.close().await;
            }
            return result;
        }
        // One process per turn takes no follow-up: each is refused as it arrives.
        let refusing = request.steering.refuse_all(SteerError::Unsupported);
        let work = async {
            match config {
                ConfigFiles::None => self.spawn_and_drive(&turn, &*sink).await,
                ConfigFiles::RunFile { name, contents } => {
                    let files = RunFiles::create(
                        &self.env,
                        &self.options.runtime().descriptor,
                        request.run_id.as_str(),
                    )?;
                    let path = files.write(name, &contents)?;
                    let turn = Turn {
                        run_file: Some(&path),
                        ..turn
                    };
                    // Removed whatever happened; a failure to remove is not the run's failure.
                    let result = self.spawn_and_drive(&turn, &*sink).await;
                    drop(files);
                    result
                }
                ConfigFiles::Namespace(config) => {
                    self.with_namespace_files(&turn, config, &*sink).await
                }
            }
        };
        tokio::select! {
            result = work => result,
            never = refusing => match never {},
        }
    }

    /// In resident mode: the run's checks, then its process started and its session opened
    /// without a prompt (resident mode's pre-warm, `docs/drivers.md`); with one process per turn,
    /// [`Unsupported::Prewarm`](driver_spi::Unsupported::Prewarm).
    async fn prewarm(&self, request: Request) -> Result<Prewarmed, DriverError> {
        self.prewarm_request(request).await
    }

    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        Some(&self.options.identity().codec)
    }

    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        Some(self)
    }

    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        self.pool.as_ref().map(|_| self as &dyn ProcessLifecycle)
    }

    /// The namespace of the driver's [`RuntimeEnv`]: the CLI's sessions live in its state.
    fn credential_namespace(&self) -> Option<&str> {
        Some(self.env.namespace().as_str())
    }
}

/// Closes the resident processes: idle ones now, busy ones when their turn ends. Says which
/// conversations a live resident process holds (its pool's place for the session id), and
/// when processes end.
#[async_trait::async_trait]
impl<D: Dialect> ProcessLifecycle for CliDriver<D> {
    async fn close_processes(&self) -> Result<(), DriverError> {
        if let Some(pool) = &self.pool {
            pool.close().await;
        }
        Ok(())
    }

    fn holds_conversation(&self, session_id: &str) -> bool {
        self.pool.as_ref().is_some_and(|pool| {
            pool.holds(&ConversationKey::new(
                self.env.namespace().clone(),
                session_id,
            ))
        })
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.pool.as_ref().map(ProcessPool::changes)
    }
}

impl<D: Dialect> ConfigFingerprinter for CliDriver<D> {
    fn config_fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}
