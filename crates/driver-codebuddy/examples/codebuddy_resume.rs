//! Resume one real CodeBuddy session across a host restart while the tool server gets a new
//! port, a new token and a new env-var name; then see a semantic change refused before CodeBuddy
//! runs, and a canary scan for leaked secrets.
//!
//! Run with `cargo run -p driver-codebuddy --example codebuddy_resume`. It needs `codebuddy`
//! 2.117.0 or newer (`CODEBUDDY_BIN`, else `codebuddy` on `PATH`; the npm package
//! `@tencent-ai/agent-sdk@0.3.201` ships it at `cli/bin/codebuddy`) and no account: CodeBuddy
//! talks to a loopback mock of the OpenAI Chat Completions API from the test kit. The scenario checks every
//! outcome it narrates and panics if one differs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_codebuddy::{CodeBuddyDriver, CodeBuddyOptions, CommonOptions};
use driver_process::command::Limits;
use runtime_env::{HostEnv, RuntimeEnv};
use secrecy::SecretString;
use test_kit::chat::MockChat;
use test_kit::restart::{self, Secrets, Setup};

const MODEL_KEY: &str = "cb-example-not-a-real-key";

fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("CODEBUDDY_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("codebuddy"))
        .find(|candidate| candidate.is_file())
}

fn driver(
    dir: &Path,
    bin: &Path,
    model: &MockChat,
) -> Result<CodeBuddyDriver, Box<dyn std::error::Error>> {
    let env = RuntimeEnv::builder(
        dir.join("rt"),
        "user:example".parse()?,
        dir.join("workspace"),
    )
    .host_env(HostEnv::capture())
    .runtimes([&driver_codebuddy::RUNTIME.descriptor])
    .build()?;
    let options = CodeBuddyOptions::new()
        .with_binary(bin)
        .with_base_url(model.base_url())
        .with_api_key(SecretString::from(MODEL_KEY))
        .with_offline(true)
        .with_limits(
            Limits::default()
                .with_idle_timeout(std::time::Duration::from_secs(90))
                .with_total_timeout(std::time::Duration::from_secs(180)),
        );
    Ok(CodeBuddyDriver::new(Arc::new(env), options))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(bin) = binary() else {
        eprintln!(
            "codebuddy not found: set CODEBUDDY_BIN or put codebuddy on PATH (npm package @tencent-ai/agent-sdk@0.3.201, cli/bin/codebuddy)"
        );
        std::process::exit(2);
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("workspace"))?;
    let model = MockChat::start(restart::script())?;
    let probe = driver(dir.path(), &bin, &model)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let version = runtime.block_on(probe.check_version())?;
    println!("codebuddy {version}, a mock model at {}", model.base_url());
    runtime.block_on(restart::run_scenario(Setup {
        dir: dir.path(),
        driver: &|_| Arc::new(driver(dir.path(), &bin, &model).expect("the namespace builds")),
        model_requests: &|| model.model_requests(),
        argv_marker: "--output-format stream-json",
        secrets: Secrets::new([MODEL_KEY.to_owned()]),
        log,
        call_ids: restart::CallIds::NotPassed,
    }));
    println!("Done: one CodeBuddy session, two hosts, a refusal where meaning changed, no leak.");
    Ok(())
}
