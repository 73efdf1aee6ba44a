//! `cargo xtask conformance`: run every registered conformance suite implementation.
//!
//! A conformance suite lives in its crate as a public `conformance` module behind the cargo
//! feature `conformance`, and is run by the integration-test target `conformance`
//! (`crates/<crate>/tests/conformance.rs`, `required-features = ["conformance"]`) holding ONE
//! `#[test]` per implementation, named after it (`fn memory()`, `fn sqlite()`, ...).
//!
//! For each implementation in [`SUITES`] this runs
//! `cargo test -p <package> --features conformance --test conformance -- <test> --exact`
//! and requires exactly one passed test and no failure: a run in which no test ran (a typo in
//! the table, a renamed or `#[ignore]`d test) is a FAILURE, never a pass. An implementation
//! whose required environment variable is unset is reported as SKIPPED, visibly.

use std::io::Write as _;
use std::process::Output;

use anyhow::{Context, bail};

use crate::util::{cargo, display, env_is_set};

/// One conformance suite: a crate's `conformance` test target and its implementations.
#[derive(Debug)]
pub(crate) struct Suite {
    /// Name printed in reports, usually the crate name.
    pub(crate) name: &'static str,
    /// Cargo package that holds the suite and its `tests/conformance.rs`.
    pub(crate) package: &'static str,
    /// Cargo feature that enables the suite; always `"conformance"` by convention.
    pub(crate) feature: &'static str,
    /// Integration-test target; always `"conformance"` by convention.
    pub(crate) test_target: &'static str,
    /// `(exact #[test] function name, environment variable it needs or None)`.
    pub(crate) implementations: &'static [(&'static str, Option<&'static str>)],
}

/// The registered suites. Add one entry per crate that ships a conformance suite, and one
/// implementation line per `#[test]` in that crate's `tests/conformance.rs`.
///
/// Entry format (copy, uncomment and adapt; keep `feature` and `test_target` as they are):
///
/// ```text
/// Suite {
///     name: "thread-store",
///     package: "thread-store",
///     feature: "conformance",
///     test_target: "conformance",
///     implementations: &[
///         ("memory", None),
///         ("sqlite", None),
///         ("postgres", Some("THREAD_STORE_POSTGRES_URL")),
///     ],
/// },
/// ```
pub(crate) const SUITES: &[Suite] = &[
    Suite {
        name: "run-service",
        package: "run-service",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("example_provider", None)],
    },
    Suite {
        name: "run-service (hosted-tools)",
        package: "hosted-tools",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("hosted_tools_provider", None)],
    },
    Suite {
        name: "thread-store",
        package: "thread-store",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[
            ("memory", None),
            ("sqlite", None),
            ("postgres", Some("THREAD_STORE_POSTGRES_URL")),
        ],
    },
    Suite {
        name: "driver-spi",
        package: "driver-spi",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("reference_driver", None)],
    },
    Suite {
        name: "driver-codex",
        package: "driver-codex",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("codex_fake_cli", None)],
    },
    Suite {
        name: "driver-claude-code",
        package: "driver-claude-code",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("claude_code_fake_cli", None)],
    },
    Suite {
        name: "driver-codebuddy",
        package: "driver-codebuddy",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("codebuddy_fake_cli", None)],
    },
    Suite {
        name: "driver-cursor",
        package: "driver-cursor",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("cursor_fake_cli", None)],
    },
    Suite {
        name: "driver-gemini",
        package: "driver-gemini",
        feature: "conformance",
        test_target: "conformance",
        implementations: &[("gemini_fake_cli", None)],
    },
];

/// Width of the `suite / implementation ....` column.
const LABEL_WIDTH: usize = 40;

