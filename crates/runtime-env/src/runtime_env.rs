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
//! `home/` holds `.codex`, `.claude`, `.cursor`, `.codebuddy` and `.gemini`, all created 0700
//! before any runtime starts. Every directory is 0700 and every file 0600.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use secrecy::SecretString;

use crate::auth::{self, AuthStatus};
use crate::child_env::{self, ChildEnv, HostEnv, XDG_SEARCH_DIRS};
use crate::error::Error;
use crate::lock::FileLock;
use crate::namespace::{CredentialNamespace, SessionId};
use crate::paths::{self, Anchors};
use crate::policy::{self, IsolationLevel, IsolationMode, Tenancy};
use crate::redact::Redactor;
use crate::runtime::{Anchor, RuntimeKind, SourceKind};
use crate::secure_fs::{self, FsError, Strictness};
use crate::snapshot::{self, Snapshot};
use crate::summary::RuntimeEnvSummary;

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

/// Whether a variable is set by the runtime environment itself and cannot be overridden.
pub fn is_reserved_var(name: &str) -> bool {
    LAYOUT_VARS.iter().any(|(v, _)| *v == name)
        || XDG_SEARCH_DIRS.iter().any(|(v, _)| *v == name)
        || RuntimeKind::ALL
            .iter()
            .any(|k| k.descriptor().state_var == name)
}

/// Builder of a [`RuntimeEnv`]; see [`RuntimeEnv::builder`].
#[derive(Debug)]
pub struct RuntimeEnvBuilder {
    base: PathBuf,
    namespace: CredentialNamespace,
    cwd: PathBuf,
    level: IsolationLevel,
    mode: IsolationMode,
    tenancy: Tenancy,
    host: HostEnv,
    runtimes: Vec<RuntimeKind>,
    vars: Vec<(String, OsString)>,
    secrets: Vec<(String, SecretString)>,
}

impl RuntimeEnvBuilder {
    /// The isolation level (default [`IsolationLevel::Namespaced`]).
    pub fn level(mut self, level: IsolationLevel) -> Self {
        self.level = level;
        self
    }

    /// The isolation mode (default [`IsolationMode::Subprocess`]).
    pub fn mode(mut self, mode: IsolationMode) -> Self {
        self.mode = mode;
        self
    }

    /// The tenancy (default [`Tenancy::Multi`], the stricter policy).
    pub fn tenancy(mut self, tenancy: Tenancy) -> Self {
        self.tenancy = tenancy;
        self
    }

    /// The host environment that allow-listed variables are copied from (default: empty, so
    /// children get no host variable, not even PATH). Usually `HostEnv::capture()`.
    pub fn host_env(mut self, host: HostEnv) -> Self {
        self.host = host;
        self
    }

    /// The runtimes this environment serves (default: all). Each is policy-checked, and the
    /// auth status, snapshot and summary cover them.
    pub fn runtimes(mut self, runtimes: impl IntoIterator<Item = RuntimeKind>) -> Self {
        self.runtimes = runtimes.into_iter().collect();
        self.runtimes.sort();
        self.runtimes.dedup();
        self
    }

    /// Adds a plain (non-secret) variable, such as `ANTHROPIC_BASE_URL`. Credential-looking and
    /// reserved names are rejected by [`build`](Self::build).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// Injects a secret variable (an API key or token). It is applied last and is visible only
    /// to the child process.
    pub fn secret(mut self, name: impl Into<String>, value: SecretString) -> Self {
        self.secrets.push((name.into(), value));
        self
    }

