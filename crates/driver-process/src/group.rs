//! Process-group supervision: the reaper thread, the SIGTERM→SIGKILL escalation and the
//! cleanup of group members left behind by the main process.
//!
//! Why std threads and not tokio tasks: the guarantees "the direct child is reaped" and
//! "SIGKILL follows SIGTERM" must hold when the async runtime is shutting down, or when a
//! `CliProcess` is dropped outside any runtime. A blocked `wait` in a dedicated thread reaps
//! the child whatever happens to the runtime, and a short-lived thread times the escalation.

use std::io;
use std::process::{Child, ExitStatus as StdExitStatus};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::sync::oneshot;

/// The reaper's final report: the main process's status, sent after the group cleanup.
pub(crate) type ExitReport = io::Result<StdExitStatus>;

/// Whether the main process has been reaped; lets the escalation thread stop early.
#[derive(Debug, Default)]
pub(crate) struct ExitWatch {
    exited: Mutex<bool>,
    cv: Condvar,
}

impl ExitWatch {
    fn mark(&self) {
        *self.exited.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    pub(crate) fn has_exited(&self) -> bool {
        *self.exited.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` for the exit; whether it happened.
    fn wait_for(&self, timeout: Duration) -> bool {
        let guard = self.exited.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = self
            .cv
            .wait_timeout_while(guard, timeout, |exited| !*exited)
            .unwrap_or_else(PoisonError::into_inner);
        *guard
    }
}

/// Starts the reaper thread for `child`, the leader of process group `pgid`.
///
/// The thread waits for the child, marks the [`ExitWatch`], ends whatever is left of the
/// group (SIGTERM, then SIGKILL after `grace`), and sends the child's status.
///
/// # Errors
///
/// The thread could not be started; the group has then been killed and the child reaped.
pub(crate) fn start_reaper(
    child: Child,
    pgid: Pid,
    grace: Duration,
) -> io::Result<(Arc<ExitWatch>, oneshot::Receiver<ExitReport>)> {
    let watch = Arc::new(ExitWatch::default());
    let (tx, rx) = oneshot::channel();
    // Shared so that the child can be taken back if the thread cannot start.
    let slot = Arc::new(Mutex::new(Some(child)));
    let thread_slot = Arc::clone(&slot);
    let thread_watch = Arc::clone(&watch);
    let started = std::thread::Builder::new()
        .name(format!("driver-cli-reaper-{}", pgid.as_raw_pid()))
        .spawn(move || {
            let child = thread_slot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let Some(mut child) = child else { return };
            let status = child.wait();
            thread_watch.mark();
            end_leftovers(pgid, grace);
            let _ = tx.send(status);
        });
    match started {
        Ok(_) => Ok((watch, rx)),
        Err(e) => {
            signal(pgid, Signal::KILL);
            let child = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(mut child) = child {
                let _ = child.wait();
            }
            Err(e)
        }
    }
}

/// Sends `sig` to the group; a group that no longer exists is not an error.
fn signal(pgid: Pid, sig: Signal) {
    if let Err(e) = kill_process_group(pgid, sig)
        && e != rustix::io::Errno::SRCH
    {
        tracing::debug!(pgid = pgid.as_raw_pid(), error = %e, "signalling the CLI process group failed");
    }
}

/// Ends the members of the group once its leader is gone: SIGTERM, poll, SIGKILL after
/// `grace`.
fn end_leftovers(pgid: Pid, grace: Duration) {
    if !group_alive(pgid) {
        return;
    }
    tracing::debug!(
        pgid = pgid.as_raw_pid(),
        "ending processes left in the CLI's group"
    );
    signal(pgid, Signal::TERM);
    let deadline = Instant::now() + grace;
    let mut pause = Duration::from_millis(5);
    loop {
        if !group_alive(pgid) {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    tracing::debug!(
        pgid = pgid.as_raw_pid(),
        "SIGKILL to processes left in the CLI's group"
    );
    signal(pgid, Signal::KILL);
}

/// Whether the group has a member that is not a zombie.
///
/// Zombies count as gone: an orphaned member is reaped by init (or a subreaper), not by us,
/// and some container inits never reap, which would otherwise make every cleanup wait out
/// its grace period.
fn group_alive(pgid: Pid) -> bool {
    if test_kill_process_group(pgid).is_err() {
        return false;
    }
    live_members(pgid).unwrap_or(true)
}

/// Scans `/proc` for a non-zombie member of the group; `None` where `/proc` is unavailable.
#[cfg(target_os = "linux")]
fn live_members(pgid: Pid) -> Option<bool> {
    let wanted = pgid.as_raw_pid().to_string();
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may contain spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if pgrp == wanted && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(not(target_os = "linux"))]
fn live_members(_pgid: Pid) -> Option<bool> {
    None
}

/// Ends the process group when dropped unless disarmed.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    ender: GroupEnder,
    armed: bool,
}

impl GroupGuard {
    pub(crate) fn new(pgid: Pid, watch: Arc<ExitWatch>, grace: Duration) -> Self {
        Self {
            ender: GroupEnder { pgid, watch, grace },
            armed: true,
        }
    }

    /// Whether the main process has been reaped.
    pub(crate) fn has_exited(&self) -> bool {
        self.ender.watch.has_exited()
    }

    /// The group is known to be finished (the reaper reported); dropping does nothing.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    /// Ends the group now ([`GroupEnder::terminate`]). Returns at once.
    pub(crate) fn terminate(&self) {
        self.ender.terminate();
    }

    /// What ends the group from elsewhere (a task that reads the process's output).
    pub(crate) fn ender(&self) -> GroupEnder {
        self.ender.clone()
    }
}

/// Ends a process group from wherever it is held, without owning the process.
#[derive(Debug, Clone)]
pub struct GroupEnder {
    pgid: Pid,
    watch: Arc<ExitWatch>,
    grace: Duration,
}

impl GroupEnder {
    /// SIGTERM to the group now, and SIGKILL after the grace period unless the main process
    /// exited by then (the reaper then ends the rest of the group). Returns at once.
    pub fn terminate(&self) {
        if self.watch.has_exited() {
            // The reaper is already ending what is left of the group.
            return;
        }
        signal(self.pgid, Signal::TERM);
        let pgid = self.pgid;
        let grace = self.grace;
        let watch = Arc::clone(&self.watch);
        let started = std::thread::Builder::new()
            .name(format!("driver-process-kill-{}", pgid.as_raw_pid()))
            .spawn(move || {
                if !watch.wait_for(grace) {
                    tracing::debug!(
                        pgid = pgid.as_raw_pid(),
                        "CLI ignored SIGTERM; sending SIGKILL"
                    );
                    signal(pgid, Signal::KILL);
                }
            });
        if started.is_err() {
            signal(self.pgid, Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.terminate();
        }
    }
}
