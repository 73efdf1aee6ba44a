//! [`CliProcess`]: one running CLI, its bounded stdout lines, stderr tail and exit.

use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use driver_spi::{ExitStatus, FailureKind, RunFailure};
use runtime_env::RuntimeEnv;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::command::{CliCommand, Limits};
use crate::error::ProcessError;
pub use crate::group::GroupEnder;
use crate::group::{ExitReport, GroupGuard};
use crate::lines::{LineError, LineReader, parse_json_line};
use crate::stderr::{Redaction, TailBuffer};

/// A running CLI process, the leader of its own process group.
///
/// Read stdout with [`next_line`](Self::next_line) or [`next_json`](Self::next_json), then
/// call [`wait`](Self::wait). stderr is collected concurrently into a bounded tail.
///
/// # Cancellation
///
/// Dropping a `CliProcess` (for example because the driver's run future was dropped) ends the
/// whole process group: SIGTERM at once, SIGKILL after [`Limits::kill_grace`] if the main
/// process is still running, and then SIGTERM/SIGKILL for any member left behind. The direct
/// child is always reaped, by a dedicated thread that waits for it from spawn on, so no zombie
/// remains even when the Tokio runtime shuts down right after the drop. `Drop` itself never
/// blocks: the SIGKILL is timed by a short-lived std thread rather than a task, because a task
/// would be lost if the runtime stopped.
pub struct CliProcess {
    program: String,
    stdout: LineReader<ChildStdout>,
    deadline: Instant,
    total_timed_out: bool,
    child: ChildHandle,
}

impl fmt::Debug for CliProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CliProcess")
            .field("program", &self.program)
            .field("pid", &self.child.pid)
            .field("lines", &self.stdout.count())
            .field("limits", &self.child.limits)
            .finish_non_exhaustive()
    }
}

/// How a CLI process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finished {
    /// The exit status; [`ExitStatus::TimedOut`] when the process outlived the total timeout
    /// and was ended.
    pub status: ExitStatus,
    /// The end of stderr, at most [`Limits::stderr_tail_bytes`] bytes, redacted.
    pub stderr_tail: String,
}

impl Finished {
    /// How a process ended: its status and its (already redacted) stderr tail.
    pub fn new(status: ExitStatus, stderr_tail: String) -> Self {
        Self {
            status,
            stderr_tail,
        }
    }

    /// A [`RunFailure`] for an unsuccessful exit (see [`failure_kind`]), whose message is the
    /// status and the redacted stderr tail; `None` after success.
    pub fn failure(&self) -> Option<RunFailure> {
        let kind = failure_kind(self.status)?;
        let mut message = format!("CLI process ended: {}", self.status);
        if !self.stderr_tail.trim().is_empty() {
            message.push_str("\nstderr:\n");
            message.push_str(&self.stderr_tail);
        }
        Some(RunFailure::new(kind, message))
    }
}

/// The failure class of an exit status; `None` for success.
///
/// * [`ExitStatus::TimedOut`] and exit code 124 (the `timeout(1)` convention) are
///   [`FailureKind::Timeout`];
/// * death by SIGXCPU or SIGXFSZ (a CPU-time or file-size resource limit) is
///   [`FailureKind::Limit`];
/// * every other exit code or signal, including 126/127 (not executable / not found through
///   a wrapper) and 128+n (a wrapper reporting a signal), is [`FailureKind::Process`].
///
/// Drivers that know their CLI's codes (authentication, rate limits) classify those first and
/// fall back to this.
pub fn failure_kind(status: ExitStatus) -> Option<FailureKind> {
    const SIGXCPU: i32 = 24;
    const SIGXFSZ: i32 = 25;
    match status {
        ExitStatus::Success => None,
        ExitStatus::TimedOut | ExitStatus::Code(124) => Some(FailureKind::Timeout),
        ExitStatus::Signal(SIGXCPU | SIGXFSZ) => Some(FailureKind::Limit),
        _ => Some(FailureKind::Process),
    }
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(0), _) => ExitStatus::Success,
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(signal)) => ExitStatus::Signal(signal),
        // Neither a code nor a signal (a stopped process is never reported by `wait`).
        (None, None) => ExitStatus::Code(-1),
    }
}