    /// Checks the policy and inputs, creates the directories and assembles the child
    /// environment.
    ///
    /// # Errors
    ///
    /// [`Error::Policy`] for an unsafe combination, [`Error::Fs`] when a directory fails a
    /// safety check or cannot be created, and the variable errors for bad names.
    pub fn build(self) -> Result<RuntimeEnv, Error> {
        for &rt in &self.runtimes {
            policy::check_runtime(rt, &self.level, self.mode, self.tenancy)?;
        }
        secure_fs::require_absolute(&self.cwd).map_err(|_| Error::RelativeCwd)?;
        self.validate_vars()?;
        secure_fs::prepare_base(&self.base)?;

        let layout = match &self.level {
            IsolationLevel::Shared => shared_layout(&self.base, &self.host)?,
            IsolationLevel::Namespaced => {
                let root = namespace_root(&self.base, &self.namespace)?;
                private_layout(root.clone(), root, None)?
            }
            IsolationLevel::Ephemeral(session) => {
                let ns_root = namespace_root(&self.base, &self.namespace)?;
                let sessions =
                    secure_fs::ensure_dir(&ns_root, OsStr::new(SESSIONS_DIR), Strictness::Private)?;
                let (root, guard) = create_session(&sessions, session)?;
                private_layout(root.clone(), root, Some(guard))?
            }
        };

        let mut child = ChildEnv::default();
        for (k, v) in self.host.allowed() {
            child.set_copied(k.clone(), v.clone());
        }
        for (k, v) in self.vars {
            child.set_copied(k, v);
        }
        for (k, v) in &layout.vars {
            child.set_managed(*k, v.clone());
        }
        for (k, v) in self.secrets {
            child.set_secret(k, v);
        }

        Ok(RuntimeEnv {
            base: self.base,
            namespace: self.namespace,
            cwd: self.cwd,
            level: self.level,
            mode: self.mode,
            tenancy: self.tenancy,
            runtimes: self.runtimes,
            root: layout.root,
            home: layout.home,
            state_dirs: layout.state_dirs,
            lock_dir: layout.lock_dir,
            lock_name: layout.lock_name,
            child,
            guard: layout.guard,
        })
    }

    fn validate_vars(&self) -> Result<(), Error> {
        let mut seen = std::collections::BTreeSet::new();
        let plain = self.vars.iter().map(|(k, _)| (k, false));
        let secret = self.secrets.iter().map(|(k, _)| (k, true));
        for (name, is_secret) in plain.chain(secret) {
            if !child_env::is_valid_var_name(name) {
                return Err(Error::InvalidVarName { len: name.len() });
            }
            if is_reserved_var(name) {
                return Err(Error::ReservedVar { name: name.clone() });
            }
            if !is_secret && child_env::is_credential_var(name) {
                return Err(Error::CredentialVar { name: name.clone() });
            }
            // A plain variable may be given twice (last wins); a secret never shares a name.
            if is_secret && !seen.insert(name.as_str()) {
                return Err(Error::DuplicateVar { name: name.clone() });
            }
        }
        for (name, _) in &self.vars {
            if seen.contains(name.as_str()) {
                return Err(Error::DuplicateVar { name: name.clone() });
            }
        }
        Ok(())
    }
}

