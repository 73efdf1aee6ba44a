//! [`CliCommand`], what to run, and [`Limits`], how long and how much.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use driver_spi::Redactor;
use run_service::EnvBinding;

/// What to run: a program, its arguments, working directory, environment additions and stdin.
///
/// The program is executed directly, never through a shell, so arguments need no quoting.
/// The environment is the [`RuntimeEnv`](runtime_env::RuntimeEnv)'s (empty, plus an
/// allow-list, the namespace variables and its injected secrets), plus [`var`](Self::var)s and
/// [`secret_env`](Self::secret_env) bindings. Secret values are exposed only when the child's
/// environment is configured; `Debug` shows names only.
///
/// Its redactor is given when it is made and is the only one its stderr tail passes: a turn's
/// command carries the turn's redactor (see `driver_cli`'s turn redactor), so stderr and
/// events hide the same secrets; any other command, the environment's.
#[derive(Clone)]
pub struct CliCommand {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) vars: Vec<(String, OsString)>,
    pub(crate) secrets: Vec<EnvBinding>,
    /// The request's bindings, from run services: checked against [`runtime_env::RefusedVar`].
    pub(crate) request_secrets: Vec<EnvBinding>,
    pub(crate) stdin: Option<String>,
    /// Stdin stays open for the caller ([`CliProcess::spawn_resident`](crate::process::CliProcess::spawn_resident)).
    pub(crate) keep_stdin: bool,
    /// What the stderr tail is redacted with. It knows every secret value the command
    /// carries: a binding's value joins it as the binding is added (a turn's redactor knows
    /// them already), so no command can carry a secret its stderr would show.
    pub(crate) redactor: Redactor,
}

impl CliCommand {
    /// A command for `program` (a path, or a name looked up in the child's `PATH`) whose
    /// stderr tail `redactor` redacts: a turn's redactor, or the environment's. The secrets
    /// the command is given later ([`secret_env`](Self::secret_env),
    /// [`request_env`](Self::request_env)) join it; the token patterns always apply.
    pub fn new(program: impl Into<PathBuf>, redactor: Redactor) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            vars: Vec::new(),
            secrets: Vec::new(),
            request_secrets: Vec::new(),
            stdin: None,
            keep_stdin: false,
            redactor,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The working directory (default: the runtime environment's `cwd`).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets a plain, non-secret variable. Names managed by the runtime environment (HOME,
    /// XDG_*, TMPDIR, state variables such as CODEX_HOME) and credential-looking names are
    /// refused by [`CliProcess::spawn`](crate::process::CliProcess::spawn).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// Adds the request's secret bindings (its
    /// [`RuntimePayload::secret_env`](driver_spi::RuntimePayload::secret_env): the run
    /// services' tokens). They come from providers, so
    /// [`CliProcess::spawn`](crate::process::CliProcess::spawn) refuses any that would set what
    /// changes how or where the runtime runs ([`runtime_env::RefusedVar`]); the command's
    /// redactor knows their values.
    pub fn request_env<'a>(mut self, bindings: impl IntoIterator<Item = &'a EnvBinding>) -> Self {
        for binding in bindings {
            self.redactor.add_secret(binding.value().clone());
            self.request_secrets.push(binding.clone());
        }
        self
    }

    /// Adds the dialect's own secret variables (the model key of its configuration). They are
    /// set last, so they win over plain variables of the same name; the command's redactor
    /// knows their values.
    pub fn secret_env<'a>(mut self, bindings: impl IntoIterator<Item = &'a EnvBinding>) -> Self {
        for binding in bindings {
            self.redactor.add_secret(binding.value().clone());
            self.secrets.push(binding.clone());
        }
        self
    }

    /// Text written to the child's stdin, which is then closed (the prompt goes here, never
    /// on the command line). Without it, stdin is `/dev/null`.
    pub fn stdin_text(mut self, text: impl Into<String>) -> Self {
        self.stdin = Some(text.into());
        self
    }

    /// Keeps stdin open as a pipe for a resident process's protocol (instead of writing
    /// [`stdin_text`](Self::stdin_text) and closing it).
    pub fn keep_stdin(mut self) -> Self {
        self.keep_stdin = true;
        self
    }
}

impl fmt::Debug for CliCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vars: Vec<&str> = self.vars.iter().map(|(k, _)| k.as_str()).collect();
        let secrets: Vec<&str> = self.secrets.iter().map(EnvBinding::name).collect();
        let request: Vec<&str> = self.request_secrets.iter().map(EnvBinding::name).collect();
        f.debug_struct("CliCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("vars", &vars)
            .field("secret_env", &secrets)
            .field("request_env", &request)
            .field("stdin_bytes", &self.stdin.as_ref().map(String::len))
            .field("redactor", &self.redactor)
            .finish()
    }
}

/// Bounds of one CLI run. Build with [`Limits::default`] and the `with_*` setters.
///
/// ```
/// use std::time::Duration;
/// use driver_process::command::Limits;
///
/// let limits = Limits::default().with_idle_timeout(Duration::from_secs(30));
/// assert_eq!(limits.idle_timeout, Duration::from_secs(30));
/// assert_eq!(limits.max_line_bytes, 8 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Longest wait for one stdout line (default 5 minutes).
    pub idle_timeout: Duration,
    /// Longest run, measured from spawn (default 60 minutes).
    pub total_timeout: Duration,
    /// Longest stdout line, without its newline (default 8 MiB).
    pub max_line_bytes: usize,
    /// How much of the end of stderr is kept (default 16 KiB).
    pub stderr_tail_bytes: usize,
    /// Time between SIGTERM and SIGKILL when a process group is ended (default 2 s).
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(5 * 60),
            total_timeout: Duration::from_secs(60 * 60),
            max_line_bytes: 8 << 20,
            stderr_tail_bytes: 16 << 10,
            kill_grace: Duration::from_secs(2),
        }
    }
}

impl Limits {
    /// Sets [`idle_timeout`](Self::idle_timeout).
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`total_timeout`](Self::total_timeout).
    pub fn with_total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = timeout;
        self
    }

    /// Sets [`max_line_bytes`](Self::max_line_bytes).
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets [`stderr_tail_bytes`](Self::stderr_tail_bytes).
    pub fn with_stderr_tail_bytes(mut self, bytes: usize) -> Self {
        self.stderr_tail_bytes = bytes;
        self
    }

    /// Sets [`kill_grace`](Self::kill_grace).
    pub fn with_kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }
}
