//! [`RuntimeEnv`]: the layout, child environment and helpers of one runtime environment, its
//! builder, the ephemeral-session guard and sweep, and the config lock.
//!
//! # Layout
//!
//! ```text
//! <base>/                                   0700 (or an existing, not group/world-writable dir)
//!   shared.lock                             config lock of the shared level
//!   ns/<namespace dir>/                     namespaced root
//!     .config.lock
//!     home/ config/ data/ state/ cache/ run/ tmp/
//!     sessions/<session dir>/               ephemeral root
//!       .live                               held locked while the session lives
//!       .config.lock
//!       home/ config/ data/ state/ cache/ run/ tmp/
//! ```
//!
//! `home/` holds the state directory of each runtime the environment serves (`.codex`,
//! `.claude`, …), created 0700 at build, before any runtime starts. Every directory is 0700
//! and every file 0600.

mod builder;
mod config_lock;
mod ephemeral;
mod layout;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::auth::{self, AuthStatus};
use crate::child_env::{ChildEnv, HostEnv, XDG_SEARCH_DIRS};
use crate::error::Error;
use crate::lock::FileLock;
use crate::namespace::CredentialNamespace;
use crate::paths::Anchors;
use crate::policy::{IsolationLevel, IsolationMode, PolicyWarning, Tenancy, Verdict};
use crate::runtime::RuntimeDescriptor;
use crate::secure_fs::{self, Strictness};
use crate::snapshot::{self, Snapshot};
use crate::summary::RuntimeEnvSummary;
use redaction::Redactor;

/// The variables a namespaced or ephemeral layout sets, and their directory under the root.
pub const LAYOUT_VARS: &[(&str, &str)] = &[
    ("HOME", "home"),
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_DATA_HOME", "data"),
    ("XDG_STATE_HOME", "state"),
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_RUNTIME_DIR", "run"),
    ("TMPDIR", "tmp"),
];

const NS_DIR: &str = "ns";
const SESSIONS_DIR: &str = "sessions";
const CREATING_PREFIX: &str = ".creating-";
const LIVE_LOCK: &str = ".live";
const CONFIG_LOCK: &str = ".config.lock";
const SHARED_LOCK: &str = "shared.lock";
/// Largest runtime file [`ConfigLock::read`] returns.
pub const MAX_RUNTIME_FILE: u64 = 16 << 20;

/// Whether a variable is set by every runtime environment itself (HOME, XDG_*, TMPDIR) and
/// cannot be overridden. An environment also reserves the state variables of the runtimes it
/// serves: see [`RuntimeEnv::is_reserved_var`].
pub fn is_reserved_var(name: &str) -> bool {
    LAYOUT_VARS.iter().any(|(v, _)| *v == name) || XDG_SEARCH_DIRS.iter().any(|(v, _)| *v == name)
}

pub use builder::RuntimeEnvBuilder;
pub use config_lock::ConfigLock;
use ephemeral::{EphemeralGuard, create_session};
pub use ephemeral::{SweepReport, sweep_ephemeral};
use layout::{namespace_root, private_layout, shared_layout};

/// One runtime environment: where a runtime's state lives and what its process sees.
///
/// Build it with [`RuntimeEnv::builder`]. Dropping an ephemeral environment removes its
/// session tree.
#[derive(Debug)]
pub struct RuntimeEnv {
    base: PathBuf,
    namespace: CredentialNamespace,
    cwd: PathBuf,
    level: IsolationLevel,
    mode: IsolationMode,
    tenancy: Tenancy,
    /// What the policy check concluded, kept so summaries report its warnings.
    verdict: Verdict,
    runtimes: Vec<&'static RuntimeDescriptor>,
    root: Option<PathBuf>,
    home: PathBuf,
    /// Each served runtime's state directory, by name.
    state_dirs: BTreeMap<&'static str, PathBuf>,
    lock_dir: PathBuf,
    lock_name: &'static str,
    child: ChildEnv,
    guard: Option<EphemeralGuard>,
}

