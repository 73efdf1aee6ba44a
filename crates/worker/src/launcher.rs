//! How a worker is started: [`Launcher`], a value the host chooses for its
//! [`Workers`](crate::Workers). A launcher only shapes the program and arguments of the command that
//! `driver-process` spawns in the namespace's `RuntimeEnv`: the environment is still the
//! namespace's allow-list, and the spawn still goes through the process layer.
//!
//! What each separates:
//! - [`Launcher::Direct`]: the worker binary itself, as the host's own OS user with the
//!   host's whole file system visible. It separates environments and directories, not
//!   principals: an agent allowed to run commands can read every other namespace of the same
//!   user. No OS boundary.
//! - [`Launcher::Bubblewrap`]: the worker inside a `bwrap` sandbox (what Claude Code and
//!   Codex themselves use on Linux; Debian's `bubblewrap` package) that sees only its own
//!   namespace directory and workspace (read-write), the system directories, the worker
//!   binary and the runtime binaries' directories (read-only), a private `/tmp`, its own PID
//!   namespace (`--unshare-pid`, so killing the sandbox ends every process in it), a new
//!   session, and dies with its parent. The network namespace is not unshared, so model
//!   servers and MCP servers on 127.0.0.1 stay reachable; so does everything else the host
//!   reaches, abstract Unix sockets included (a channel between sandboxes this launcher does
//!   not close). It separates files and processes, not the uid: the worker still runs as
//!   the host's user, so what the host binds in read-only on purpose is readable.
//! - [`Launcher::Prefix`]: a command put before the worker program, e.g. `ssh HOST`,
//!   `docker exec -i CONTAINER` or `kubectl exec -i POD --`: the same protocol over any stdio
//!   pipe. What it separates is the prefix's business (another machine, a container); the
//!   program path is then the worker's path where the prefix runs it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use runtime_env::{IsolationMode, RuntimeEnv};

/// System directories a sandboxed worker sees read-only, when they exist: the binaries and
/// libraries, and the few files of `/etc` that name resolution for loopback, TLS
/// certificates, users and the dynamic linker need (not the whole of `/etc`).
const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ssl",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
];

/// How the host starts a namespace's worker. The default is [`Launcher::Direct`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Launcher {
    /// The worker binary, run directly as the host's own user: no OS boundary (see the
    /// module doc).
    #[default]
    Direct,
    /// The worker in a bubblewrap sandbox that sees only its own namespace and workspace.
    Bubblewrap(Bubblewrap),
    /// The worker program after a command prefix (`ssh HOST`, `docker exec -i …`).
    Prefix(Prefix),
}

/// The bubblewrap launcher's settings: the `bwrap` binary and what else the sandbox may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bubblewrap {
    bwrap: PathBuf,
    read_only: Vec<PathBuf>,
}

impl Bubblewrap {
    /// A sandbox started by the `bwrap` at `bwrap` (`/usr/bin/bwrap` on Debian). The worker
    /// program of the [`Workers`](crate::Workers) must be an absolute path: it is bound into
    /// the sandbox at the same place.
    pub fn new(bwrap: impl Into<PathBuf>) -> Self {
        Self {
            bwrap: bwrap.into(),
            read_only: Vec::new(),
        }
    }

    /// Also shows `dir` read-only inside the sandbox, at the same path: the directory of a
    /// runtime's binary (an npm prefix, say), which a CLI must be able to run. Never a
    /// directory that holds other namespaces (the base, or a HOME above it): the sandbox would
    /// show them read-only. `dir` must be absolute and exist, or the worker fails to start.
    #[must_use]
    pub fn read_only(mut self, dir: impl Into<PathBuf>) -> Self {
        self.read_only.push(dir.into());
        self
    }

    /// The `bwrap` arguments that run `program` for `env`, ending with `-- program`.
    fn args(&self, program: &Path, env: &RuntimeEnv) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--die-with-parent",
            "--unshare-pid",
            "--new-session",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        let mut bind = |flag: &str, path: &Path| {
            args.push(flag.into());
            args.push(path.into());
            args.push(path.into());
        };
        for dir in SYSTEM_READ_ONLY {
            bind("--ro-bind-try", Path::new(dir));
        }
        bind("--ro-bind", program);
        for dir in &self.read_only {
            bind("--ro-bind", dir);
        }
        // The namespace's own directory, then its workspace: the only writable places. (At
        // the shared level there is no root; `WorkerDriver::new` refuses that pairing.)
        if let Some(root) = env.root() {
            bind("--bind", root);
        }
        bind("--bind", env.cwd());
        args.push("--chdir".into());
        args.push(env.cwd().into());
        args.push("--".into());
        args.push(program.into());
        args
    }
}

