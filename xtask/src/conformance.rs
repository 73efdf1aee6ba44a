//! `cargo xtask conformance`: run every conformance suite implementation of the workspace.
//!
//! A crate declares its suite in its own `Cargo.toml`, found through `cargo metadata`, so
//! adding an implementation (a driver crate, a store adapter) touches that crate alone:
//!
//! ```toml
//! [package.metadata.conformance]
//! # The integration-test target holding ONE `#[test]` per implementation.
//! target = "driver_codex"
//! # Cargo features that build the suite (optional).
//! features = ["conformance"]
//! # Each implementation by exact test name, with the variable it needs (optional).
//! implementations = [{ test = "conformance::codex_fake_cli" }, { test = "postgres", env = "THREAD_STORE_POSTGRES_URL" }]
//! ```
//!
//! For each implementation this runs
//! `cargo test -p <package> [--features …] --test <target> -- <test> --exact`
//! and requires exactly one passed test and no failure: a run in which no test ran (a typo in
//! the metadata, a renamed or `#[ignore]`d test) is a FAILURE, never a pass. An
//! implementation whose required environment variable is unset is reported as SKIPPED,
//! visibly.

use std::io::Write as _;
use std::process::Output;

use anyhow::{Context, bail};

use crate::util::{cargo, display, env_is_set};

/// One conformance suite: a crate's test target and its implementations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Suite {
    /// The cargo package that holds the suite (its directory name).
    pub(crate) package: String,
    /// Cargo features that build the suite.
    pub(crate) features: Vec<String>,
    /// The integration-test target.
    pub(crate) target: String,
    /// `(exact test name, environment variable it needs)`.
    pub(crate) implementations: Vec<(String, Option<String>)>,
}

/// The suites the workspace's manifests declare, by package name.
pub(crate) fn suites() -> anyhow::Result<Vec<Suite>> {
    let mut cmd = cargo(["metadata", "--no-deps", "--format-version", "1", "--locked"]);
    let output = cmd
        .output()
        .with_context(|| format!("could not start `{}`", display(&cmd)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed:\n{}",
            display(&cmd),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata printed no JSON")?;
    suites_in(&metadata)
}

/// The suites of a `cargo metadata` document.
fn suites_in(metadata: &serde_json::Value) -> anyhow::Result<Vec<Suite>> {
    let mut suites = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let declared = &package["metadata"]["conformance"];
        if declared.is_null() {
            continue;
        }
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        let strings = |value: &serde_json::Value| -> Vec<String> {
            value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let Some(target) = declared["target"].as_str() else {
            bail!("{name}: [package.metadata.conformance] has no `target`");
        };
        let mut implementations = Vec::new();
        for implementation in declared["implementations"].as_array().into_iter().flatten() {
            let Some(test) = implementation["test"].as_str() else {
                bail!("{name}: a conformance implementation has no `test`");
            };
            let env = implementation["env"].as_str().map(str::to_owned);
            implementations.push((test.to_owned(), env));
        }
        if implementations.is_empty() {
            bail!("{name}: [package.metadata.conformance] lists no implementation");
        }
        suites.push(Suite {
            package: name,
            features: strings(&declared["features"]),
            target: target.to_owned(),
            implementations,
        });
    }
    suites.sort_by(|a, b| a.package.cmp(&b.package));
    Ok(suites)
}

/// Width of the `suite / implementation ....` column.
const LABEL_WIDTH: usize = 40;

/// The outcome of one implementation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed(String),
    Skipped(String),
}

/// Counts from libtest's `test result:` lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct TestCounts {
    passed: u32,
    failed: u32,
    ignored: u32,
    /// Number of `test result:` lines seen.
    result_lines: u32,
}

/// Run every registered implementation; fail if any failed.
pub(crate) fn run() -> anyhow::Result<()> {
    run_suites(&suites()?)
}