/// The outcome of one implementation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed(String),
    Skipped(&'static str),
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
    run_suites(SUITES)
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
    let executables = conformance_executables(&String::from_utf8_lossy(&output.stdout));
    let mut missing = Vec::new();
    let mut count = 0u32;
    for suite in SUITES {
        for &(test, _) in suite.implementations {
            count += 1;
            let Some(executable) = executables.get(suite.package) else {
                missing.push(format!(
                    "{} / {test} (no conformance target built)",
                    suite.name
                ));
                continue;
            };
            let mut list = std::process::Command::new(executable);
            list.args([test, "--exact", "--list"]);
            let listed = list
                .output()
                .with_context(|| format!("could not list the tests of {}", executable.display()))?;
            let found = String::from_utf8_lossy(&listed.stdout)
                .lines()
                .filter(|l| l.ends_with(": test"))
                .count();
            if !listed.status.success() || found != 1 {
                missing.push(format!("{} / {test}", suite.name));
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

/// The `conformance` test executables in cargo's JSON messages, by package. A package is
/// named by its directory (`crates/<package>/Cargo.toml`), as every suite's package is.
fn conformance_executables(
    messages: &str,
) -> std::collections::BTreeMap<String, std::path::PathBuf> {
    let mut found = std::collections::BTreeMap::new();
    for line in messages.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_conformance_test = message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "conformance"
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
        if let (true, Some(package)) = (is_conformance_test, package) {
            found.insert(package, std::path::PathBuf::from(executable));
        }
    }
    found
}

fn run_suites(suites: &[Suite]) -> anyhow::Result<()> {
    if suites.iter().all(|s| s.implementations.is_empty()) {
        println!(
            "conformance: no suites are registered (add entries to SUITES in xtask/src/conformance.rs)"
        );
        return Ok(());
    }
    let (mut passed, mut failed, mut skipped) = (0u32, 0u32, 0u32);
    for suite in suites {
        for &(test, env) in suite.implementations {
            let label = format!("{} / {test} ", suite.name);
            print!("conformance  {}", dotted(&label));
            // Best effort: the line prefix shows while the test compiles and runs.
            let _ = std::io::stdout().flush();
            let outcome = run_one(suite, test, env);
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

fn run_one(suite: &Suite, test: &str, env: Option<&'static str>) -> Outcome {
    if let Some(var) = env
        && !env_is_set(var)
    {
        return Outcome::Skipped(var);
    }
    let mut cmd = cargo([
        "test",
        "--package",
        suite.package,
        "--features",
        suite.feature,
        "--test",
        suite.test_target,
        "--",
        test,
        "--exact",
    ]);
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
             check the implementation name in xtask/src/conformance.rs against \
             the #[test] fn in tests/conformance.rs",
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
    fn conformance_executables_are_found_by_package_directory() {
        let messages = [
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/thread-store/Cargo.toml","target":{"name":"conformance","kind":["test"]},"executable":"/w/target/debug/deps/conformance-1"}"#,
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/thread-store/Cargo.toml","target":{"name":"thread_store","kind":["test"]},"executable":"/w/target/debug/deps/thread_store-2"}"#,
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/driver-spi/Cargo.toml","target":{"name":"conformance","kind":["lib"]},"executable":null}"#,
            r#"{"reason":"build-finished","success":true}"#,
            "not json",
        ]
        .join("\n");
        let found = conformance_executables(&messages);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found["thread-store"],
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
    fn registered_table_is_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for suite in SUITES {
            assert!(!suite.name.is_empty() && !suite.package.is_empty());
            assert_eq!(suite.feature, "conformance", "{}", suite.name);
            assert_eq!(suite.test_target, "conformance", "{}", suite.name);
            assert!(!suite.implementations.is_empty(), "{}", suite.name);
            for &(test, env) in suite.implementations {
                let is_ident = test.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                    && !test.starts_with(|c: char| c.is_ascii_digit());
                assert!(is_ident, "`{test}` must be a plain #[test] fn name");
                assert!(seen.insert((suite.package, test)), "duplicate {test}");
                if let Some(var) = env {
                    assert!(
                        var.chars()
                            .all(|c| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit()),
                        "`{var}` should be an UPPER_SNAKE environment variable"
                    );
                }
            }
        }
    }

    #[test]
    fn missing_env_var_skips_without_running() {
        const SUITE: Suite = Suite {
            name: "demo",
            package: "no-such-package",
            feature: "conformance",
            test_target: "conformance",
            implementations: &[],
        };
        let outcome = run_one(&SUITE, "x", Some("XTASK_TEST_VARIABLE_THAT_IS_NEVER_SET"));
        assert_eq!(
            outcome,
            Outcome::Skipped("XTASK_TEST_VARIABLE_THAT_IS_NEVER_SET")
        );
    }
}