/// `now + d`, saturating to a far future instead of overflowing.
fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

impl CliProcess {
    /// Starts `command` in `env`.
    ///
    /// The child's command starts from [`RuntimeEnv::command`] (an empty environment, the
    /// host allow-list, HOME/XDG/state variables of the namespace, the environment's injected
    /// secrets, and the environment's cwd), then gets the command's cwd, plain variables and
    /// secret bindings. It runs in a new process group (so the group can be signalled as a
    /// whole), with stdout and stderr piped and stdin piped only for
    /// [`CliCommand::stdin_text`] (written by a background task, then closed).
    ///
    /// A relative program path containing `/` is resolved in a platform-specific way when a
    /// working directory is set; pass an absolute path or a bare name.
    ///
    /// # Errors
    ///
    /// [`ProcessError::NotFound`] when the program does not exist, [`ProcessError::Spawn`] for other
    /// start failures (including a missing working directory), [`ProcessError::InvalidVarName`],
    /// [`ProcessError::ReservedVar`], [`ProcessError::CredentialVar`] and
    /// [`ProcessError::RefusedRequestVar`] for refused variables, and
    /// [`ProcessError::NoRuntime`] outside a Tokio runtime.
    ///
    /// # Panics
    ///
    /// Like every Tokio I/O type, when the current runtime has I/O or time disabled.
    pub fn spawn(
        env: &RuntimeEnv,
        command: CliCommand,
        limits: Limits,
    ) -> Result<Self, ProcessError> {
        let (child, started) = ChildHandle::of(crate::spawn::start(env, command, limits)?, limits);
        Ok(Self {
            program: started.program,
            stdout: LineReader::new(started.stdout, limits.max_line_bytes),
            deadline: deadline_after(Instant::now(), limits.total_timeout),
            total_timed_out: false,
            child,
        })
    }