impl RuntimeEnv {
    /// Starts a builder: state goes under `base_dir` (absolute; its parent must exist), for
    /// `namespace`, with the runtime working in `cwd` (absolute).
    pub fn builder(
        base_dir: impl Into<PathBuf>,
        namespace: CredentialNamespace,
        cwd: impl Into<PathBuf>,
    ) -> RuntimeEnvBuilder {
        RuntimeEnvBuilder {
            base: base_dir.into(),
            namespace,
            cwd: cwd.into(),
            level: IsolationLevel::Namespaced,
            mode: IsolationMode::Subprocess,
            tenancy: Tenancy::Multi,
            host: HostEnv::empty(),
            runtimes: Vec::new(),
            vars: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// The base directory.
    pub fn base_dir(&self) -> &Path {
        &self.base
    }

    /// The credential namespace.
    pub fn namespace(&self) -> &CredentialNamespace {
        &self.namespace
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The isolation level.
    pub fn level(&self) -> &IsolationLevel {
        &self.level
    }

    /// The isolation mode.
    pub fn mode(&self) -> IsolationMode {
        self.mode
    }

    /// The tenancy the policy was checked for.
    pub fn tenancy(&self) -> Tenancy {
        self.tenancy
    }

    /// The warnings of the policy check this environment passed (such as
    /// [`PolicyWarning::SameUserTenants`](crate::PolicyWarning::SameUserTenants) for
    /// multi-tenant use of a mode that does not separate principals), for the host to act on
    /// or report; the summary carries them.
    pub fn policy_warnings(&self) -> &[PolicyWarning] {
        self.verdict.warnings()
    }

    /// The runtimes this environment serves, in the order the builder was given them.
    pub fn runtimes(&self) -> &[&'static RuntimeDescriptor] {
        &self.runtimes
    }

    /// The namespace or session root (`None` at the shared level).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The child's HOME.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A runtime's state directory (the value of its state variable).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRuntime`] when the environment does not serve `runtime`: it has no
    /// state directory here, and guessing one (the host's HOME at the shared level) would put
    /// state where nobody chose to.
    pub fn state_dir(&self, runtime: &RuntimeDescriptor) -> Result<&Path, Error> {
        self.anchors(runtime).map(|a| a.state_dir)
    }

    /// Whether a variable is set by this environment itself and cannot be overridden: HOME,
    /// XDG_*, TMPDIR ([`is_reserved_var`]) and the state variables of the runtimes it serves.
    pub fn is_reserved_var(&self, name: &str) -> bool {
        is_reserved_var(name) || self.runtimes.iter().any(|r| r.state_var == name)
    }

    /// The class of `name` if a request (a run service's binding) may not set it in this
    /// environment's children: what [`refused_request_var`](crate::refused_request_var) refuses
    /// for the runtimes served here, what [`is_reserved_var`](Self::is_reserved_var) names,
    /// and the secrets this environment injects (a binding would replace the namespace's
    /// model key: [`RefusedVar::ModelCredential`](crate::RefusedVar::ModelCredential)).
    pub fn refused_request_var(&self, name: &str) -> Option<crate::RefusedVar> {
        if self.is_reserved_var(name) {
            return Some(crate::RefusedVar::Managed);
        }
        crate::refused_request_var(name, &self.runtimes).or_else(|| {
            self.child
                .secret_names()
                .any(|injected| injected.eq_ignore_ascii_case(name))
                .then_some(crate::RefusedVar::ModelCredential)
        })
    }

    /// The child environment.
    pub fn child_env(&self) -> &ChildEnv {
        &self.child
    }

    /// A command for `program` with this environment applied (`env_clear` first) and `cwd` as
    /// its working directory. Convert it with `tokio::process::Command::from` when needed.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        self.child.apply_to(&mut cmd);
        cmd.current_dir(&self.cwd);
        cmd
    }

    /// A redactor that knows this environment's injected secrets.
    pub fn redactor(&self) -> Redactor {
        Redactor::with_secrets(self.child.secret_values().cloned())
    }

    /// The anchors of a served runtime's sources.
    pub(crate) fn anchors(&self, runtime: &RuntimeDescriptor) -> Result<Anchors<'_>, Error> {
        let unknown = || Error::UnknownRuntime {
            runtime: runtime.name,
        };
        let served = self
            .runtimes
            .iter()
            .find(|r| ***r == *runtime)
            .ok_or_else(unknown)?;
        let state_dir = self.state_dirs.get(served.name).ok_or_else(unknown)?;
        Ok(Anchors {
            runtime: served,
            home: &self.home,
            cwd: &self.cwd,
            state_dir,
        })
    }

    /// The anchors of every served runtime, in order.
    fn all_anchors(&self) -> impl Iterator<Item = Anchors<'_>> {
        self.runtimes.iter().filter_map(|r| self.anchors(r).ok())
    }

