//! Starting a CLI in its namespace: the variable checks, the command in the runtime
//! environment, its own process group, the pipes, the reaper thread and the group guard.
//! What a per-turn [`CliProcess`](crate::process::CliProcess) and a resident process are both built
//! from.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use runtime_env::RuntimeEnv;
use rustix::process::Pid;
use secrecy::ExposeSecret;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::command::{CliCommand, Limits};
use crate::error::ProcessError;
use crate::group::{self, ExitReport, GroupGuard};
use crate::stderr::{self, Redaction, TailBuffer};

/// A process just started: its pipes, stderr drain, reaper and group guard.
pub(crate) struct Started {
    pub program: String,
    pub pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: Arc<Mutex<TailBuffer>>,
    pub stderr_task: JoinHandle<()>,
    pub exit: oneshot::Receiver<ExitReport>,
    pub guard: GroupGuard,
    pub redaction: Redaction,
}

/// Starts `command` in `env` (see [`CliProcess::spawn`]).
pub(crate) fn start(
    env: &RuntimeEnv,
    command: CliCommand,
    limits: Limits,
) -> Result<Started, ProcessError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| ProcessError::NoRuntime)?;
    for (name, _) in &command.vars {
        check_var(env, name, false)?;
    }
    for binding in &command.secrets {
        check_var(env, binding.name(), true)?;
    }
    for binding in &command.request_secrets {
        check_var(env, binding.name(), true)?;
        if let Some(class) = env.refused_request_var(binding.name()) {
            return Err(ProcessError::RefusedRequestVar {
                name: binding.name().to_owned(),
                class,
            });
        }
    }
    let program = command.program.display().to_string();

    let mut cmd = env.command(&command.program);
    cmd.args(&command.args);
    let cwd = command.cwd.as_deref().unwrap_or(env.cwd());
    cmd.current_dir(cwd);
    for (name, value) in &command.vars {
        cmd.env(name, value);
    }
    // The dialect's own secrets last: no request binding can replace them.
    for binding in command.request_secrets.iter().chain(&command.secrets) {
        // The only place a secret value leaves its wrapper: the child's environment.
        cmd.env(binding.name(), binding.value().expose_secret());
    }
    cmd.stdin(if command.stdin.is_some() || command.keep_stdin {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);

    let mut child = cmd.spawn().map_err(|source| {
        // ENOENT also reports a missing working directory; only a missing program is
        // NotFound.
        if source.kind() == io::ErrorKind::NotFound && cwd.is_dir() {
            ProcessError::NotFound {
                program: program.clone(),
            }
        } else if (source.kind() == io::ErrorKind::PermissionDenied
            || source.raw_os_error() == Some(rustix::io::Errno::NOEXEC.raw_os_error()))
            && cwd.is_dir()
        {
            // EACCES with a usable working directory: the program is a file without the
            // execute permission, a directory, or on a `noexec` mount; ENOEXEC: a file this
            // system cannot run (no `#!`, another platform's binary).
            ProcessError::NotExecutable {
                program: program.clone(),
            }
        } else {
            ProcessError::Spawn {
                program: program.clone(),
                error: source,
            }
        }
    })?;
    let pid = child.id();
    tracing::debug!(pid, program = %program, "spawned CLI process");
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr_pipe = child.stderr.take();

    let pgid = i32::try_from(pid).ok().and_then(Pid::from_raw);
    let Some(pgid) = pgid else {
        // A pid that is not a positive i32 cannot happen on Unix; never signal group 0.
        let _ = child.kill();
        let _ = child.wait();
        return Err(ProcessError::Spawn {
            program,
            error: io::Error::other("the child has an invalid process id"),
        });
    };
    let (watch, exit) =
        group::start_reaper(child, pgid, limits.kill_grace).map_err(|e| ProcessError::Io {
            op: "start the reaper thread",
            error: e,
        })?;
    // From here on, an early return drops the guard, which ends the group.
    let guard = GroupGuard::new(pgid, watch, limits.kill_grace);

    let stdout = stdout
        .ok_or_else(|| io::Error::other("stdout was not piped"))
        .and_then(ChildStdout::from_std)
        .map_err(|source| ProcessError::Io {
            op: "attach to stdout",
            error: source,
        })?;
    let stderr_pipe = stderr_pipe
        .ok_or_else(|| io::Error::other("stderr was not piped"))
        .and_then(ChildStderr::from_std)
        .map_err(|source| ProcessError::Io {
            op: "attach to stderr",
            error: source,
        })?;
    let mut kept_stdin = None;
    if command.keep_stdin {
        kept_stdin = stdin
            .map(ChildStdin::from_std)
            .transpose()
            .map_err(|source| ProcessError::Io {
                op: "attach to stdin",
                error: source,
            })?;
    } else if let (Some(stdin), Some(text)) = (stdin, command.stdin) {
        let mut stdin = ChildStdin::from_std(stdin).map_err(|source| ProcessError::Io {
            op: "attach to stdin",
            error: source,
        })?;
        // A task, so a prompt larger than the pipe buffer cannot deadlock against a child
        // that writes before it has read everything. Errors (the child exited without
        // reading) are the child's business and show in its exit status.
        runtime.spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let tail = Arc::new(Mutex::new(TailBuffer::new(limits.stderr_tail_bytes)));
    let stderr_task = runtime.spawn(stderr::drain(stderr_pipe, Arc::clone(&tail)));

    // The command's redactor as it is: a turn's was assembled once, for its events too.
    let redaction = command.redactor;
    Ok(Started {
        program,
        pid,
        stdin: kept_stdin,
        stdout,
        stderr: tail,
        stderr_task,
        exit,
        guard,
        redaction,
    })
}

fn is_valid_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 256
}

fn check_var(env: &RuntimeEnv, name: &str, secret: bool) -> Result<(), ProcessError> {
    if !is_valid_var_name(name) {
        return Err(ProcessError::InvalidVarName { len: name.len() });
    }
    if env.is_reserved_var(name) {
        return Err(ProcessError::ReservedVar {
            name: name.to_owned(),
        });
    }
    if !secret && runtime_env::is_credential_var(name) {
        return Err(ProcessError::CredentialVar {
            name: name.to_owned(),
        });
    }
    Ok(())
}
