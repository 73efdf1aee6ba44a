//! [`CliOptions`]: the options every CLI driver has, and [`CommonOptions`], their builder
//! methods on every dialect's options type.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Dialect, Limits, Version};

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

    /// The binary.
    fn binary(&self) -> &Path {
        &self.cli().binary
    }

    /// The default model.
    fn model(&self) -> Option<&str> {
        self.cli().model.as_deref()
    }
}
