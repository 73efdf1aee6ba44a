//! Finding a real agent CLI for an end-to-end test, with the skip rule every such test obeys.
//!
//! Locally, a test whose binary is not installed prints a visible `SKIPPED` line and returns.
//! Under CI (the `CI` variable is set) a missing binary fails the test instead: CI installs
//! every pinned CLI (see `.ci/run`) and never skips a real-binary test.

use std::io::Write as _;
use std::path::PathBuf;

/// The binary named by the environment variable `var` (for example `CODEX_BIN`), if it is
/// set and exists.
///
/// When it is not: under CI this panics (the test fails); otherwise it writes
/// `SKIPPED: <what> (<reason>)` straight to the process's stderr, which the test harness does
/// not capture, so the skip shows in every run, and returns `None`.
///
/// ```
/// if let Some(codex) = test_kit::real_cli::binary("CODEX_BIN", "my real-codex test") {
///     // run it
///     # drop(codex);
/// }
/// ```
///
/// # Panics
/// Under CI, when the variable is unset or names no file.
pub fn binary(var: &str, what: &str) -> Option<PathBuf> {
    let reason = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) if PathBuf::from(&path).exists() => return Some(PathBuf::from(path)),
        Some(path) => format!("{var}={} does not exist", PathBuf::from(path).display()),
        None => format!("{var} is not set"),
    };
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{what}: {reason}; CI must run real-binary tests (see .ci/run)");
    }
    // Straight to the file descriptor: libtest captures `println!`/`eprintln!` only.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what} ({reason})");
    None
}

/// Runs `future` on a two-worker Tokio runtime of its own, dropped when it returns (the
/// real-binary tests are plain `#[test]`s).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(future)
}
