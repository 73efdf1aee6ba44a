//! Small helpers shared by the xtask commands: the workspace root, cargo invocations, tidy.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The workspace root: the parent of the xtask package directory.
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ always sits directly under the workspace root")
        .to_path_buf()
}

/// A `cargo <args>` command that runs in the workspace root.
pub(crate) fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new("cargo");
    cmd.args(args).current_dir(project_root());
    cmd
}

/// Render a command for humans: program and arguments separated by spaces.
pub(crate) fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `cmd` with inherited stdio; fail if it cannot start or exits unsuccessfully.
pub(crate) fn run_inherited(cmd: &mut Command) -> anyhow::Result<()> {
    let shown = display(cmd);
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Whether an environment variable is set to a non-empty value.
pub(crate) fn env_is_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// `cargo xtask tidy`: the tidy checks are an ordinary test of `workspace-tests`, so plain
/// `cargo test` runs them too; this command runs just that test target.
pub(crate) fn tidy() -> anyhow::Result<()> {
    run_inherited(&mut cargo([
        "test",
        "--package",
        "workspace-tests",
        "--test",
        "tidy",
    ]))
}
