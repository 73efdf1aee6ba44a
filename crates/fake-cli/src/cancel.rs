//! The cancellation check every driver's fake-CLI tests make: start a run whose fake spawns a
//! grandchild and hangs, drop the run, and see that neither process outlives it.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// Drives `running` until the fake has written `pid_file` (see
/// [`Rule::spawn_grandchild`](crate::Rule::spawn_grandchild)), so the process tree exists
/// before the test drops the run. Box the run future, so that dropping it afterwards really
/// drops it.
///
/// # Panics
/// When the run ends first (it must hang), or the file does not appear within 30 s.
pub async fn run_until_pid_file<F: Future + Unpin>(running: &mut F, pid_file: &Path) {
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            tokio::select! {
                _ = &mut *running => panic!("the run must hang"),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if pid_file.exists() { break; }
                }
            }
        }
    })
    .await;
    assert!(ready.is_ok(), "the grandchild did not start within 30 s");
}

/// Whether the fake process `pid` and the grandchild whose pid is in `pid_file` have both
/// ended (a zombie counts as ended), polled for up to 10 s.
///
/// # Panics
/// When `pid_file` holds no pid.
pub async fn processes_ended(pid: u32, pid_file: &Path) -> bool {
    let grandchild: u32 = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{} holds no pid", pid_file.display()));
    for _ in 0..100 {
        let child_gone = !Path::new(&format!("/proc/{pid}")).exists();
        let grandchild_gone = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
            .unwrap_or(true);
        if child_gone && grandchild_gone {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether process `pid` is running: it exists and is neither a zombie nor dead (read from
/// `/proc/<pid>/stat`).
pub fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name, which may contain anything.
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}