/// What a level's layout contributes to the environment.
struct Layout {
    root: Option<PathBuf>,
    home: PathBuf,
    vars: Vec<(&'static str, OsString)>,
    state_dirs: BTreeMap<RuntimeKind, PathBuf>,
    lock_dir: PathBuf,
    lock_name: &'static str,
    guard: Option<EphemeralGuard>,
}

fn namespace_root(base: &Path, ns: &CredentialNamespace) -> Result<PathBuf, FsError> {
    let dir = ns.dir_name();
    secure_fs::ensure_dirs(
        base,
        [OsStr::new(NS_DIR), OsStr::new(&dir)],
        Strictness::Private,
    )
}

fn private_layout(
    root: PathBuf,
    lock_dir: PathBuf,
    guard: Option<EphemeralGuard>,
) -> Result<Layout, Error> {
    let mut vars = Vec::new();
    let mut home = root.join("home");
    for (var, sub) in LAYOUT_VARS {
        let dir = secure_fs::ensure_dir(&root, OsStr::new(sub), Strictness::Private)?;
        if *var == "HOME" {
            home.clone_from(&dir);
        }
        vars.push((*var, dir.into_os_string()));
    }
    for (var, value) in XDG_SEARCH_DIRS {
        vars.push((*var, OsString::from(value)));
    }
    let mut state_dirs = BTreeMap::new();
    for kind in RuntimeKind::ALL {
        let d = kind.descriptor();
        let state = secure_fs::ensure_dirs(
            &home,
            d.state_subdir
                .split('/')
                .filter(|c| !c.is_empty())
                .map(OsStr::new),
            Strictness::Private,
        )?;
        for sub in d.private_subdirs {
            secure_fs::ensure_dir(&state, OsStr::new(sub), Strictness::Private)?;
        }
        vars.push((d.state_var, state.clone().into_os_string()));
        state_dirs.insert(kind, state);
    }
    Ok(Layout {
        root: Some(root),
        home,
        vars,
        state_dirs,
        lock_dir,
        lock_name: CONFIG_LOCK,
        guard,
    })
}

fn shared_layout(base: &Path, host: &HostEnv) -> Result<Layout, Error> {
    let home = host.absolute_path("HOME").ok_or(Error::HostHomeMissing)?;
    let mut vars = vec![("HOME", home.clone().into_os_string())];
    for (var, _) in LAYOUT_VARS.iter().filter(|(v, _)| *v != "HOME") {
        if let Some(p) = host.absolute_path(var) {
            vars.push((*var, p.into_os_string()));
        }
    }
    for (var, _) in XDG_SEARCH_DIRS {
        if let Some(v) = host.get(var).filter(|v| !v.is_empty()) {
            vars.push((*var, v.to_owned()));
        }
    }
    let mut state_dirs = BTreeMap::new();
    for kind in RuntimeKind::ALL {
        let d = kind.descriptor();
        // Only the host's own setting is passed on: setting a variable the host left unset
        // would move state (Claude keeps `.claude.json` in HOME unless CLAUDE_CONFIG_DIR is
        // set), and Codex refuses a CODEX_HOME that names a missing directory.
        let state = match host.absolute_path(d.state_var) {
            Some(p) => {
                vars.push((d.state_var, p.clone().into_os_string()));
                p
            }
            None => paths::join_rel(&home, d.state_subdir),
        };
        state_dirs.insert(kind, state);
    }
    Ok(Layout {
        root: None,
        home,
        vars,
        state_dirs,
        lock_dir: base.to_owned(),
        lock_name: SHARED_LOCK,
        guard: None,
    })
}

/// Creates `sessions/<id>` so that it only ever appears with its liveness lock held: the tree
/// is made under a `.creating-` name, locked, then renamed into place.
fn create_session(sessions: &Path, id: &SessionId) -> Result<(PathBuf, EphemeralGuard), Error> {
    let name = id.dir_name();
    let root = sessions.join(&name);
    if fs::symlink_metadata(&root).is_ok() {
        return Err(Error::SessionExists(id.clone()));
    }
    let staging = sessions.join(format!("{CREATING_PREFIX}{name}"));
    match secure_fs::create_private_dir(&staging) {
        Ok(()) => {}
        Err(FsError::AlreadyExists { .. }) => return Err(Error::SessionExists(id.clone())),
        Err(e) => return Err(e.into()),
    }
    let lock = match FileLock::acquire(&staging, LIVE_LOCK) {
        Ok(lock) => lock,
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(e.into());
        }
    };
    if let Err(e) = fs::rename(&staging, &root) {
        let _ = fs::remove_dir_all(&staging);
        return Err(FsError::Io {
            op: "rename session into place",
            path: root,
            source: e,
        }
        .into());
    }
    let guard = EphemeralGuard {
        root: root.clone(),
        lock: Some(lock),
        armed: true,
    };
    Ok((root, guard))
}

/// Removes an ephemeral session's tree when dropped (errors are ignored there; use
/// [`RuntimeEnv::close`] to see them). Holds the session's liveness lock until then.
#[derive(Debug)]
struct EphemeralGuard {
    root: PathBuf,
    lock: Option<FileLock>,
    armed: bool,
}

impl EphemeralGuard {
    fn remove(&mut self) -> Result<(), FsError> {
        if !self.armed {
            return Ok(());
        }
        self.armed = false;
        // Remove while still holding the lock, so a concurrent sweep treats it as live.
        let result = match fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(secure_fs::io_err("remove session", &self.root)(e)),
        };
        self.lock = None;
        result
    }
}

impl Drop for EphemeralGuard {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

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
    runtimes: Vec<RuntimeKind>,
    root: Option<PathBuf>,
    home: PathBuf,
    state_dirs: BTreeMap<RuntimeKind, PathBuf>,
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
            runtimes: RuntimeKind::ALL.to_vec(),
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