/// A command prefix: its program and arguments go before the worker program.
///
/// The prefix must pass its stdio through and last as long as the worker (as `ssh`,
/// `docker exec -i` and `kubectl exec -i` do): the host takes the end of the spawned process
/// for the end of the worker. A prefix that forks and exits (`setsid` without `--wait`, which
/// forks because every worker starts as a process group leader) would read as a worker that
/// ended at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Prefix {
    /// The prefix `program args…` (for example `ssh` with `["-T", "host"]`).
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }
}

impl Launcher {
    /// The program and arguments that start the worker `program` for `env`.
    pub(crate) fn command(&self, program: &Path, env: &RuntimeEnv) -> (PathBuf, Vec<OsString>) {
        match self {
            Self::Direct => (program.to_path_buf(), Vec::new()),
            Self::Bubblewrap(b) => (b.bwrap.clone(), b.args(program, env)),
            Self::Prefix(p) => {
                let mut args = p.args.clone();
                args.push(program.into());
                (p.program.clone(), args)
            }
        }
    }

    /// The isolation mode a worker started this way is in, when the launcher alone decides
    /// it: [`Subprocess`](IsolationMode::Subprocess) for the direct launch (a process of its
    /// own, the host's OS user), [`Worker`](IsolationMode::Worker) for the bubblewrap sandbox;
    /// `None` for a prefix, whose boundary is whatever the prefix reaches (another machine, a
    /// container), which only the host knows.
    ///
    /// ```
    /// use runtime_env::IsolationMode;
    /// use worker::{Bubblewrap, Launcher};
    ///
    /// assert_eq!(Launcher::Direct.isolation_mode(), Some(IsolationMode::Subprocess));
    /// let sandbox = Launcher::Bubblewrap(Bubblewrap::new("/usr/bin/bwrap"));
    /// assert_eq!(sandbox.isolation_mode(), Some(IsolationMode::Worker));
    /// ```
    pub fn isolation_mode(&self) -> Option<IsolationMode> {
        match self {
            Self::Direct => Some(IsolationMode::Subprocess),
            Self::Bubblewrap(_) => Some(IsolationMode::Worker),
            Self::Prefix(_) => None,
        }
    }

    /// A short name for logs and diagnostics: `direct`, `bubblewrap` or `prefix`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Bubblewrap(_) => "bubblewrap",
            Self::Prefix(_) => "prefix",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime_env::HostEnv;

    fn env(base: &Path) -> RuntimeEnv {
        std::fs::create_dir_all(base.join("work")).expect("a workspace");
        RuntimeEnv::builder(
            base.join("env"),
            "user:a".parse().expect("a namespace"),
            base.join("work"),
        )
        .host_env(HostEnv::empty())
        .build()
        .expect("an environment")
    }

    #[test]
    fn direct_runs_the_program_itself() {
        let base = tempfile::tempdir().expect("tempdir");
        let (program, args) =
            Launcher::Direct.command(Path::new("/w/agent-worker"), &env(base.path()));
        assert_eq!(program, Path::new("/w/agent-worker"));
        assert!(args.is_empty());
    }

    #[test]
    fn a_prefix_goes_before_the_program() {
        let base = tempfile::tempdir().expect("tempdir");
        let launcher = Launcher::Prefix(Prefix::new("ssh", ["-T", "host"]));
        let (program, args) = launcher.command(Path::new("/w/agent-worker"), &env(base.path()));
        assert_eq!(program, Path::new("ssh"));
        assert_eq!(args, ["-T", "host", "/w/agent-worker"]);
    }

    #[test]
    fn bubblewrap_binds_only_the_namespace_and_workspace_writable() {
        let base = tempfile::tempdir().expect("tempdir");
        let env = env(base.path());
        let launcher =
            Launcher::Bubblewrap(Bubblewrap::new("/usr/bin/bwrap").read_only("/opt/cli"));
        let (program, args) = launcher.command(Path::new("/w/agent-worker"), &env);
        assert_eq!(program, Path::new("/usr/bin/bwrap"));
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let writable: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--bind")
            .map(|w| w[1].as_str())
            .collect();
        let root = env.root().expect("a namespace root").display().to_string();
        let cwd = env.cwd().display().to_string();
        assert_eq!(writable, [root.as_str(), cwd.as_str()]);
        for flag in ["--die-with-parent", "--unshare-pid", "--new-session"] {
            assert!(args.iter().any(|a| a == flag), "{flag}");
        }
        assert!(
            !args.iter().any(|a| a == "--unshare-net"),
            "loopback stays shared"
        );
        assert_eq!(args[args.len() - 2..], ["--", "/w/agent-worker"]);
        assert!(
            args.windows(2)
                .any(|w| w[0] == "--ro-bind" && w[1] == "/opt/cli")
        );
    }
}
