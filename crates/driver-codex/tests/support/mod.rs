//! A `codex` stand-in: the workspace's scripted fake CLI, answering with Codex's own
//! `exec --json` event shapes (copied from transcripts of the pinned `codex` 0.169.0).

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_codex::{CodexDriver, CodexOptions};
use fake_cli::{Invocation, Rule, SCENARIO_ENV, Scenario, read_invocations};
use runtime_env::{HostEnv, RuntimeEnv};
use tempfile::TempDir;

/// `codex --version` of the pinned release.
pub(crate) const VERSION: &str = "codex-cli 0.169.0";

/// A host credential that must never reach the child.
pub(crate) const HOST_CREDENTIAL: &str = "host-credential-canary-73d1";

/// The events of a clean text turn on thread `thread_id` (a template).
pub(crate) fn text_turn(rule: Rule, thread_id: &str, text: &str) -> Rule {
    rule.stdout(format!(
        r#"{{"type":"thread.started","thread_id":"{thread_id}"}}"#
    ))
    .stdout(r#"{"type":"turn.started"}"#)
    .stdout(format!(
        r#"{{"type":"item.completed","item":{{"id":"item_0","type":"agent_message","text":"{text}"}}}}"#
    ))
    .stdout(
        r#"{"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":3,"cache_write_input_tokens":0,"output_tokens":7,"reasoning_output_tokens":0}}"#,
    )
}

/// The default script: start, resume and fork answer like Codex.
pub(crate) fn codex_like() -> Scenario {
    Scenario::new()
        .rule(text_turn(
            Rule::when(["resume"]),
            "${ARG_AFTER:resume}",
            "resumed: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::when(["fork"]),
            "${NEW_UUID}",
            "forked: ${STDIN}",
        ))
        .rule(text_turn(Rule::any(), "${NEW_UUID}", "started: ${STDIN}"))
}

/// A namespace, a fake `codex` and the record of its invocations.
pub(crate) struct FakeCodex {
    pub(crate) dir: TempDir,
    pub(crate) record: PathBuf,
    pub(crate) env: Arc<RuntimeEnv>,
    pub(crate) workspace: PathBuf,
}

impl FakeCodex {
    /// A fake that follows `scenario` (its version and record are set here), recording the
    /// values of `record_env`.
    pub(crate) fn new(scenario: Scenario, record_env: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let record = dir.path().join("invocations.jsonl");
        let scenario_path = dir.path().join("scenario.json");
        let mut scenario = scenario.version(VERSION).record(&record);
        scenario = scenario.record_env_values(record_env.iter().copied());
        scenario.write_to(&scenario_path).expect("scenario written");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir(&workspace).expect("workspace");
        let host = HostEnv::from_vars([
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("OPENAI_API_KEY", HOST_CREDENTIAL.to_owned()),
            ("CODEX_API_KEY", HOST_CREDENTIAL.to_owned()),
        ]);
        let env = RuntimeEnv::builder(
            dir.path().join("rt"),
            "user:fake".parse().expect("namespace"),
            &workspace,
        )
        .host_env(host)
        .var(SCENARIO_ENV, scenario_path.as_os_str())
        .build()
        .expect("runtime env");
        Self {
            dir,
            record,
            env: Arc::new(env),
            workspace,
        }
    }

    /// Options pointing at the fake binary.
    pub(crate) fn options(&self) -> CodexOptions {
        CodexOptions::new().with_binary(fake_cli::binary_path())
    }

    /// A driver with `options` (whose binary is replaced by the fake's).
    pub(crate) fn driver(&self, options: CodexOptions) -> CodexDriver {
        CodexDriver::new(
            self.env.clone(),
            options.with_binary(fake_cli::binary_path()),
        )
    }

    /// Every invocation but the version probes, oldest first.
    pub(crate) fn invocations(&self) -> Vec<Invocation> {
        read_invocations(&self.record)
            .expect("record readable")
            .into_iter()
            .filter(|i| i.argv != ["--version"])
            .collect()
    }

    /// The last invocation.
    pub(crate) fn last(&self) -> Invocation {
        self.invocations().pop().expect("codex was invoked")
    }

    /// The namespace's `CODEX_HOME`.
    pub(crate) fn codex_home(&self) -> PathBuf {
        self.env.state_dir(runtime_env::RuntimeKind::Codex)
    }

    /// The temp dir.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The `-c` overrides of an argv, parsed as TOML values.
pub(crate) fn overrides(argv: &[String]) -> std::collections::BTreeMap<String, toml::Value> {
    argv.windows(2)
        .filter(|w| w[0] == "-c")
        .map(|w| {
            let (k, v) = w[1].split_once('=').expect("key=value");
            let doc: toml::Table = toml::from_str(&format!("v = {v}")).expect("a TOML value");
            (k.to_owned(), doc["v"].clone())
        })
        .collect()
}