    /// The runtimes this environment serves.
    pub fn runtimes(&self) -> &[RuntimeKind] {
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
    pub fn state_dir(&self, runtime: RuntimeKind) -> PathBuf {
        self.anchors().state_dir(runtime)
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

    pub(crate) fn anchors(&self) -> Anchors<'_> {
        Anchors {
            home: &self.home,
            cwd: &self.cwd,
            state_dirs: &self.state_dirs,
        }
    }

    /// The auth status of one runtime in this environment (no secret is read).
    pub fn auth_status(&self, runtime: RuntimeKind) -> AuthStatus {
        auth::detect(runtime, &self.anchors(), &self.child)
    }

    /// The auth status of every runtime this environment serves.
    pub fn auth_statuses(&self) -> Vec<AuthStatus> {
        self.runtimes.iter().map(|&r| self.auth_status(r)).collect()
    }

    /// A snapshot of the implicit sources of every runtime this environment serves.
    pub fn snapshot(&self) -> Snapshot {
        snapshot::take(&self.runtimes, &self.anchors())
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
        runtime: RuntimeKind,
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

/// The exclusive config lock of a namespace or session; released when dropped.
#[derive(Debug)]
pub struct ConfigLock<'e> {
    env: &'e RuntimeEnv,
    _lock: FileLock,
}

impl ConfigLock<'_> {
    /// Validates `relative` and returns its components; refuses credential files.
    fn components(runtime: RuntimeKind, relative: &str) -> Result<Vec<&str>, Error> {
        let parts: Vec<&str> = relative.split('/').collect();
        if relative.len() > 1024
            || parts
                .iter()
                .any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains(['\\', '\0']))
        {
            return Err(Error::InvalidRelativePath);
        }
        let d = runtime.descriptor();
        let is_credential = d.sources.iter().chain(d.credential_files).any(|s| {
            s.kind == SourceKind::Credential && s.anchor == Anchor::StateDir && s.path == relative
        });
        if is_credential {
            return Err(Error::CredentialFile {
                runtime,
                path: relative.to_owned(),
            });
        }
        Ok(parts)
    }

    /// The runtime's state directory, checked (and, at the shared level, created if missing).
    fn state_dir(&self, runtime: RuntimeKind, create: bool) -> Result<Option<PathBuf>, Error> {
        let state = self.env.state_dir(runtime);
        let strictness = self.env.strictness();
        match fs::symlink_metadata(&state) {
            Ok(_) => {
                secure_fs::check_dir(&state, strictness)?;
                Ok(Some(state))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                let (Some(parent), Some(name)) = (state.parent(), state.file_name()) else {
                    return Err(Error::InvalidRelativePath);
                };
                secure_fs::check_dir(parent, strictness)?;
                Ok(Some(secure_fs::ensure_dir(parent, name, strictness)?))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(secure_fs::io_err("inspect", &state)(e).into()),
        }
    }

    /// Reads a runtime file under the state directory (`config.toml`, `mcp.json`, …);
    /// `Ok(None)` when it does not exist. Credential files are refused.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRelativePath`], [`Error::CredentialFile`], [`Error::FileTooLarge`], and
    /// [`Error::Fs`] for unsafe directories or I/O failures.
    pub fn read(&self, runtime: RuntimeKind, relative: &str) -> Result<Option<Vec<u8>>, Error> {
        let parts = Self::components(runtime, relative)?;
        let Some(mut dir) = self.state_dir(runtime, false)? else {
            return Ok(None);
        };
        let (file, parents) = parts.split_last().ok_or(Error::InvalidRelativePath)?;
        for p in parents {
            dir.push(p);
            match fs::symlink_metadata(&dir) {
                Ok(_) => secure_fs::check_dir(&dir, self.env.strictness())?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(secure_fs::io_err("inspect", &dir)(e).into()),
            }
        }
        let path = dir.join(file);
        let handle = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(secure_fs::open_flags())
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(secure_fs::io_err("open", &path)(e).into()),
        };
        let meta = handle
            .metadata()
            .map_err(secure_fs::io_err("inspect", &path))?;
        if !meta.is_file() {
            return Err(FsError::NotARegularFile { path }.into());
        }
        if meta.len() > MAX_RUNTIME_FILE {
            return Err(Error::FileTooLarge {
                max: MAX_RUNTIME_FILE,
            });
        }
        let mut buf = Vec::new();
        handle
            .take(MAX_RUNTIME_FILE + 1)
            .read_to_end(&mut buf)
            .map_err(secure_fs::io_err("read", &path))?;
        if buf.len() as u64 > MAX_RUNTIME_FILE {
            return Err(Error::FileTooLarge {
                max: MAX_RUNTIME_FILE,
            });
        }
        Ok(Some(buf))
    }

    /// Atomically replaces a runtime file under the state directory with `contents` (0600,
    /// temp file + fsync + rename), creating missing parent directories 0700. Credential files
    /// are refused.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRelativePath`], [`Error::CredentialFile`], and [`Error::Fs`] for unsafe
    /// directories or I/O failures.
    pub fn write(
        &self,
        runtime: RuntimeKind,
        relative: &str,
        contents: &[u8],
    ) -> Result<PathBuf, Error> {
        let parts = Self::components(runtime, relative)?;
        let state = self
            .state_dir(runtime, true)?
            .ok_or(Error::InvalidRelativePath)?;
        let (file, parents) = parts.split_last().ok_or(Error::InvalidRelativePath)?;
        let dir = secure_fs::ensure_dirs(
            &state,
            parents.iter().map(OsStr::new),
            self.env.strictness(),
        )?;
        Ok(secure_fs::write_private_file(&dir, file, contents)?)
    }
}

