//! The compatibility code decides by the declared tuple and exact data only: it never looks at
//! a provider's type, a reuse key, a URL's shape or metadata to decide what is compatible.
//!
//! This reads the source of the compatibility paths and fails on any construct that could
//! special-case a provider. It complements the behavioural tests in `crates/agent/tests`
//! (`contract::nothing_but_the_tuple_decides_compatibility`, the robustness matrix).
#![allow(clippy::unwrap_used, reason = "tests")]

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The files that compute or compare compatibility.
const COMPAT_PATHS: &[&str] = &[
    "crates/run-service/src/views.rs",
    "crates/run-service/src/validate.rs",
    "crates/agent/src/compat.rs",
    "crates/agent/src/pipeline/mod.rs",
    "crates/agent/src/pipeline/attach.rs",
    "crates/agent/src/pipeline/decide.rs",
    "crates/agent/src/pipeline/drive.rs",
    "crates/agent/src/pipeline/persist.rs",
];

/// Constructs that would let code recognise a provider or guess equivalence from allocation
/// details: type identity, downcasts, URL or loopback inspection.
const FORBIDDEN: &[&str] = &[
    "TypeId",
    "type_name",
    "downcast",
    "Any",
    "127.0.0.1",
    "localhost",
    "starts_with(\"http",
    "contains(\"://",
    "hosted",
];

/// Non-comment lines of library code, numbered from 1; unit tests (`#[cfg(test)]` onwards)
/// are not library code.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

#[test]
fn compatibility_code_has_no_provider_special_cases() {
    let mut findings = Vec::new();
    for path in COMPAT_PATHS {
        let text = fs::read_to_string(root().join(path)).unwrap();
        assert!(
            text.len() > 200,
            "{path} looks empty: the scan would be vacuous"
        );
        for (n, line) in code_lines(&text) {
            for needle in FORBIDDEN {
                if line.contains(needle) {
                    findings.push(format!("{path}:{n}: `{needle}` in `{}`", line.trim()));
                }
            }
        }
    }
    assert!(
        findings.is_empty(),
        "special-casing constructs found:\n{}",
        findings.join("\n")
    );
}

#[test]
fn reuse_keys_and_metadata_are_only_ever_projected_exactly() {
    // In views.rs they may appear only inside the exact service projection; anywhere else in
    // the compatibility paths they must not appear at all.
    for path in COMPAT_PATHS {
        let text = fs::read_to_string(root().join(path)).unwrap();
        let in_exact_projection = |n: usize| {
            let before: Vec<&str> = text.lines().take(n).collect();
            let opener = before
                .iter()
                .rposition(|l| l.starts_with("fn "))
                .map(|i| before[i]);
            opener.is_some_and(|l| l.starts_with("fn encode_service("))
        };
        for (n, line) in code_lines(&text) {
            for field in ["reuse_key", "metadata"] {
                if line.contains(field) && !(path.ends_with("views.rs") && in_exact_projection(n)) {
                    // validate.rs checks their size and characters; it decides nothing.
                    if path.ends_with("validate.rs") {
                        continue;
                    }
                    panic!(
                        "{path}:{n}: `{field}` used outside the exact projection: {}",
                        line.trim()
                    );
                }
            }
        }
    }
}

#[test]
fn the_scanner_catches_a_planted_special_case() {
    let planted = "fn decide(p: &dyn Any) { if p.type_id() == TypeId::of::<Hosted>() {} }";
    assert!(code_lines(planted).any(|(_, l)| FORBIDDEN.iter().any(|f| l.contains(f))));
}
