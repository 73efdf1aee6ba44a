//! What keeps the examples what the guide says they are: the host code of each (between its
//! `host code` markers) names no crate but `agent`, its runtime's crate, `serde`,
//! `serde_json`, `tokio` and `std`, stays under 60 lines, and every line of the guide's (and
//! the README's) Rust blocks is a line of it.

use std::path::Path;

/// Each example, with the one SDK crate besides `agent` it may name.
const EXAMPLES: &[(&str, &str)] = &[
    ("codex.rs", "driver_codex"),
    ("claude_code.rs", "driver_claude_code"),
    ("codebuddy.rs", "driver_codebuddy"),
    ("gemini.rs", "driver_gemini"),
];

/// The crates every host may name: the SDK's front door, its async runtime, its derives, and
/// the JSON reader of its approval handler.
const ALWAYS: &[&str] = &["agent", "serde", "serde_json", "tokio", "std"];

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines between `// host code: begin` and `// host code: end`.
fn host_code(text: &str) -> Vec<&str> {
    let begin = text.find("// host code: begin").expect("a begin marker");
    let end = text.find("// host code: end").expect("an end marker");
    text[begin..end].lines().skip(1).collect()
}

/// The first segments of the paths in `line` (`agent::store::sqlite` names `agent`): a
/// lower-case identifier followed by `::` and preceded by neither `::` nor `.` (a method's
/// turbofish, `run_as::<T>`). A `use` line names only its first segment: the paths in its
/// braces (`use std::{error::Error}`) are inside that crate.
fn crates_named(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    let code = match code.trim_start().strip_prefix("use ") {
        Some(tree) => tree.split('{').next().unwrap_or_default(),
        None => code,
    };
    let bytes = code.as_bytes();
    let mut named = Vec::new();
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate() {
        let ident = b.is_ascii_alphanumeric() || b == b'_';
        match (ident, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let after_path = code[..s].ends_with("::") || code[..s].ends_with('.');
                let word = &code[s..i];
                let lower = word.starts_with(|c: char| c.is_ascii_lowercase());
                if code[i..].starts_with("::") && !after_path && lower {
                    named.push(word.to_owned());
                }
                start = None;
            }
            _ => {}
        }
    }
    named
}

#[test]
fn the_examples_name_only_their_own_crates() {
    for (file, runtime) in EXAMPLES {
        let text = read(&format!("tests/host_examples/{file}"));
        let code = host_code(&text);
        let lines = code
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("//"))
            .count();
        assert!(lines < 60, "{file}: {lines} lines of host code");
        for line in &code {
            for name in crates_named(line) {
                assert!(
                    ALWAYS.contains(&name.as_str()) || name == *runtime,
                    "{file}: `{name}::` in host code: {line}"
                );
            }
        }
    }
}

#[test]
fn the_rule_can_fail() {
    assert_eq!(
        crates_named(
            "use agent::store::sqlite::{SqliteConfig}; let x = t.run_as::<X>(Arc::new(1));"
        ),
        ["agent"]
    );
    assert_eq!(
        crates_named("use std::{error::Error, path::Path}; // one crate, std"),
        ["std"]
    );
    assert_eq!(crates_named("use driver_cli::{x::Y};"), ["driver_cli"]);
    assert_eq!(
        crates_named("let s = thread_store::sqlite::SqliteStore::open(c); // driver_cli::X"),
        ["thread_store"]
    );
}

/// How many lines of `doc`'s Rust blocks there are (`doc` relative to this crate), each of
/// which must be a line of the tested Codex host.
fn quoted_lines(doc: &str) -> usize {
    let text = read("tests/host_examples/codex.rs");
    let tested: Vec<&str> = host_code(&text).iter().map(|l| l.trim()).collect();
    let guide = read(doc);
    let mut in_rust = false;
    let mut quoted = 0;
    for line in guide.lines() {
        if line.starts_with("```") {
            // `rust,ignore` and `rs` are Rust too: no block escapes by its attributes.
            in_rust = line.starts_with("```rust") || line == "```rs";
            continue;
        }
        let line = line.trim();
        if in_rust && !line.is_empty() {
            assert!(
                tested.contains(&line),
                "{doc} quotes a line the tested host does not have: {line}"
            );
            quoted += 1;
        }
    }
    quoted
}

#[test]
fn the_guide_quotes_the_tested_host() {
    let quoted = quoted_lines("../../docs/getting-started.md");
    assert!(quoted > 30, "the guide quotes the host ({quoted} lines)");
}

/// The README's Rust, if it ever has any, is the tested host too (today it has shell blocks
/// only, and links the guide for the code).
#[test]
fn the_readme_quotes_only_the_tested_host() {
    quoted_lines("../../README.md");
}