/// What [`sweep_ephemeral`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepReport {
    /// Sessions removed (stale: unlocked and older than the threshold).
    pub removed: Vec<SessionId>,
    /// Interrupted session creations removed.
    pub removed_incomplete: usize,
    /// Sessions kept because their liveness lock is held.
    pub live: usize,
    /// Sessions kept because they are younger than the threshold.
    pub young: usize,
    /// Entries left alone because they are not session directories or failed a safety check.
    pub skipped: usize,
}

/// Removes stale ephemeral sessions of every namespace under `base_dir`: those whose liveness
/// lock is free (their owner dropped them without cleanup, or died) and whose directory was
/// last modified at least `older_than` ago. Live sessions are never touched.
///
/// # Errors
///
/// [`FsError`] when `base_dir` or a namespace directory fails a safety check; problems with
/// individual entries are counted in [`SweepReport::skipped`] instead.
pub fn sweep_ephemeral(base_dir: &Path, older_than: Duration) -> Result<SweepReport, FsError> {
    let mut report = SweepReport::default();
    secure_fs::require_absolute(base_dir)?;
    let ns_dir = base_dir.join(NS_DIR);
    match fs::symlink_metadata(base_dir) {
        Ok(_) => secure_fs::check_dir(base_dir, Strictness::HostOwned)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(secure_fs::io_err("inspect", base_dir)(e)),
    }
    match fs::symlink_metadata(&ns_dir) {
        Ok(_) => secure_fs::check_dir(&ns_dir, Strictness::Private)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(secure_fs::io_err("inspect", &ns_dir)(e)),
    }
    let now = SystemTime::now();
    for ns in fs::read_dir(&ns_dir).map_err(secure_fs::io_err("list", &ns_dir))? {
        let ns = ns.map_err(secure_fs::io_err("list", &ns_dir))?;
        let sessions = ns.path().join(SESSIONS_DIR);
        if secure_fs::check_dir(&ns.path(), Strictness::Private).is_err() {
            report.skipped += 1;
            continue;
        }
        match fs::symlink_metadata(&sessions) {
            Ok(_) => {}
            Err(_) => continue,
        }
        if secure_fs::check_dir(&sessions, Strictness::Private).is_err() {
            report.skipped += 1;
            continue;
        }
        let Ok(entries) = fs::read_dir(&sessions) else {
            report.skipped += 1;
            continue;
        };
        for entry in entries.flatten() {
            sweep_one(
                &entry.path(),
                &entry.file_name(),
                now,
                older_than,
                &mut report,
            );
        }
    }
    Ok(report)
}

fn sweep_one(
    path: &Path,
    name: &OsStr,
    now: SystemTime,
    older_than: Duration,
    report: &mut SweepReport,
) {
    let Some(name) = name.to_str() else {
        report.skipped += 1;
        return;
    };
    let (incomplete, dir_name) = match name.strip_prefix(CREATING_PREFIX) {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let Some(id) = SessionId::from_dir_name(dir_name) else {
        report.skipped += 1;
        return;
    };
    let Ok(meta) = fs::symlink_metadata(path) else {
        report.skipped += 1;
        return;
    };
    if secure_fs::check_dir(path, Strictness::Private).is_err() {
        report.skipped += 1;
        return;
    }
    let age = meta
        .modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .unwrap_or(Duration::ZERO);
    if age < older_than {
        report.young += 1;
        return;
    }
    let live = path.join(LIVE_LOCK);
    let lock = match FileLock::try_acquire_existing(&live) {
        Ok(Some(lock)) => Some(lock),
        Ok(None) => {
            report.live += 1;
            return;
        }
        // No lock file: a creation interrupted before locking, or a damaged tree.
        Err(_) if fs::symlink_metadata(&live).is_err() => None,
        Err(_) => {
            report.skipped += 1;
            return;
        }
    };
    match fs::remove_dir_all(path) {
        Ok(()) if incomplete => report.removed_incomplete += 1,
        Ok(()) => report.removed.push(id),
        Err(_) => report.skipped += 1,
    }
    drop(lock);
}
