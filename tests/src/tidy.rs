//! Repository hygiene ("tidy") checks, run by `tests/tests/tidy.rs` and `cargo xtask tidy`.
//!
//! Rules:
//! - every `.rs` file under `crates/`, `xtask/` and `tests/` (skipping `target/` and hidden
//!   directories) starts with a `//!` module doc saying what the module is for;
//! - every library root `crates/*/src/lib.rs` has the lines `#![forbid(unsafe_code)]` and
//!   `#![deny(missing_docs)]`.
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

/// The result of checking a checkout.
#[derive(Debug, Default)]
pub struct Report {
    /// How many `.rs` files were checked for a module doc.
    pub files_checked: usize,
    /// How many library roots were checked for the required attributes.
    pub library_roots_checked: usize,
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
    }
    for path in library_roots(root)? {
        let text = fs::read_to_string(&path)?;
        report.library_roots_checked += 1;
        report.violations.extend(check_library_root(&path, &text));
    }
    Ok(report)
}