    /// Starts `command` (built with [`CliCommand::keep_stdin`]) as a resident process: like
    /// [`spawn`](Self::spawn), but stdin stays open and stdout is handed to the caller (a
    /// protocol peer) together with the process's handle. No total timeout applies: the
    /// process lives until it is shut down.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_resident(
        env: &RuntimeEnv,
        command: CliCommand,
        limits: Limits,
    ) -> Result<(ChildHandle, ChildStdin, ChildStdout), ProcessError> {
        let (child, started) = ChildHandle::of(crate::spawn::start(env, command, limits)?, limits);
        let stdin = started.stdin.ok_or_else(|| ProcessError::Io {
            op: "attach to stdin",
            error: io::Error::other("stdin was not kept open"),
        })?;
        Ok((child, stdin, started.stdout))
    }

    /// The process id (also the process group id).
    #[cfg(test)]
    pub fn pid(&self) -> u32 {
        self.child.pid
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.child.limits
    }

    /// How many stdout lines have been read (or reported too long) so far: the number of the
    /// last line returned.
    pub fn line_number(&self) -> usize {
        self.stdout.count()
    }

    /// The next stdout line, without its newline (and without a trailing `\r`); `Ok(None)` at
    /// the end of stdout. A final line without a newline is returned as a line.
    ///
    /// Cancel-safe: dropping the future loses no output.
    ///
    /// # Errors
    ///
    /// * [`ProcessError::LineTooLong`]: the line exceeds [`Limits::max_line_bytes`]. At most that
    ///   many bytes of it are ever held; the next call skips its rest and continues.
    /// * [`ProcessError::NonUtf8`]: the line is not UTF-8 (it is consumed; the next call
    ///   continues).
    /// * [`ProcessError::IdleTimeout`]: no complete line within [`Limits::idle_timeout`] of this
    ///   call; nothing is lost, and a later call waits again.
    /// * [`ProcessError::TotalTimeout`]: [`Limits::total_timeout`] since spawn has passed; every
    ///   later call fails the same way.
    /// * [`ProcessError::Io`]: reading failed; later calls return `Ok(None)`.
    ///
    /// The process keeps running after an error; drop it or call
    /// [`terminate`](Self::terminate) to end it.
    pub async fn next_line(&mut self) -> Result<Option<String>, ProcessError> {
        let total = ProcessError::TotalTimeout {
            after: self.child.limits.total_timeout,
        };
        let now = Instant::now();
        if self.total_timed_out || now >= self.deadline {
            self.total_timed_out = true;
            return Err(total);
        }
        let idle_deadline = deadline_after(now, self.child.limits.idle_timeout);
        let deadline = idle_deadline.min(self.deadline);
        match tokio::time::timeout_at(deadline, self.stdout.read_line()).await {
            Ok(Ok(Some(mut bytes))) => {
                if bytes.last() == Some(&b'\r') {
                    bytes.pop();
                }
                String::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| ProcessError::NonUtf8 {
                        line: self.stdout.count(),
                    })
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(LineError::TooLong)) => Err(ProcessError::LineTooLong {
                limit: self.child.limits.max_line_bytes,
            }),
            Ok(Err(LineError::Io(source))) => Err(ProcessError::Io {
                op: "read stdout",
                error: source,
            }),
            Err(_) if deadline >= self.deadline => {
                self.total_timed_out = true;
                Err(total)
            }
            Err(_) => Err(ProcessError::IdleTimeout {
                after: self.child.limits.idle_timeout,
            }),
        }
    }

    /// The next non-blank stdout line parsed as JSON; `Ok(None)` at the end of stdout.
    ///
    /// # Errors
    ///
    /// As [`next_line`](Self::next_line), and [`ProcessError::MalformedJson`] with the line
    /// number (never the content) when the line is not JSON.
    pub async fn next_json(&mut self) -> Result<Option<serde_json::Value>, ProcessError> {
        loop {
            match self.next_line().await? {
                None => return Ok(None),
                Some(line) if line.trim().is_empty() => {}
                Some(line) => return parse_json_line(&line, self.stdout.count()).map(Some),
            }
        }
    }

    /// The redacted end of stderr so far (at most [`Limits::stderr_tail_bytes`] bytes).
    #[cfg(test)]
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail()
    }

    /// Waits for the process to exit, at most until the total timeout (measured from spawn).
    ///
    /// Unread stdout is read and discarded meanwhile, so a child blocked on a full pipe can
    /// finish. When the main process has exited, members of its group still running (helper
    /// servers it started) get SIGTERM, then SIGKILL after [`Limits::kill_grace`]; `wait`
    /// returns after that. At the total timeout the whole group is ended the same way and the
    /// status is [`ExitStatus::TimedOut`].
    ///
    /// # Errors
    ///
    /// [`ProcessError::Io`] when the exit status cannot be observed (another part of the program
    /// reaped the child).
    pub async fn wait(self) -> Result<Finished, ProcessError> {
        let Self {
            mut stdout,
            deadline,
            child,
            ..
        } = self;
        let drain = tokio::spawn(async move { stdout.discard_all().await });
        let (report, timed_out, stderr_tail) = child.end(Some(deadline)).await;
        drain.abort();
        let status = match report {
            Ok(Ok(_)) if timed_out => ExitStatus::TimedOut,
            Ok(Ok(status)) => exit_status(status),
            Ok(Err(source)) => {
                return Err(ProcessError::Io {
                    op: "wait for the CLI process",
                    error: source,
                });
            }
            Err(_) => {
                return Err(ProcessError::Io {
                    op: "wait for the CLI process",
                    error: io::Error::other("the reaper thread ended without a status"),
                });
            }
        };
        Ok(Finished {
            status,
            stderr_tail,
        })
    }

    /// Ends the process group now (SIGTERM, SIGKILL after [`Limits::kill_grace`], then any
    /// member left) and waits until the main process has been reaped.
    ///
    /// The status is what the process reported (usually `Signal(15)` or `Signal(9)`); if it
    /// cannot be observed (another part of the program reaped the child), `Signal(9)`.
    pub async fn terminate(self) -> Finished {
        let Self { stdout, child, .. } = self;
        // A child that handles SIGTERM and is blocked writing stdout gets EPIPE and can exit.
        drop(stdout);
        child.wait_or_terminate(None).await
    }
}

