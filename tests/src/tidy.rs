//! Repository hygiene ("tidy") checks, run by `tests/tests/tidy.rs` and `cargo xtask tidy`.
//!
//! Rules:
//! - every `.rs` file under `crates/`, `xtask/` and `tests/` (skipping `target/` and hidden
//!   directories) starts with a `//!` module doc saying what the module is for;
//! - every library root `crates/*/src/lib.rs` has the lines `#![forbid(unsafe_code)]` and
//!   `#![deny(missing_docs)]`, and its crate doc has a `Stability:` line;
//! - every dependency of every member (`crates/*`, `xtask`, `tests`) is declared
//!   `.workspace = true`, so versions live in one place;
//! - no source file under `crates/*/src` is longer than [`MAX_SOURCE_LINES`], except those in
//!   [`LONG_FILES`], each with its reason;
//! - library sources read the process environment, or build a `Command`, only where
//!   [`ENV_READERS`] and [`PROCESS_BUILDERS`] say, each with its reason: configuration reaches
//!   libraries as values, and children start only through the allow-listed environment.
//!
//! The checks are plain functions over `(path, text)` so they can be tested on in-memory
//! examples, plus a walker that applies them to a checkout.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The directories, relative to the workspace root, whose `.rs` files are checked.
pub const CHECKED_DIRS: [&str; 3] = ["crates", "xtask", "tests"];

/// The inner attributes every library root must carry, each on its own line.
pub const REQUIRED_LIB_ATTRIBUTES: [&str; 2] =
    ["#![forbid(unsafe_code)]", "#![deny(missing_docs)]"];

/// The longest a source file under `crates/*/src` may be, in lines.
pub const MAX_SOURCE_LINES: usize = 600;

/// Source files allowed over [`MAX_SOURCE_LINES`], each with the reason.
pub const LONG_FILES: &[(&str, &str)] = &[
    (
        "crates/run-service/src/validate.rs",
        "every attachment rule with its unit test beside it",
    ),
    (
        "crates/test-kit/src/restart.rs",
        "the host-restart scenario every real-CLI test runs, one sequence of steps",
    ),
];

/// Where library sources may read the process environment (`std::env::var` and kin), each
/// with the reason. A path ending in `/` covers its directory.
pub const ENV_READERS: &[(&str, &str)] = &[
    (
        "crates/agentctl/src/",
        "the operator CLI: a binary reads its own environment (RUST_LOG, variables the operator names)",
    ),
    (
        "crates/driver-process/src/tests/support.rs",
        "unit tests of the process layer: the host's PATH is the allow-listed variable their children find `sh` and `printf` through",
    ),
    (
        "crates/driver-codex/src/app_server/schema_check.rs",
        "a unit test of the pinned binary's schema: it reads `CODEX_BIN`, `PATH` for the binary's Node wrapper, and `BLESS=1`",
    ),
    (
        "crates/cli-test-kit/src/replay.rs",
        "the driver test kit's transcript replay: `BLESS=1` re-blesses the transcript goldens",
    ),
    (
        "crates/cli-test-kit/src/turns.rs",
        "the `turns` benches' shared measuring part: `TURNS_VERBOSE=1` prints every turn",
    ),
    (
        "crates/fake-cli/src/",
        "the scripted fake CLI reads its scenario and records its environment, as a real CLI would",
    ),
    (
        "crates/runtime-env/src/child_env.rs",
        "the one place a child's allow-listed environment is read from the host",
    ),
    (
        "crates/test-kit/src/real_cli.rs",
        "test support: the real-CLI binary variables and the CI rule that never skips",
    ),
    (
        "crates/transcript-recorder/src/main.rs",
        "a developer tool's entry point: reads PATH, the one host variable its CLI children get",
    ),
];

/// Where library sources may build a `std::process::Command`, each with the reason.
pub const PROCESS_BUILDERS: &[(&str, &str)] = &[
    (
        "crates/runtime-env/src/runtime_env/mod.rs",
        "the one place a runtime's child command is built, from the allow-listed environment",
    ),
    (
        "crates/runtime-env/src/child_env.rs",
        "the child-environment builder applies itself to a command",
    ),
    (
        "crates/driver-codex/src/app_server/schema_check.rs",
        "a unit test that runs `codex app-server generate-json-schema`, a tool command, not a runtime",
    ),
    (
        "crates/fake-cli/src/",
        "test infrastructure: building and re-executing the fake binary",
    ),
];

/// One broken rule in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The offending file.
    pub path: PathBuf,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Check that `text` (the contents of `path`) starts with a `//!` module doc.
pub fn check_module_doc(path: &Path, text: &str) -> Option<Violation> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.starts_with("//!") {
        return None;
    }
    Some(Violation {
        path: path.to_path_buf(),
        message: "must start with a `//!` doc comment saying what the module is for".to_owned(),
    })
}

/// Check that a library root carries every attribute in [`REQUIRED_LIB_ATTRIBUTES`] as a line
/// of its own (a commented-out attribute does not count).
pub fn check_library_root(path: &Path, text: &str) -> Vec<Violation> {
    REQUIRED_LIB_ATTRIBUTES
        .iter()
        .filter(|attribute| !text.lines().any(|line| line.trim() == **attribute))
        .map(|attribute| Violation {
            path: path.to_path_buf(),
            message: format!("library root must contain the line `{attribute}`"),
        })
        .collect()
}

/// Check that a library root's crate doc (its leading `//!` lines) has a `Stability:` line.
pub fn check_stability_line(path: &Path, text: &str) -> Option<Violation> {
    let has = text
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .any(|line| {
            line.trim_start_matches("//!")
                .trim_start()
                .starts_with("Stability:")
        });
    (!has).then(|| Violation {
        path: path.to_path_buf(),
        message: "the crate doc must say how stable the API is, in a line starting `Stability:`"
            .to_owned(),
    })
}