/// For `cargo xtask ci`, whose test step (`cargo test --workspace --all-features`) has run
/// every conformance target already: checks, without running anything again, that each
/// registered implementation is exactly one test of its suite's target (`--list`), so the
/// registry cannot drift from the tests it names.
pub(crate) fn verify_registered() -> anyhow::Result<()> {
    // The test step built every conformance target with the workspace's features; asking
    // cargo for the same build again only reports the executables (nothing recompiles).
    let mut build = cargo([
        "test",
        "--workspace",
        "--all-features",
        "--locked",
        "--no-run",
        "--message-format=json",
    ]);
    let output = build
        .output()
        .with_context(|| format!("could not start `{}`", display(&build)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed:\n{}",
            display(&build),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let executables = test_executables(&String::from_utf8_lossy(&output.stdout));
    let mut missing = Vec::new();
    let mut count = 0u32;
    let suites = suites()?;
    for suite in &suites {
        for (test, _) in &suite.implementations {
            count += 1;
            let key = (suite.package.clone(), suite.target.clone());
            let Some(executable) = executables.get(&key) else {
                missing.push(format!(
                    "{} / {test} (test target {} not built)",
                    suite.package, suite.target
                ));
                continue;
            };
            let mut list = std::process::Command::new(executable);
            list.args([test.as_str(), "--exact", "--list"]);
            let listed = list
                .output()
                .with_context(|| format!("could not list the tests of {}", executable.display()))?;
            let found = String::from_utf8_lossy(&listed.stdout)
                .lines()
                .filter(|l| l.ends_with(": test"))
                .count();
            if !listed.status.success() || found != 1 {
                missing.push(format!("{} / {test}", suite.package));
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "registered conformance implementations not found as tests: {}",
            missing.join(", ")
        );
    }
    println!("conformance: {count} registered implementations, each run once by the test step");
    Ok(())
}

/// The test executables in cargo's JSON messages, by package and target. A package is named
/// by its directory (`crates/<package>/Cargo.toml`), as every suite's package is.
fn test_executables(
    messages: &str,
) -> std::collections::BTreeMap<(String, String), std::path::PathBuf> {
    let mut found = std::collections::BTreeMap::new();
    for line in messages.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_test = message["reason"] == "compiler-artifact"
            && message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "test"));
        let (Some(manifest), Some(executable)) = (
            message["manifest_path"].as_str(),
            message["executable"].as_str(),
        ) else {
            continue;
        };
        let package = std::path::Path::new(manifest)
            .parent()
            .and_then(|dir| dir.file_name())
            .map(|name| name.to_string_lossy().into_owned());
        let target = message["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let (true, Some(package)) = (is_test, package) {
            found.insert((package, target), std::path::PathBuf::from(executable));
        }
    }
    found
}

fn run_suites(suites: &[Suite]) -> anyhow::Result<()> {
    if suites.is_empty() {
        bail!("conformance: no crate declares [package.metadata.conformance]");
    }
    let (mut passed, mut failed, mut skipped) = (0u32, 0u32, 0u32);
    for suite in suites {
        for (test, env) in &suite.implementations {
            let label = format!("{} / {test} ", suite.package);
            print!("conformance  {}", dotted(&label));
            // Best effort: the line prefix shows while the test compiles and runs.
            let _ = std::io::stdout().flush();
            let outcome = run_one(suite, test, env.as_deref());
            match &outcome {
                Outcome::Ok => {
                    passed += 1;
                    println!(" ok");
                }
                Outcome::Skipped(var) => {
                    skipped += 1;
                    println!(" SKIPPED ({var} not set)");
                }
                Outcome::Failed(details) => {
                    failed += 1;
                    println!(" FAILED");
                    for line in details.lines() {
                        println!("    | {line}");
                    }
                }
            }
        }
    }
    println!("conformance: {passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        bail!("{failed} conformance implementation(s) failed");
    }
    Ok(())
}

