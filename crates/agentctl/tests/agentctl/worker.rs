//! `agentctl run --worker`: the reference runtime run by a real `agent-worker` process (built
//! here, into the target directory of the agentctl under test, and passed by `--worker-bin`)
//! answers as the in-process run does and stores a Thread the in-process run resumes; a
//! worker binary that is missing fails with its own exit code, before anything runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::support::{agentctl, text};

/// The `agent-worker` binary, built once by `cargo build -p worker --bin agent-worker` into
/// the profile directory of the agentctl under test.
pub(crate) fn worker_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let agentctl = Path::new(env!("CARGO_BIN_EXE_agentctl"));
        let profile_dir = agentctl.parent().expect("the profile directory");
        let target_dir = profile_dir.parent().expect("the target directory");
        let profile = profile_dir.file_name().expect("the profile's name");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
        let mut cmd = Command::new(cargo);
        cmd.arg("build")
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(&manifest)
            .args(["-p", "worker", "--bin", "agent-worker"])
            .arg("--target-dir")
            .arg(target_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if profile != "debug" {
            cmd.arg("--profile").arg(profile);
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "cargo build of agent-worker: {status}");
        let bin = profile_dir.join(format!("agent-worker{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "{} was built", bin.display());
        bin
    })
}

/// `agentctl run --thread KEY --workspace ROOT --worker --worker-bin BIN hello` in `root`.
fn run_through(root: &Path, key: &str, bin: &str) -> std::process::Output {
    let ws = root.to_str().unwrap();
    agentctl(
        root,
        &[
            "run",
            "--thread",
            key,
            "--workspace",
            ws,
            "--worker",
            "--worker-bin",
            bin,
            "hello",
        ],
    )
}

#[test]
fn a_run_through_the_worker_answers_as_in_process_and_stores_a_resumable_thread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = root.to_str().unwrap().to_owned();
    let bin = worker_bin().to_str().unwrap().to_owned();
    let through = run_through(root, "w", &bin);
    assert!(through.status.success(), "{through:?}");
    let direct = agentctl(root, &["run", "--thread", "d", "--workspace", &ws, "hello"]);
    assert!(direct.status.success(), "{direct:?}");
    let first = |o: &std::process::Output| text(&o.stdout).lines().next().map(str::to_owned);
    assert_eq!(first(&through), first(&direct), "{through:?} {direct:?}");
    assert!(
        text(&through.stdout).contains("session started"),
        "{through:?}"
    );

    // The Thread the worker made resumes in process: the same configuration fingerprint.
    let resumed = agentctl(
        root,
        &[
            "run",
            "--thread",
            "w",
            "--workspace",
            &ws,
            "--resume-only",
            "again",
        ],
    );
    assert!(resumed.status.success(), "{resumed:?}");

    // The worker binary really runs: one that is no worker fails the run.
    let not_a_worker = run_through(root, "x", "/bin/false");
    assert!(!not_a_worker.status.success(), "{not_a_worker:?}");
}

#[test]
fn a_missing_worker_binary_fails_with_its_own_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let missing = root.join("no-such-worker");
    let run = run_through(root, "m", missing.to_str().unwrap());
    assert_eq!(run.status.code(), Some(7), "{run:?}");
    assert!(
        text(&run.stderr).contains("no agent-worker binary at"),
        "{run:?}"
    );
    assert!(run.stdout.is_empty(), "nothing ran");

    // A sandbox without its `bwrap` fails the same way, before anything runs.
    let bin = worker_bin().to_str().unwrap().to_owned();
    let ws = root.to_str().unwrap().to_owned();
    let no_bwrap = agentctl(
        root,
        &[
            "run",
            "--thread",
            "s",
            "--workspace",
            &ws,
            "--worker=sandbox",
            "--worker-bin",
            &bin,
            "--bwrap",
            missing.to_str().unwrap(),
            "hello",
        ],
    );
    assert_eq!(no_bwrap.status.code(), Some(7), "{no_bwrap:?}");
    assert!(
        text(&no_bwrap.stderr).contains("no bwrap at"),
        "{no_bwrap:?}"
    );
}

/// `bwrap` on PATH, or `None` after a visible `SKIPPED` (a failure under CI, whose `.ci/run`
/// installs bubblewrap).
fn bwrap(what: &str) -> Option<()> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()));
    if found {
        return Some(());
    }
    assert!(
        std::env::var_os("CI").is_none_or(|v| v.is_empty()),
        "{what}: bwrap not found; CI must run the sandbox tests (see .ci/run)"
    );
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what} (bwrap not found)");
    None
}

#[test]
fn a_sandboxed_worker_runs_the_thread_and_the_reports_name_its_mode() {
    if bwrap("agentctl --worker=sandbox").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = root.to_str().unwrap().to_owned();
    let bin = worker_bin().to_str().unwrap().to_owned();
    let run = |key: &str, extra: &[&str]| {
        let mut args = vec!["run", "--thread", key, "--workspace", &ws];
        args.extend_from_slice(extra);
        args.push("hello");
        agentctl(root, &args)
    };
    let sandboxed = run("s", &["--worker=sandbox", "--worker-bin", &bin]);
    assert!(sandboxed.status.success(), "{sandboxed:?}");
    let direct = run("d", &[]);
    let first = |o: &std::process::Output| text(&o.stdout).lines().next().map(str::to_owned);
    assert_eq!(
        first(&sandboxed),
        first(&direct),
        "{sandboxed:?} {direct:?}"
    );
    // Moving the Thread out of the sandbox is no semantic change: it resumes in process.
    let resumed = run("s", &["--resume-only"]);
    assert!(resumed.status.success(), "{resumed:?}");
    assert!(
        text(&resumed.stdout).contains("session resumed"),
        "{resumed:?}"
    );

    // Each report names the mode the flag puts in force.
    for (flag, line) in [
        (
            None,
            "isolation: subprocess (direct child, same OS user) separates_principals=no",
        ),
        (
            Some("--worker"),
            "isolation: subprocess (direct child, same OS user) separates_principals=no",
        ),
        (
            Some("--worker=sandbox"),
            "isolation: worker (worker, OS boundary) separates_principals=yes",
        ),
    ] {
        let mut args = vec!["auth", "status"];
        args.extend(flag);
        let status = agentctl(root, &args);
        assert!(status.status.success(), "{status:?}");
        assert!(
            text(&status.stdout).starts_with(line),
            "{flag:?}: {status:?}"
        );
        let mut args = vec!["runtime-env", "show"];
        args.extend(flag);
        let show = agentctl(root, &args);
        assert!(show.status.success(), "{show:?}");
        assert!(text(&show.stdout).contains(line), "{flag:?}: {show:?}");
    }
    let bundle_path = root.join("bundle.json");
    let bundle = agentctl(
        root,
        &[
            "support-bundle",
            "--worker=sandbox",
            "-o",
            bundle_path.to_str().unwrap(),
        ],
    );
    assert!(bundle.status.success(), "{bundle:?}");
    let bundle: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&bundle_path).unwrap()).unwrap();
    assert!(
        bundle.to_string().contains(r#""mode":"worker""#),
        "{bundle}"
    );
}
