//! The `--version` probe.

use std::path::Path;
use std::time::Duration;

use driver_spi::ExitStatus;
use fake_cli::{Rule, SCENARIO_ENV, Scenario, read_invocations};

use crate::error::ProcessError;
use crate::probe::probe_version;
use crate::tests::support::{Fixture, fixture, fixture_with};
use crate::version::Version;

const TIMEOUT: Duration = Duration::from_secs(60);

/// An environment whose every child runs `scenario` (the probe takes no extra variables).
fn env_running(scenario: &Scenario) -> Fixture {
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("scenario.json");
    scenario.write_to(&path).unwrap();
    let mut fx = fixture_with(|b| b.var(SCENARIO_ENV, &path));
    fx.scratch = scratch;
    fx
}

/// The probe of the fake CLI running `scenario`, against `minimum`, within `timeout`.
async fn probe_within(
    scenario: &Scenario,
    minimum: Version,
    timeout: Duration,
) -> Result<Version, ProcessError> {
    let fx = env_running(scenario);
    probe_version(&fx.env, &fake_cli::binary_path(), minimum, timeout).await
}

/// [`probe_within`] the usual time.
async fn probe(scenario: &Scenario, minimum: Version) -> Result<Version, ProcessError> {
    probe_within(scenario, minimum, TIMEOUT).await
}

#[tokio::test]
async fn a_recent_enough_version_is_returned() {
    let scratch = tempfile::tempdir().unwrap();
    let record = scratch.path().join("record.jsonl");
    let scenario = Scenario::new().version("codex-cli 0.169.0").record(&record);
    let found = probe(&scenario, Version::new(0, 100, 0)).await.unwrap();
    assert_eq!(found, Version::new(0, 169, 0));
    // Through the same isolated spawn path: no host credential, argv exactly --version.
    let runs = read_invocations(&record).unwrap();
    assert_eq!(runs[0].argv, ["--version"]);
    assert!(!runs[0].has_env("OPENAI_API_KEY"));
}

#[tokio::test]
async fn an_old_version_is_too_old() {
    let err = probe(
        &Scenario::new().version("codex-cli 0.169.0"),
        Version::new(0, 170, 0),
    )
    .await
    .unwrap_err();
    match err {
        ProcessError::VersionTooOld { found, minimum } => {
            assert_eq!(found, Version::new(0, 169, 0));
            assert_eq!(minimum, Version::new(0, 170, 0));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_version_without_numbers_is_unparseable() {
    let err = probe(
        &Scenario::new().version("codex-cli (development build)"),
        Version::new(0, 1, 0),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::VersionUnparseable), "{err:?}");
}

#[tokio::test]
async fn a_version_on_stderr_is_accepted() {
    let found = probe(
        &Scenario::new().rule(Rule::when(["--version"]).stderr("tool v1.4.2")),
        Version::new(1, 0, 0),
    )
    .await
    .unwrap();
    assert_eq!(found, Version::new(1, 4, 2));
}

#[tokio::test]
async fn a_failing_version_command_is_a_probe_failure() {
    let err = probe(
        &Scenario::new().rule(
            Rule::when(["--version"])
                .stdout("1.2.3")
                .stderr("no")
                .exit(2),
        ),
        Version::new(1, 0, 0),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            ProcessError::VersionProbeFailed {
                status: ExitStatus::Code(2)
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_missing_binary_is_not_found() {
    let fx = fixture();
    let err = probe_version(
        &fx.env,
        Path::new("/nonexistent/codex"),
        Version::new(0, 1, 0),
        TIMEOUT,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn a_hanging_version_command_times_out() {
    let err = probe_within(
        &Scenario::new().rule(Rule::any().hang()),
        Version::new(0, 1, 0),
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::TotalTimeout { .. }), "{err:?}");
}

#[test]
fn versions_are_found_in_text() {
    let cases = [
        ("codex-cli 0.169.0", Some((0, 169, 0))),
        ("claude 2.0.14 (Claude Code)", Some((2, 0, 14))),
        ("v10.20.30-rc.1", Some((10, 20, 30))),
        ("v2.1.3-beta.4 (build 1.2)", Some((2, 1, 3))),
        ("1.2.3.4", Some((1, 2, 3))),
        ("build 7 of 1.2 then 3.4.5", Some((3, 4, 5))),
        ("99999999999999999999.1.1 then 1.1.1", Some((1, 1, 1))),
        ("version 1.2", None),
        ("", None),
    ];
    for (text, want) in cases {
        let want = want.map(|(a, b, c)| Version::new(a, b, c));
        assert_eq!(Version::find_in(text), want, "{text}");
    }
    assert!(Version::new(0, 170, 0) > Version::new(0, 169, 9));
    assert!(Version::new(1, 0, 0) > Version::new(0, 999, 999));
}