fn dotted(label: &str) -> String {
    let dots = LABEL_WIDTH.saturating_sub(label.chars().count()).max(3);
    format!("{label}{}", ".".repeat(dots))
}

fn run_one(suite: &Suite, test: &str, env: Option<&str>) -> Outcome {
    if let Some(var) = env
        && !env_is_set(var)
    {
        return Outcome::Skipped(var.to_owned());
    }
    let mut cmd = cargo(["test", "--package", &suite.package]);
    if !suite.features.is_empty() {
        cmd.args(["--features", &suite.features.join(",")]);
    }
    cmd.args(["--test", &suite.target, "--", test, "--exact"]);
    let shown = display(&cmd);
    match cmd.output() {
        Ok(output) => judge(&shown, &output),
        Err(err) => Outcome::Failed(format!("could not start `{shown}`: {err}")),
    }
}

/// Decide the outcome of one `cargo test ... -- <name> --exact` run.
fn judge(shown: &str, output: &Output) -> Outcome {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let counts = parse_libtest(&stdout);
    let problem = if !output.status.success() {
        Some(format!("`{shown}` exited with {}", output.status))
    } else {
        verdict(counts)
    };
    match problem {
        None => Outcome::Ok,
        Some(problem) => Outcome::Failed(format!(
            "{problem}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            stdout.trim_end(),
            stderr.trim_end()
        )),
    }
}

/// `None` when exactly one test passed and none failed; otherwise why not.
fn verdict(counts: TestCounts) -> Option<String> {
    if counts.result_lines == 0 {
        return Some("no libtest `test result:` line in the output".to_owned());
    }
    if counts.failed > 0 {
        return Some(format!("{} test(s) failed", counts.failed));
    }
    match counts.passed {
        1 => None,
        0 => Some(format!(
            "0 tests ran (ignored: {}): the exact test name matched nothing that runs; \
             check the implementation name in the crate's [package.metadata.conformance] \
             against its #[test] fn",
            counts.ignored
        )),
        n => Some(format!("expected exactly 1 passed test, got {n}")),
    }
}