/// A started process's handle: its exit, group and stderr tail, without its stdout (which a
/// [`CliProcess`] reads as lines, and a resident process hands to its protocol peer).
/// Dropping it ends the process group, like [`CliProcess`].
pub struct ChildHandle {
    pid: u32,
    stderr: Arc<Mutex<TailBuffer>>,
    stderr_task: JoinHandle<()>,
    exit: oneshot::Receiver<ExitReport>,
    guard: GroupGuard,
    limits: Limits,
    redaction: Redaction,
}

impl fmt::Debug for ChildHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildHandle")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl ChildHandle {
    /// The handle part of `started`, and the rest (program and pipes).
    fn of(started: crate::spawn::Started, limits: Limits) -> (Self, Pipes) {
        let handle = Self {
            pid: started.pid,
            stderr: started.stderr,
            stderr_task: started.stderr_task,
            exit: started.exit,
            guard: started.guard,
            limits,
            redaction: started.redaction,
        };
        let pipes = Pipes {
            program: started.program,
            stdin: started.stdin,
            stdout: started.stdout,
        };
        (handle, pipes)
    }

    /// The process id (also the process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the main process has exited.
    pub fn has_exited(&self) -> bool {
        self.guard.has_exited()
    }

    /// What ends the process group from a task that does not own the handle.
    pub fn ender(&self) -> GroupEnder {
        self.guard.ender()
    }

    /// What the stderr tail is redacted with.
    pub fn redaction(&self) -> &Redaction {
        &self.redaction
    }

    /// Redacts the stderr tail with `redaction` from now on (a resident process's next turn
    /// may know secrets its launch did not; the caller keeps the launch's in it).
    pub fn set_redaction(&mut self, redaction: Redaction) {
        self.redaction = redaction;
    }

    /// The redacted end of stderr so far.
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render(&self.redaction)
    }

    /// Waits up to `within` (`None`: not at all) for the process to exit on its own, then
    /// ends the group (SIGTERM, SIGKILL after [`Limits::kill_grace`], then any member left);
    /// returns how it ended: the status it reported, or `Signal(9)` when that cannot be
    /// observed (another part of the program reaped the child).
    pub async fn wait_or_terminate(self, within: Option<Duration>) -> Finished {
        const SIGKILL: i32 = 9;
        let deadline = within.map(|d| deadline_after(Instant::now(), d));
        let (report, _, stderr_tail) = self.end(deadline).await;
        let status = match report {
            Ok(Ok(status)) => exit_status(status),
            _ => ExitStatus::Signal(SIGKILL),
        };
        Finished {
            status,
            stderr_tail,
        }
    }

    /// Waits for the main process's exit until `deadline` (`None`: not at all), ending the
    /// whole group when it passes; then lets the stderr drain finish. Returns the reaper's
    /// report, whether the group was ended here, and the redacted stderr tail.
    async fn end(
        self,
        deadline: Option<Instant>,
    ) -> (Result<ExitReport, oneshot::error::RecvError>, bool, String) {
        let Self {
            stderr,
            stderr_task,
            mut exit,
            mut guard,
            limits,
            redaction,
            ..
        } = self;
        let on_its_own = match deadline {
            Some(at) => tokio::time::timeout_at(at, &mut exit).await.ok(),
            None => None,
        };
        let ended_here = on_its_own.is_none();
        let report = match on_its_own {
            Some(report) => report,
            None => {
                guard.terminate();
                (&mut exit).await
            }
        };
        guard.disarm();
        let stderr_tail = finish_stderr(stderr_task, &stderr, &redaction, limits).await;
        (report, ended_here, stderr_tail)
    }
}

/// What [`ChildHandle::of`] leaves of a started process: its program and pipes.
struct Pipes {
    program: String,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

/// Lets the stderr drain reach the end of the pipe (bounded by the kill grace, in case a
/// process outside the group still holds it), then renders the tail.
async fn finish_stderr(
    mut task: JoinHandle<()>,
    tail: &Mutex<TailBuffer>,
    redaction: &Redaction,
    limits: Limits,
) -> String {
    if tokio::time::timeout(limits.kill_grace, &mut task)
        .await
        .is_err()
    {
        task.abort();
    }
    tail.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .render(redaction)
}
