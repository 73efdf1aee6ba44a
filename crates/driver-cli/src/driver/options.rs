//! [`CliOptions`]: the options every CLI driver has, and [`CommonOptions`], their builder
//! methods on every dialect's options type.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dialect::Dialect;
use driver_process::command::Limits;
use driver_process::pool::PoolLimits;
use driver_process::version::Version;

/// How a CLI driver runs its turns.
///
/// Not part of the config fingerprint: both modes share the session codec, so a Thread
/// started in one continues in the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessMode {
    /// A new process for every turn, ended when the turn ends. The default: nothing outlives
    /// a turn, and every CLI supports it.
    #[default]
    PerTurn,
    /// A resident process per conversation, kept between turns in a pool with these limits,
    /// for the dialects whose CLI has a resident mode (Codex's `app-server`); refused by
    /// [`Driver::validate_config`](driver_spi::Driver::validate_config) for the others. A
    /// turn reuses its conversation's process only while the process's exact launch
    /// configuration (its private [`ProcessSignature`](driver_spi::ProcessSignature)) is
    /// unchanged; otherwise the old process ends before a new one resumes the session.
    Resident(PoolLimits),
}

/// The options every CLI driver has: the binary, the default model, the limits of each run
/// and the version check. Of these only the model is part of the config fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CliOptions {
    /// The executable: a path, or a name looked up in the child's `PATH`.
    pub binary: PathBuf,
    /// The default model; a request's model overrides it.
    pub model: Option<String>,
    /// Time, line and stderr limits of each run.
    pub limits: Limits,
    /// The oldest accepted `--version`.
    pub minimum_version: Version,
    /// How long the `--version` probe may take.
    pub version_probe_timeout: Duration,
    /// One process per turn, or resident processes.
    pub process_mode: ProcessMode,
}

impl CliOptions {
    /// Options for `binary` with the oldest accepted version `minimum_version`, no default
    /// model, the default [`Limits`] and a 30 s version probe.
    pub fn new(binary: impl Into<PathBuf>, minimum_version: Version) -> Self {
        Self {
            binary: binary.into(),
            model: None,
            limits: Limits::default(),
            minimum_version,
            version_probe_timeout: Duration::from_secs(30),
            process_mode: ProcessMode::PerTurn,
        }
    }
}

/// Builder methods for the [`CliOptions`] of every dialect's options type. Each driver crate
/// re-exports this trait beside its options.
pub trait CommonOptions: Clone + fmt::Debug + Send + Sync + Sized + 'static {
    /// The dialect of the one CLI driver these options configure.
    type Dialect: Dialect<Target = Self> + From<Self>;

    /// The common options.
    fn cli(&self) -> &CliOptions;

    /// The common options, to change.
    fn cli_mut(&mut self) -> &mut CliOptions;

    /// The executable: a path, or a name looked up in the child's `PATH`.
    fn with_binary(mut self, binary: impl Into<PathBuf>) -> Self {
        self.cli_mut().binary = binary.into();
        self
    }

    /// The default model; a request's model overrides it. Part of the config fingerprint.
    fn with_model(mut self, model: impl Into<String>) -> Self {
        self.cli_mut().model = Some(model.into());
        self
    }

    /// Time, line and stderr limits of each run.
    fn with_limits(mut self, limits: Limits) -> Self {
        self.cli_mut().limits = limits;
        self
    }

    /// The oldest accepted `--version`.
    fn with_minimum_version(mut self, version: Version) -> Self {
        self.cli_mut().minimum_version = version;
        self
    }

    /// One process per turn (the default), or resident processes in a pool.
    fn with_process_mode(mut self, mode: ProcessMode) -> Self {
        self.cli_mut().process_mode = mode;
        self
    }

    /// The binary.
    fn binary(&self) -> &Path {
        &self.cli().binary
    }

    /// The default model.
    fn model(&self) -> Option<&str> {
        self.cli().model.as_deref()
    }
}