/// Sum the counts of every `test result: ...` line in libtest output.
fn parse_libtest(stdout: &str) -> TestCounts {
    let mut counts = TestCounts::default();
    for line in stdout.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        counts.result_lines += 1;
        // `ok. 1 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.01s`
        let rest = rest.split_once(". ").map_or(rest, |(_, tail)| tail);
        for part in rest.split(';') {
            let mut words = part.split_whitespace();
            let (Some(number), Some(what)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(number) = number.parse::<u32>() else {
                continue;
            };
            match what {
                "passed" => counts.passed += number,
                "failed" => counts.failed += number,
                "ignored" => counts.ignored += number,
                _ => {}
            }
        }
    }
    counts
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {

    #[test]
    fn test_executables_are_found_by_package_directory_and_target() {
        let messages = [
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/thread-store/Cargo.toml","target":{"name":"conformance","kind":["test"]},"executable":"/w/target/debug/deps/conformance-1"}"#,
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/thread-store/Cargo.toml","target":{"name":"thread_store","kind":["test"]},"executable":"/w/target/debug/deps/thread_store-2"}"#,
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/driver-spi/Cargo.toml","target":{"name":"conformance","kind":["lib"]},"executable":null}"#,
            r#"{"reason":"build-finished","success":true}"#,
            "not json",
        ]
        .join("\n");
        let found = test_executables(&messages);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[&("thread-store".to_owned(), "conformance".to_owned())],
            std::path::PathBuf::from("/w/target/debug/deps/conformance-1")
        );
    }

    use super::*;

    const ONE_PASSED: &str = "\nrunning 1 test\ntest sqlite ... ok\n\n\
        test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out; \
        finished in 0.03s\n\n";
    const NONE_RAN: &str = "\nrunning 0 tests\n\n\
        test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; \
        finished in 0.00s\n\n";
    const ONE_FAILED: &str = "\nrunning 1 test\ntest memory ... FAILED\n\n\
        test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 2 filtered out; \
        finished in 0.01s\n\n";
    const IGNORED: &str = "\nrunning 1 test\ntest memory ... ignored\n\n\
        test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 2 filtered out; \
        finished in 0.01s\n\n";

    #[test]
    fn parses_libtest_summary() {
        let counts = parse_libtest(ONE_PASSED);
        assert_eq!(
            counts,
            TestCounts {
                passed: 1,
                failed: 0,
                ignored: 0,
                result_lines: 1
            }
        );
        assert_eq!(parse_libtest(ONE_FAILED).failed, 1);
        assert_eq!(parse_libtest(IGNORED).ignored, 1);
        assert_eq!(parse_libtest("garbage\n").result_lines, 0);
    }

    #[test]
    fn exactly_one_passed_test_is_required() {
        assert_eq!(verdict(parse_libtest(ONE_PASSED)), None);
        let none = verdict(parse_libtest(NONE_RAN)).unwrap();
        assert!(none.contains("0 tests ran"), "{none}");
        assert!(verdict(parse_libtest(IGNORED)).is_some());
        assert!(verdict(parse_libtest(ONE_FAILED)).is_some());
        assert!(verdict(parse_libtest("")).is_some());
        let two = format!("{ONE_PASSED}{ONE_PASSED}");
        assert!(verdict(parse_libtest(&two)).is_some());
    }

    #[test]
    fn labels_are_dotted_to_a_column() {
        assert_eq!(dotted("a / b ").len(), LABEL_WIDTH);
        assert!(dotted(&"x".repeat(60)).ends_with("..."));
    }

    #[test]
    fn suites_come_from_package_metadata() {
        let metadata = serde_json::json!({"packages": [
            {"name": "plain", "metadata": null},
            {"name": "driver-x", "metadata": {"conformance": {
                "target": "driver_x",
                "implementations": [{"test": "conformance::x_fake_cli"}]}}},
            {"name": "store", "metadata": {"conformance": {
                "target": "conformance", "features": ["conformance"],
                "implementations": [{"test": "memory"}, {"test": "pg", "env": "PG_URL"}]}}},
        ]});
        let suites = suites_in(&metadata).unwrap();
        assert_eq!(suites.len(), 2);
        assert_eq!(suites[0].package, "driver-x");
        assert!(suites[0].features.is_empty());
        assert_eq!(suites[1].features, ["conformance"]);
        assert_eq!(
            suites[1].implementations[1],
            ("pg".to_owned(), Some("PG_URL".to_owned()))
        );
        let broken = serde_json::json!({"packages": [
            {"name": "y", "metadata": {"conformance": {"target": "t", "implementations": []}}},
        ]});
        assert!(suites_in(&broken).is_err());
    }

    /// The workspace's own declarations: every driver crate (but the SPI and the shared
    /// layers) declares its suite, so a new driver cannot be left out of the kit.
    #[test]
    fn every_driver_crate_declares_its_suite() {
        let suites = suites().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
        for entry in std::fs::read_dir(root).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let shared = [
                "driver-spi",
                "driver-cli",
                "driver-process",
                "driver-stream-json",
            ];
            if name.starts_with("driver-") && !shared.contains(&name.as_str()) {
                assert!(
                    suites.iter().any(|s| s.package == name),
                    "{name} declares no [package.metadata.conformance]"
                );
            }
        }
        for suite in &suites {
            for (test, env) in &suite.implementations {
                let is_path = test
                    .chars()
                    .all(|c| c == '_' || c == ':' || c.is_ascii_alphanumeric());
                assert!(is_path, "{}: {test}", suite.package);
                if let Some(env) = env {
                    assert!(!env.is_empty(), "{}", suite.package);
                }
            }
        }
    }
}
