//! Shared fixtures: an isolated runtime environment, scenario files, and `/proc` inspection.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fake_cli::{SCENARIO_ENV, Scenario};
use runtime_env::{
    HostEnv, IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeEnv,
};
use secrecy::SecretString;
use tempfile::TempDir;

use driver_spi::Redactor;

use crate::command::CliCommand;
use crate::command::Limits;

/// The value of the host's OPENAI_API_KEY, which must never reach a child.
pub(crate) const HOST_KEY: &str = "host-key";
/// A secret injected into the runtime environment itself.
pub(crate) const ENV_SECRET: &str = "env-injected-secret-789";

/// A runtime with Codex's state variable: the fixture serves it.
pub(crate) static CODEX: RuntimeDescriptor = RuntimeDescriptor {
    name: "codex",
    program: "codex",
    state_var: "CODEX_HOME",
    state_subdir: ".codex",
    state_dir_must_exist: true,
    private_subdirs: &[],
    sources: &[],
    credential_files: &[],
    api_key_vars: &["OPENAI_API_KEY"],
    endpoint_vars: &[],
    keyring: KeyringUse::Never,
    mcp: McpMechanism::CodexConfigToml,
    supported_modes: &[IsolationMode::Subprocess],
};

/// A second runtime the fixture serves, with Claude Code's state variable.
pub(crate) static CLAUDE: RuntimeDescriptor = RuntimeDescriptor {
    name: "claude_code",
    state_var: "CLAUDE_CONFIG_DIR",
    state_subdir: ".claude",
    ..CODEX
};

pub(crate) struct Fixture {
    pub(crate) env: RuntimeEnv,
    pub(crate) project: TempDir,
    /// Scenario, record and pid files.
    pub(crate) scratch: TempDir,
    _base: TempDir,
}

pub(crate) fn host_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| String::from("/usr/bin:/bin"))
}

/// A namespaced environment whose host has a credential that must not leak.
pub(crate) fn fixture() -> Fixture {
    fixture_with(|b| b)
}

pub(crate) fn fixture_with(
    configure: impl FnOnce(runtime_env::RuntimeEnvBuilder) -> runtime_env::RuntimeEnvBuilder,
) -> Fixture {
    let base = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let host = HostEnv::from_vars([("PATH", host_path().as_str()), ("OPENAI_API_KEY", HOST_KEY)]);
    let builder = RuntimeEnv::builder(
        base.path().join("rt"),
        "user:alice".parse().unwrap(),
        project.path(),
    )
    .host_env(host)
    .runtimes([&CODEX, &CLAUDE])
    .secret("ANTHROPIC_API_KEY", SecretString::from(ENV_SECRET));
    let env = configure(builder).build().unwrap();
    Fixture {
        env,
        project,
        scratch,
        _base: base,
    }
}

impl Fixture {
    /// A path in the scratch directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// A scenario that records each invocation of the fake, and where it records them (for
    /// [`fake_cli::read_invocations`]).
    pub(crate) fn recording(&self) -> (PathBuf, fake_cli::Scenario) {
        let record = self.path("record.jsonl");
        let scenario = fake_cli::Scenario::new().record(&record);
        (record, scenario)
    }

    /// Writes the scenario and returns a command that runs the fake with it, redacted as a
    /// command outside a turn is (the environment's secrets).
    pub(crate) fn fake(&self, scenario: &Scenario) -> CliCommand {
        self.fake_redacted(scenario, self.env.redactor())
    }

    /// [`fake`](Self::fake), redacted with `redactor` (as a turn's command is, with the
    /// turn's).
    pub(crate) fn fake_redacted(&self, scenario: &Scenario, redactor: Redactor) -> CliCommand {
        CliCommand::new(fake_cli::binary_path(), redactor)
            .var(SCENARIO_ENV, self.write_scenario(scenario))
    }

    /// A command for `program` in this environment, redacted with the environment's secrets.
    pub(crate) fn command(&self, program: impl Into<PathBuf>) -> CliCommand {
        CliCommand::new(program, self.env.redactor())
    }

    pub(crate) fn write_scenario(&self, scenario: &Scenario) -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = self.path(&format!(
            "scenario-{}.json",
            N.fetch_add(1, Ordering::Relaxed)
        ));
        scenario.write_to(&path).unwrap();
        path
    }
}

/// Limits for tests that do not exercise timeouts: generous timeouts, a short grace.
pub(crate) fn limits() -> Limits {
    Limits::default()
        .with_idle_timeout(Duration::from_secs(60))
        .with_total_timeout(Duration::from_secs(120))
        .with_kill_grace(Duration::from_millis(500))
}

/// `(state, ppid, pgrp)` of a process, from `/proc/<pid>/stat`.
pub(crate) fn proc_stat(pid: u32) -> Option<(char, u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Pids of the group's members that are not zombies.
pub(crate) fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((state, _, pgrp)) = proc_stat(pid)
            && pgrp == pgid
            && state != 'Z'
            && state != 'X'
        {
            pids.push(pid);
        }
    }
    pids
}

/// Whether the whole group is finished: no live member, the direct child reaped (not a
/// zombie), and each listed grandchild dead (absent, or a zombie that belongs to init: it is
/// not ours to reap, and some container inits never do).
pub(crate) fn group_is_gone(child: u32, grandchildren: &[u32]) -> bool {
    let me = std::process::id();
    let child_gone = match proc_stat(child) {
        None => true,
        // The pid was reused by an unrelated process.
        Some((_, _, pgrp)) => pgrp != child,
    };
    let grandchildren_gone = grandchildren.iter().all(|&pid| match proc_stat(pid) {
        None => true,
        Some((state, ppid, pgrp)) => pgrp != child || (state == 'Z' && ppid != me),
    });
    child_gone && grandchildren_gone && live_group_members(child).is_empty()
}

/// Polls `condition` until it holds or a generous deadline passes (a safety net against
/// hangs, not a speed assertion).
pub(crate) fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

/// Reads a pid file written by the fake's `spawn_grandchild` step.
pub(crate) fn read_pid(path: &Path) -> u32 {
    assert!(eventually(|| path.exists()), "pid file never appeared");
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
