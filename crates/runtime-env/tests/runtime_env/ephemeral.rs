//! Ephemeral sessions disappear when their guard drops; the sweep removes abandoned sessions
//! and leaves live, young and foreign entries alone.

use std::fs::{self, Permissions};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use runtime_env::{IsolationLevel, SessionId, sweep_ephemeral};

use crate::support::Sandbox;

const BASE_VAR: &str = "RUNTIME_ENV_TEST_ABANDON_BASE";
const HELPER: &str = "ephemeral::helper_abandon_session";

fn ephemeral(sb: &Sandbox, id: &str) -> runtime_env::RuntimeEnv {
    sb.builder("user:e")
        .level(IsolationLevel::Ephemeral(SessionId::new(id).unwrap()))
        .build()
        .unwrap()
}

/// Builds an ephemeral session under `base` and leaks its guard, as a crashed host would.
fn abandon(base: &Path, project: &Path) -> std::path::PathBuf {
    let env = runtime_env::RuntimeEnv::builder(base, "user:e".parse().unwrap(), project)
        .level(IsolationLevel::Ephemeral(
            SessionId::new("abandoned").unwrap(),
        ))
        .runtimes(crate::support::all_runtimes())
        .build()
        .unwrap();
    let root = env.root().unwrap().to_owned();
    std::mem::forget(env);
    root
}

/// Run by the sweep test in a child process, which then exits without cleanup. Run directly,
/// it checks that a leaked guard leaves the tree in place.
#[test]
#[ignore = "helper: run by the sweep test in a child process"]
fn helper_abandon_session() {
    match std::env::var_os(BASE_VAR) {
        Some(base) => {
            let base = Path::new(&base);
            abandon(base, base.parent().unwrap());
        }
        None => {
            let sb = Sandbox::new();
            let root = abandon(&sb.base(), &sb.project());
            assert!(root.is_dir());
        }
    }
}

#[test]
fn dropping_the_guard_removes_the_session_tree() {
    let sb = Sandbox::new();
    let env = ephemeral(&sb, "s-drop");
    let root = env.root().unwrap().to_owned();
    fs::write(env.home().join("transcript.jsonl"), b"{}").unwrap();
    assert!(root.is_dir());
    drop(env);
    assert!(!root.exists());
    // The namespace itself stays.
    assert!(sb.base().join("ns/user.e/sessions").is_dir());

    let env = ephemeral(&sb, "s-close");
    let root = env.root().unwrap().to_owned();
    env.close().unwrap();
    assert!(!root.exists());
}

#[test]
fn sweep_removes_abandoned_sessions_and_leaves_live_ones() {
    let sb = Sandbox::new();
    let live = ephemeral(&sb, "live");
    let live_root = live.root().unwrap().to_owned();

    // A session abandoned by a process that exited without dropping its guard.
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", HELPER, "--ignored", "--test-threads=1"])
        .env(BASE_VAR, sb.base())
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    let abandoned = sb.base().join("ns/user.e/sessions/abandoned");
    assert!(abandoned.is_dir());

    // Young sessions are kept whatever their lock state.
    let report = sweep_ephemeral(&sb.base(), Duration::from_secs(3600)).unwrap();
    assert_eq!((report.young, report.live, report.removed.len()), (2, 0, 0));
    assert!(abandoned.is_dir());

    let report = sweep_ephemeral(&sb.base(), Duration::ZERO).unwrap();
    assert_eq!(report.removed, vec![SessionId::new("abandoned").unwrap()]);
    assert_eq!(report.live, 1);
    assert!(!abandoned.exists());
    assert!(live_root.is_dir(), "the live session is untouched");
    assert!(live.home().is_dir());

    drop(live);
    let report = sweep_ephemeral(&sb.base(), Duration::ZERO).unwrap();
    assert_eq!(report, runtime_env::SweepReport::default());
}

#[test]
fn sweep_leaves_foreign_entries_and_never_follows_symlinks() {
    let sb = Sandbox::new();
    drop(ephemeral(&sb, "x"));
    let sessions = sb.base().join("ns/user.e/sessions");
    // A file, a name that is not a session id, and a symlink to a directory outside.
    fs::write(sessions.join("notes.txt"), b"keep").unwrap();
    fs::create_dir(sessions.join("Not-A-Session")).unwrap();
    let outside = sb.tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("precious"), b"keep").unwrap();
    symlink(&outside, sessions.join("linked")).unwrap();
    // An interrupted creation (no lock file yet).
    let staging = sessions.join(".creating-crashed");
    fs::create_dir(&staging).unwrap();
    fs::set_permissions(&staging, Permissions::from_mode(0o700)).unwrap();

    let report = sweep_ephemeral(&sb.base(), Duration::ZERO).unwrap();
    assert_eq!(report.removed_incomplete, 1);
    assert_eq!(report.skipped, 3, "{report:?}");
    assert!(report.removed.is_empty());
    assert!(!staging.exists());
    assert!(sessions.join("notes.txt").is_file());
    assert!(sessions.join("Not-A-Session").is_dir());
    assert!(outside.join("precious").is_file());
}

#[test]
fn sweep_of_a_missing_base_is_empty() {
    let sb = Sandbox::new();
    let report = sweep_ephemeral(&sb.base(), Duration::ZERO).unwrap();
    assert_eq!(report, runtime_env::SweepReport::default());
}
