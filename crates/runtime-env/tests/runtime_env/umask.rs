//! Created directories are 0700 and files 0600 whatever the umask.
//!
//! The umask is process-global and setting it needs unsafe code, so the tests re-run this test
//! binary under `sh -c 'umask NNN; exec …'`, asking it to run only the ignored helper below,
//! which creates a full layout in the directory named by `RUNTIME_ENV_TEST_LAYOUT_DIR`. The
//! parent then checks the mode of everything that was created.

use std::fs;
use std::path::Path;
use std::process::Command;

use runtime_env::{IsolationLevel, SessionId};

use crate::support::{Sandbox, claude, codex, gemini, mode, walk};

const DIR_VAR: &str = "RUNTIME_ENV_TEST_LAYOUT_DIR";
const HELPER: &str = "umask::helper_create_layout";

/// Creates a namespaced and an ephemeral layout plus config files and a lock file under
/// `parent`, keeping the ephemeral tree on disk.
fn create_layout(parent: &Path) {
    let base = parent.join("base");
    let project = parent.join("project");
    fs::create_dir_all(&project).unwrap();
    let builder = |level| {
        runtime_env::RuntimeEnv::builder(&base, "user:umask".parse().unwrap(), &project)
            .level(level)
            .runtimes(crate::support::all_runtimes())
            .build()
            .unwrap()
    };
    let env = builder(IsolationLevel::Namespaced);
    env.write_runtime_file(codex(), "config.toml", b"model = \"m\"\n")
        .unwrap();
    env.write_runtime_file(gemini(), ".gemini/policies/a.toml", b"x")
        .unwrap();
    let eph = builder(IsolationLevel::Ephemeral(SessionId::new("s1").unwrap()));
    eph.write_runtime_file(claude(), "nested/dir/settings.json", b"{}")
        .unwrap();
    // Keep the ephemeral tree for inspection (the process exits right after).
    std::mem::forget(eph);
}

fn assert_private_tree(base: &Path) {
    let paths = walk(base);
    let mut files = 0;
    for p in &paths {
        let meta = fs::symlink_metadata(p).unwrap();
        if meta.is_dir() {
            assert_eq!(mode(p), 0o700, "{}", p.display());
        } else {
            assert!(meta.is_file(), "{}", p.display());
            assert_eq!(mode(p), 0o600, "{}", p.display());
            files += 1;
        }
    }
    // config.toml, a.toml, settings.json, two config locks and the session's `.live` lock.
    assert_eq!(files, 6, "{paths:#?}");
    // Per tree (namespace, session): 7 layout dirs, 5 state dirs, the config lock, the
    // written file and its new parents; plus base, ns, the namespace root, sessions, the
    // session root and `.live`.
    assert_eq!(paths.len(), 38, "the whole layout was created: {paths:#?}");
}

/// Run by the umask tests in a child process. Run directly (for example with
/// `--include-ignored`), it checks the layout under the current umask.
#[test]
#[ignore = "helper: run by the umask tests in a child process with a chosen umask"]
fn helper_create_layout() {
    match std::env::var_os(DIR_VAR) {
        Some(dir) => create_layout(Path::new(&dir)),
        None => {
            let sb = Sandbox::new();
            create_layout(sb.tmp.path());
            assert_private_tree(&sb.tmp.path().join("base"));
        }
    }
}

fn run_under_umask(umask: &str) {
    let sb = Sandbox::new();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(&exe)
        .args(["--exact", HELPER, "--ignored", "--test-threads=1"])
        .env(DIR_VAR, sb.tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "helper failed under umask {umask}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the helper did not run: {stdout}"
    );
    assert_private_tree(&sb.tmp.path().join("base"));
}

#[test]
fn umask_000_gives_0700_dirs_and_0600_files() {
    run_under_umask("000");
}

#[test]
fn umask_022_gives_0700_dirs_and_0600_files() {
    run_under_umask("022");
}

/// A umask that removes the owner's write bit cannot make the layout unusable either.
#[test]
fn umask_277_gives_0700_dirs_and_0600_files() {
    run_under_umask("277");
}
