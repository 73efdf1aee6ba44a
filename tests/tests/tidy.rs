//! Repository hygiene as an ordinary test, so plain `cargo test` catches it.
//!
//! The first test checks this checkout; the others feed the checker bad examples to prove it
//! can fail.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::fs;
use std::path::{Path, PathBuf};

use workspace_tests::tidy::{
    LONG_FILES, MAX_SOURCE_LINES, REQUIRED_LIB_ATTRIBUTES, check_confined_calls, check_file_size,
    check_library_root, check_manifest, check_module_doc, check_stability_line, check_workspace,
};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits directly under the workspace root")
        .to_path_buf()
}

#[test]
fn workspace_is_tidy() {
    let report = check_workspace(&workspace_root()).unwrap();
    // Guard against a walk that silently finds nothing and so "passes".
    assert!(
        report.files_checked >= 8,
        "only {} .rs files found",
        report.files_checked
    );
    assert!(
        report.library_roots_checked >= 1,
        "no crates/*/src/lib.rs found"
    );
    let listing: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert!(
        listing.is_empty(),
        "tidy found {} problem(s):\n{}",
        listing.len(),
        listing.join("\n")
    );
}

#[test]
fn module_doc_rule_rejects_bad_files() {
    let path = Path::new("crates/demo/src/bad.rs");
    for bad in [
        "",
        "use std::fmt;\n",
        "// a plain comment\n//! doc too late\n",
        "/// an item doc, not a module doc\nfn f() {}\n",
        "\n//! doc after a blank line\n",
        "/*! block doc */\n",
    ] {
        let violation = check_module_doc(path, bad);
        assert!(violation.is_some(), "accepted {bad:?}");
        assert_eq!(violation.unwrap().path, path);
    }
    assert_eq!(
        check_module_doc(path, "//! Says what it is for.\nfn f() {}\n"),
        None
    );
    assert_eq!(
        check_module_doc(path, "\u{feff}//! With a byte-order mark.\n"),
        None
    );
}

#[test]
fn library_root_rule_rejects_missing_or_commented_attributes() {
    let path = Path::new("crates/demo/src/lib.rs");
    let good = "//! Demo.\n#![forbid(unsafe_code)]\n#![deny(missing_docs)]\n";
    assert!(check_library_root(path, good).is_empty());

    let missing_both = "//! Demo.\n";
    assert_eq!(check_library_root(path, missing_both).len(), 2);

    let only_forbid = "//! Demo.\n#![forbid(unsafe_code)]\n";
    let violations = check_library_root(path, only_forbid);
    assert_eq!(violations.len(), 1);
    assert!(violations[0].message.contains(REQUIRED_LIB_ATTRIBUTES[1]));

    let commented = "//! Demo.\n// #![forbid(unsafe_code)]\n#![deny(missing_docs)]\n";
    let violations = check_library_root(path, commented);
    assert_eq!(violations.len(), 1);
    assert!(violations[0].message.contains(REQUIRED_LIB_ATTRIBUTES[0]));

    let weaker = "//! Demo.\n#![deny(unsafe_code)]\n#![warn(missing_docs)]\n";
    assert_eq!(check_library_root(path, weaker).len(), 2);
}

#[test]
fn workspace_walk_finds_bad_files_and_skips_target() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |relative: &str, text: &str| {
        let path = root.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "crates/good/src/lib.rs",
        "//! Good.\n//! Stability: stable.\n#![forbid(unsafe_code)]\n#![deny(missing_docs)]\n",
    );
    write(
        "crates/bad/src/lib.rs",
        "//! Bad: no attributes, no stability line.\n",
    );
    write("crates/bad/src/undocumented.rs", "fn f() {}\n");
    write("xtask/src/main.rs", "fn main() {}\n");
    write("tests/tests/it.rs", "//! Fine.\n");
    // Never checked: build output, hidden directories, and directories outside the list.
    write("target/debug/build/out.rs", "fn generated() {}\n");
    write("crates/good/target/x.rs", "fn generated() {}\n");
    write("crates/.hidden/y.rs", "fn hidden() {}\n");
    write("docs/example.rs", "fn outside() {}\n");

    let report = check_workspace(root).unwrap();
    assert_eq!(report.files_checked, 5);
    assert_eq!(report.library_roots_checked, 2);
    let mut bad: Vec<String> = report
        .violations
        .iter()
        .map(|v| v.path.strip_prefix(root).unwrap().display().to_string())
        .collect();
    bad.sort();
    assert_eq!(
        bad,
        [
            "crates/bad/src/lib.rs",
            "crates/bad/src/lib.rs",
            "crates/bad/src/lib.rs",
            "crates/bad/src/undocumented.rs",
            "xtask/src/main.rs",
        ]
    );
}

