//! Issue 40, "errors that say what to do", as a host meets them through `agent`: a wrong
//! binary path fails the first turn naming the path and what is wrong with it, and an
//! environment that forgot the runtime fails the build naming the setting to fix. `Display`
//! alone carries it: a host that prints the error sees what to do.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use agent::{Agent, ThreadError};
use driver_codex::{CodexOptions, CommonOptions as _};
use driver_spi::FailureKind;
use runtime_env::{HostEnv, RuntimeEnv};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

use crate::support::{codex_like, fake_codex};

async fn agent(dir: &std::path::Path, driver: Arc<dyn driver_spi::Driver>) -> Agent {
    let store = SqliteStore::open(SqliteConfig::new(dir.join("threads.sqlite")))
        .await
        .unwrap();
    Agent::builder(driver)
        .store(Arc::new(store))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_wrong_binary_path_fails_the_first_turn_naming_the_path() {
    let fake = fake_codex(codex_like(), &[]);
    let unexecutable = fake.path().join("codex-without-x");
    std::fs::write(&unexecutable, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&unexecutable, std::fs::Permissions::from_mode(0o644)).unwrap();
    for (binary, problem) in [
        (fake.path().join("no-such-codex"), "not found"),
        (unexecutable, "is not executable"),
    ] {
        let driver = driver_codex::CodexDriver::new(
            fake.env.clone(),
            CodexOptions::new().with_binary(&binary),
        );
        let agent = agent(fake.path(), Arc::new(driver)).await;
        let error = agent.thread("t").run("hi").await.unwrap_err();
        assert!(
            matches!(
                error,
                ThreadError::Driver {
                    kind: FailureKind::Process,
                    retryable: Some(false),
                    ..
                }
            ),
            "{error:?}"
        );
        let shown = error.to_string();
        let expected = format!("`{}` {problem}", binary.display());
        assert!(shown.contains(&expected), "{shown}");
        assert!(shown.contains("set the driver's binary"), "{shown}");
        assert!(!shown.contains("provider"), "{shown}");
        agent.close().await;
    }
}

#[tokio::test]
async fn an_environment_without_the_runtime_fails_the_build_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    // The runtimes are forgotten: the environment serves none.
    let env = RuntimeEnv::builder(
        dir.path().join("rt"),
        "user:forgetful".parse().unwrap(),
        &workspace,
    )
    .host_env(HostEnv::from_vars([("PATH", "/usr/bin:/bin")]))
    .build()
    .unwrap();
    let driver = driver_codex::CodexDriver::new(Arc::new(env), CodexOptions::new());
    let error = Agent::builder(Arc::new(driver)).build().unwrap_err();
    let shown = error.to_string();
    assert!(shown.contains("RuntimeEnvBuilder::runtimes"), "{shown}");
}
