//! What agentctl's run tests share: agentctl on a SQLite store in a test's directory, its
//! data and HOME there too, stdin closed (no terminal).

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs agentctl with `args` on the store `root/threads.sqlite3`.
pub(crate) fn agentctl(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentctl"))
        .env("XDG_DATA_HOME", root.join("xdg-data"))
        .env("HOME", root.join("home"))
        .arg("--store")
        .arg(format!("sqlite:{}", root.join("threads.sqlite3").display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}
