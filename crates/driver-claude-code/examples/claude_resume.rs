//! Resume one real Claude Code session across a host restart while the tool server gets a new
//! port, a new token and a new env-var name; then see a semantic change refused before Claude
//! Code runs, and a canary scan for leaked secrets.
//!
//! Run with `cargo run -p driver-claude-code --example claude_resume`. It needs `claude`
//! 2.1.197 or newer (`CLAUDE_BIN`, else `claude` on `PATH`;
//! `npm install -g @anthropic-ai/claude-code@2.1.197`) and no account: Claude Code talks to a
//! loopback mock of the Anthropic Messages API from the test kit. The scenario checks every
//! outcome it narrates and panics if one differs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
use runtime_env::{HostEnv, RuntimeEnv};
use secrecy::SecretString;
use test_kit::anthropic::MockAnthropic;
use test_kit::restart::{self, Secrets, Setup};

const MODEL_KEY: &str = "sk-ant-example-not-a-real-key";

fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("CLAUDE_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("claude"))
        .find(|candidate| candidate.is_file())
}

fn driver(
    dir: &Path,
    bin: &Path,
    model: &MockAnthropic,
) -> Result<ClaudeCodeDriver, Box<dyn std::error::Error>> {
    let env = RuntimeEnv::builder(
        dir.join("rt"),
        "user:example".parse()?,
        dir.join("workspace"),
    )
    .host_env(HostEnv::capture())
    .secret("ANTHROPIC_API_KEY", SecretString::from(MODEL_KEY))
    .runtimes([&driver_claude_code::RUNTIME.descriptor])
    .build()?;
    let options = ClaudeCodeOptions::new()
        .with_binary(bin)
        .with_model("claude-mock")
        .with_base_url(model.base_url())
        .with_max_retries(0);
    Ok(ClaudeCodeDriver::new(Arc::new(env), options))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(bin) = binary() else {
        eprintln!(
            "claude not found: set CLAUDE_BIN or put claude on PATH (npm install -g @anthropic-ai/claude-code@2.1.197)"
        );
        std::process::exit(2);
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("workspace"))?;
    let model = MockAnthropic::start(restart::script())?;
    let probe = driver(dir.path(), &bin, &model)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let version = runtime.block_on(probe.check_version())?;
    println!("claude {version}, a mock model at {}", model.base_url());
    runtime.block_on(restart::run_scenario(Setup {
        dir: dir.path(),
        driver: &|_| Arc::new(driver(dir.path(), &bin, &model).expect("the namespace builds")),
        model_requests: &|| model.model_requests(),
        argv_marker: "--output-format stream-json",
        secrets: Secrets::new([MODEL_KEY.to_owned()]),
        log,
        call_ids: restart::CallIds::Shared,
    }));
    println!("Done: one Claude Code session, two hosts, a refusal where meaning changed, no leak.");
    Ok(())
}