/// Check that every dependency in a manifest (`text`) is declared `.workspace = true`.
pub fn check_manifest(path: &Path, text: &str) -> Vec<Violation> {
    let mut section = String::new();
    let mut violations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let in_dependencies = section.ends_with("dependencies");
        if !in_dependencies || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.contains("workspace = true") {
            violations.push(Violation {
                path: path.to_path_buf(),
                message: format!(
                    "line {}: declare the dependency in [workspace.dependencies] and use it with `.workspace = true`",
                    index + 1
                ),
            });
        }
    }
    violations
}

/// Check a source file's length against [`MAX_SOURCE_LINES`] and [`LONG_FILES`]; `relative`
/// is its path from the workspace root, with `/` separators.
pub fn check_file_size(path: &Path, relative: &str, text: &str) -> Option<Violation> {
    let lines = text.lines().count();
    let excepted = LONG_FILES.iter().any(|(long, _)| *long == relative);
    (lines > MAX_SOURCE_LINES && !excepted).then(|| Violation {
        path: path.to_path_buf(),
        message: format!(
            "{lines} lines, over the budget of {MAX_SOURCE_LINES}: split it, or add it to LONG_FILES with the reason"
        ),
    })
}

/// A confined call: the texts that make it, the places allowed to, and why the others may not.
type ConfinedCall = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// Check that a library source reads the environment and builds commands only where
/// [`ENV_READERS`] and [`PROCESS_BUILDERS`] allow; `relative` as in [`check_file_size`].
/// Comment lines do not count.
pub fn check_confined_calls(path: &Path, relative: &str, text: &str) -> Vec<Violation> {
    let allowed = |list: &[(&str, &str)]| {
        list.iter().any(|(place, _)| {
            relative == *place || (place.ends_with('/') && relative.starts_with(place))
        })
    };
    let code = || {
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
    };
    let mut violations = Vec::new();
    let rules: [ConfinedCall; 2] = [
        (
            &["env::var(", "env::var_os(", "env::vars(", "env::vars_os("],
            ENV_READERS,
            "reads the process environment; libraries take configuration as values (or add the file to ENV_READERS with the reason)",
        ),
        (
            &["process::Command::new(", " Command::new("],
            PROCESS_BUILDERS,
            "builds a process Command; children start through runtime-env and driver-process (or add the file to PROCESS_BUILDERS with the reason)",
        ),
    ];
    for (needles, list, why) in rules {
        if allowed(list) {
            continue;
        }
        for (index, line) in code() {
            if needles.iter().any(|needle| line.contains(needle)) {
                violations.push(Violation {
                    path: path.to_path_buf(),
                    message: format!("line {}: {why}", index + 1),
                });
            }
        }
    }
    violations
}

/// Every `.rs` file under [`CHECKED_DIRS`] of `root`, sorted, skipping `target` and hidden
/// directories.
pub fn rust_files(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in CHECKED_DIRS {
        let dir = root.join(dir);
        if dir.is_dir() {
            walk(&dir, &mut files)?;
        }
    }
    files.sort();
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            if name == "target" || name.starts_with('.') {
                continue;
            }
            walk(&path, files)?;
        } else if file_type.is_file() && name.ends_with(".rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// The library roots `crates/*/src/lib.rs` of `root`, sorted.
pub fn library_roots(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut roots = Vec::new();
    let crates = root.join("crates");
    if crates.is_dir() {
        for entry in fs::read_dir(&crates)? {
            let lib = entry?.path().join("src").join("lib.rs");
            if lib.is_file() {
                roots.push(lib);
            }
        }
    }
    roots.sort();
    Ok(roots)
}

/// The manifests of the members: `crates/*/Cargo.toml`, `xtask` and `tests`, sorted.
pub fn member_manifests(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut manifests = Vec::new();
    let crates = root.join("crates");
    if crates.is_dir() {
        for entry in fs::read_dir(&crates)? {
            let manifest = entry?.path().join("Cargo.toml");
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    for member in ["xtask", "tests"] {
        let manifest = root.join(member).join("Cargo.toml");
        if manifest.is_file() {
            manifests.push(manifest);
        }
    }
    manifests.sort();
    Ok(manifests)
}

/// The result of checking a checkout.
#[derive(Debug, Default)]
pub struct Report {
    /// How many `.rs` files were checked for a module doc.
    pub files_checked: usize,
    /// How many library roots were checked for the required attributes.
    pub library_roots_checked: usize,
    /// How many member manifests were checked for workspace dependencies.
    pub manifests_checked: usize,
    /// Every broken rule found.
    pub violations: Vec<Violation>,
}

/// Apply every rule to the checkout at `root`.
pub fn check_workspace(root: &Path) -> io::Result<Report> {
    let mut report = Report::default();
    for path in rust_files(root)? {
        let text = fs::read_to_string(&path)?;
        report.files_checked += 1;
        report.violations.extend(check_module_doc(&path, &text));
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let library_source = relative.starts_with("crates/") && relative.contains("/src/");
        if library_source {
            report
                .violations
                .extend(check_file_size(&path, &relative, &text));
            report
                .violations
                .extend(check_confined_calls(&path, &relative, &text));
        }
    }
    for path in library_roots(root)? {
        let text = fs::read_to_string(&path)?;
        report.library_roots_checked += 1;
        report.violations.extend(check_library_root(&path, &text));
        report.violations.extend(check_stability_line(&path, &text));
    }
    for path in member_manifests(root)? {
        let text = fs::read_to_string(&path)?;
        report.manifests_checked += 1;
        report.violations.extend(check_manifest(&path, &text));
    }
    Ok(report)
}
