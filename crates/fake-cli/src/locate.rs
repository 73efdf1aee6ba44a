//! Finding (and if needed building) the `fake-cli` binary from a test process.
//!
//! Cargo builds a package's binaries only for that package's own tests, and artifact
//! dependencies are unstable, so a driver crate's tests cannot ask Cargo for this binary. The
//! locator runs `cargo build` for it instead, once per test process, into the same target and
//! profile directory as the running test. That is why driver crates need no build script.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Overrides the binary's location (no build is attempted).
const BIN_ENV: &str = "FAKE_CLI_BIN";

/// The binary could not be found or built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateError {
    message: String,
}

impl fmt::Display for LocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot locate the fake-cli binary: {}", self.message)
    }
}

impl std::error::Error for LocateError {}

fn err(message: impl Into<String>) -> LocateError {
    LocateError {
        message: message.into(),
    }
}

/// The path of the `fake-cli` binary; see [`try_binary_path`].
///
/// # Panics
///
/// When the binary can neither be found nor built. This is a test helper: a test that needs
/// the fake cannot run without it, and the message says why.
pub fn binary_path() -> PathBuf {
    match try_binary_path() {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

/// The path of the `fake-cli` binary.
///
/// `FAKE_CLI_BIN`, when set, is returned as it is. Otherwise the binary lives in the profile
/// directory of the running test (`current_exe()`'s `deps/..`). The first call in a process
/// runs `$CARGO build --bin fake-cli` (falling back to `cargo` when `CARGO` is unset) for that
/// target directory and profile: a no-op when the binary is fresh, and never a stale binary
/// after the fake's sources changed. If that build fails but a binary exists, the existing
/// binary is used and a warning is printed on stderr. The result is cached (`OnceLock`).
///
/// # Errors
///
/// The test executable's location is unknown, or the build failed and no binary exists.
pub fn try_binary_path() -> Result<PathBuf, LocateError> {
    static BIN: OnceLock<Result<PathBuf, LocateError>> = OnceLock::new();
    BIN.get_or_init(locate).clone()
}

fn locate() -> Result<PathBuf, LocateError> {
    if let Some(path) = std::env::var_os(BIN_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| err(format!("current_exe: {e}")))?;
    let parent = exe
        .parent()
        .ok_or_else(|| err("the test executable has no parent directory"))?;
    let profile_dir = if parent.file_name().is_some_and(|n| n == "deps") {
        parent.parent().unwrap_or(parent)
    } else {
        parent
    };
    let bin = profile_dir.join(format!("fake-cli{}", std::env::consts::EXE_SUFFIX));
    match build(profile_dir) {
        Ok(()) if bin.is_file() => Ok(bin),
        Ok(()) => Err(err(format!(
            "cargo built it but {} does not exist",
            bin.display()
        ))),
        Err(e) if bin.is_file() => {
            eprintln!(
                "warning: {e}; using the existing {} (it may be stale)",
                bin.display()
            );
            Ok(bin)
        }
        Err(e) => Err(e),
    }
}

/// Builds the binary into `profile_dir` (`<target dir>/<profile>`).
fn build(profile_dir: &Path) -> Result<(), LocateError> {
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| err("the profile directory has no parent"))?;
    let profile = profile_dir
        .file_name()
        .ok_or_else(|| err("the profile directory has no name"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut cmd = Command::new(&cargo);
    cmd.arg("build")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--bin", "fake-cli"])
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // The `dev` and `test` profiles share the `debug` directory; others are named after
    // their profile.
    if profile != "debug" {
        cmd.arg("--profile").arg(profile);
    }
    let status = cmd.status().map_err(|e| {
        err(format!(
            "cannot run `{} build`: {e}",
            Path::new(&cargo).display()
        ))
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(err(format!(
            "`cargo build --bin fake-cli` failed ({status})"
        )))
    }
}