    /// The auth status of one runtime in this environment (no secret is read).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRuntime`] when the environment does not serve `runtime`.
    pub fn auth_status(&self, runtime: &RuntimeDescriptor) -> Result<AuthStatus, Error> {
        Ok(auth::detect(&self.anchors(runtime)?, &self.child))
    }

    /// The auth status of every runtime this environment serves.
    pub fn auth_statuses(&self) -> Vec<AuthStatus> {
        self.all_anchors()
            .map(|a| auth::detect(&a, &self.child))
            .collect()
    }

    /// A snapshot of the implicit sources of every runtime this environment serves.
    pub fn snapshot(&self) -> Snapshot {
        snapshot::take(self.all_anchors())
    }

    /// A summary without secrets, for debugging and support output.
    pub fn summary(&self) -> RuntimeEnvSummary {
        RuntimeEnvSummary::new(self)
    }

    /// Takes the exclusive config lock of this namespace (or session), blocking until it is
    /// free. Every writer of runtime config in the namespace should hold it.
    ///
    /// # Errors
    ///
    /// [`Error::Fs`] when the lock file is unsafe or cannot be opened or locked.
    pub fn lock_config(&self) -> Result<ConfigLock<'_>, Error> {
        if self.root.is_some() {
            secure_fs::check_dir(&self.lock_dir, Strictness::Private)?;
        }
        let lock = FileLock::acquire(&self.lock_dir, self.lock_name)?;
        Ok(ConfigLock {
            env: self,
            _lock: lock,
        })
    }

    /// Writes one runtime file under the config lock (atomic, 0600); see [`ConfigLock::write`].
    ///
    /// # Errors
    ///
    /// As [`RuntimeEnv::lock_config`] and [`ConfigLock::write`].
    pub fn write_runtime_file(
        &self,
        runtime: &RuntimeDescriptor,
        relative: &str,
        contents: &[u8],
    ) -> Result<PathBuf, Error> {
        self.lock_config()?.write(runtime, relative, contents)
    }

    /// Removes an ephemeral session's tree now, reporting failures (dropping does the same
    /// silently). A no-op for other levels.
    ///
    /// # Errors
    ///
    /// [`Error::Fs`] when the tree cannot be removed.
    pub fn close(mut self) -> Result<(), Error> {
        match self.guard.as_mut() {
            Some(g) => g.remove().map_err(Error::from),
            None => Ok(()),
        }
    }

    /// Placeholder anchors for summaries: `${CWD}`, `${ROOT}` (or `${HOME}` at the shared
    /// level) and `${BASE}`.
    pub(crate) fn summary_anchors(&self) -> Vec<(&'static str, &Path)> {
        let mut a = vec![
            ("${BASE}", self.base.as_path()),
            ("${CWD}", self.cwd.as_path()),
        ];
        match &self.root {
            Some(root) => a.push(("${ROOT}", root.as_path())),
            None => a.push(("${HOME}", self.home.as_path())),
        }
        a
    }

    fn strictness(&self) -> Strictness {
        if self.root.is_some() {
            Strictness::Private
        } else {
            Strictness::HostOwned
        }
    }
}
