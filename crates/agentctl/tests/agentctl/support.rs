//! What the agentctl test modules share: the binary under test, isolated in a test's directory
//! (its data and HOME there, never the user's) and on a SQLite store there; the PostgreSQL
//! store the PostgreSQL tests need; output as text, and the check that a secret is in neither
//! stream; private files (a credential, a config, a fake CLI) written as a login writes them.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The agentctl binary under test, with nothing set: the tests that build their own
/// environment or arguments start here.
pub(crate) fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agentctl"))
}

/// The `--store` value of the SQLite file `path`.
pub(crate) fn sqlite_url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// agentctl with its data directory (the default runtime's namespace included) and HOME
/// under `root`, never the user's.
pub(crate) fn isolated(root: &Path) -> Command {
    let mut command = command();
    command
        .env("XDG_DATA_HOME", root.join("xdg-data"))
        .env("HOME", root.join("home"));
    command
}

/// agentctl on the SQLite store `root/threads.sqlite3`, isolated in `root`.
pub(crate) fn on_store(root: &Path) -> Command {
    let mut command = isolated(root);
    command
        .arg("--store")
        .arg(sqlite_url(&root.join("threads.sqlite3")));
    command
}

/// Runs agentctl with `args` on the store `root/threads.sqlite3`, isolated in `root`, stdin
/// closed (no terminal).
pub(crate) fn agentctl(root: &Path, args: &[&str]) -> Output {
    on_store(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The PostgreSQL server the PostgreSQL tests run against. They fail without it rather than
/// pass unseen.
pub(crate) fn postgres_url() -> String {
    std::env::var("THREAD_STORE_POSTGRES_URL").expect(
        "THREAD_STORE_POSTGRES_URL is not set: this PostgreSQL test cannot run \
         (run with --skip postgres to skip it visibly)",
    )
}

/// A PostgreSQL schema no other test uses: `prefix`, this process and the time.
pub(crate) fn unique_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// Output bytes as text, any invalid UTF-8 replaced.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `secret` is in neither stdout nor stderr.
pub(crate) fn assert_no_secret(output: &Output, secret: &str) {
    for stream in [&output.stdout, &output.stderr] {
        assert!(!text(stream).contains(secret));
    }
}

/// Writes `content` to a new file `path` with `mode`, its missing parents made 0700.
pub(crate) fn private_file(path: &Path, content: &str, mode: u32) {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path.parent().unwrap())
        .unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut file, content.as_bytes()).unwrap();
}