#[test]
fn stability_rule_wants_the_line_in_the_crate_doc() {
    let path = Path::new("crates/demo/src/lib.rs");
    assert!(check_stability_line(path, "//! Demo.\n//!\n//! Stability: pre-1.0.\n").is_none());
    for bad in [
        "//! Demo.\n",
        "//! Demo.\n#![forbid(unsafe_code)]\n//! Stability: too late.\n",
        "// Stability: not a doc line.\n",
    ] {
        assert!(
            check_stability_line(path, bad).is_some(),
            "accepted {bad:?}"
        );
    }
}

#[test]
fn manifest_rule_wants_workspace_dependencies() {
    let path = Path::new("crates/demo/Cargo.toml");
    let good = "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[dependencies]\nserde.workspace = true\ntokio = { workspace = true, features = [\"rt\"] }\n# a comment\n\n[dev-dependencies]\nproptest.workspace = true\n";
    assert!(check_manifest(path, good).is_empty());
    let bad = "[dependencies]\nserde = \"1\"\n\n[target.'cfg(unix)'.dependencies]\nlibc = { version = \"0.2\" }\n\n[build-dependencies]\ncc = \"1\"\n";
    assert_eq!(check_manifest(path, bad).len(), 3);
}

#[test]
fn size_rule_counts_lines_and_honours_the_exceptions() {
    let path = Path::new("crates/demo/src/big.rs");
    let long = "//! Big.\n".to_owned() + &"fn f() {}\n".repeat(MAX_SOURCE_LINES);
    assert!(check_file_size(path, "crates/demo/src/big.rs", &long).is_some());
    let excepted = LONG_FILES[0].0;
    assert!(check_file_size(Path::new(excepted), excepted, &long).is_none());
    let short = "//! Small.\n".repeat(MAX_SOURCE_LINES);
    assert!(check_file_size(path, "crates/demo/src/big.rs", &short).is_none());
}

#[test]
fn confinement_rule_finds_environment_reads_and_commands_outside_their_places() {
    let path = Path::new("crates/demo/src/lib.rs");
    let text = "//! Demo.\nfn f() {\n    let _ = std::env::var(\"HOME\");\n    let _ = std::process::Command::new(\"sh\");\n    // std::env::var(\"IN_A_COMMENT\") does not count\n}\n";
    assert_eq!(
        check_confined_calls(path, "crates/demo/src/lib.rs", text).len(),
        2
    );
    let allowed = "crates/agentctl/src/run.rs";
    assert_eq!(
        check_confined_calls(Path::new(allowed), allowed, text).len(),
        1
    );
    assert!(
        check_confined_calls(
            path,
            "crates/demo/src/lib.rs",
            "//! Demo.\nfn f() { CliCommand::new(\"x\"); }\n"
        )
        .is_empty()
    );
}

/// The crate names the README's table links (`[`name`](crates/name)`).
fn readme_crates(readme: &str) -> std::collections::BTreeSet<String> {
    readme
        .lines()
        .filter(|line| line.starts_with("| [`"))
        .flat_map(|line| {
            // The first cell may link several crates.
            let cell = line.split(" | ").next().unwrap_or_default();
            cell.split("](crates/")
                .skip(1)
                .filter_map(|link| Some(link.split(')').next()?.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_readme_crate_table_matches_the_workspace() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let listed = readme_crates(&readme);
    let crates: std::collections::BTreeSet<String> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(crates.len() >= 10, "only {} crates found", crates.len());
    let missing: Vec<_> = crates.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&crates).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "README crate table: missing {missing:?}, naming no crate {stale:?}"
    );
}

#[test]
fn the_readme_rule_reads_table_rows_only() {
    let readme = "intro [`x`](crates/x)\n| [`a`](crates/a) | A, not [`y`](crates/y). |\n\
                  | [`b`](crates/b), [`c`](crates/c) | B. |\n";
    let listed = readme_crates(readme);
    assert_eq!(listed.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
}
