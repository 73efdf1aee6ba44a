//! A `codebuddy` stand-in: the workspace's scripted fake CLI, answering with CodeBuddy's own
//! stream-json event shapes (as transcribed from the pinned 2.117.0).

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use driver_codebuddy::{CodeBuddyDriver, CodeBuddyOptions};
use fake_cli::{Invocation, Rule, SCENARIO_ENV, Scenario, read_invocations};
use runtime_env::{HostEnv, RuntimeEnv};
use tempfile::TempDir;

/// `codebuddy --version` of the pinned release.
pub(crate) const VERSION: &str = "2.117.0";

/// A host credential that must never reach the child.
pub(crate) const HOST_CREDENTIAL: &str = "host-credential-canary-73d1";

/// The events of a clean text turn on session `session_id` (a template).
pub(crate) fn text_turn(rule: Rule, session_id: &str, text: &str) -> Rule {
    rule.stdout(format!(
        r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session_id}","tools":["mcp__agent-ui__ping","Bash"],"mcp_servers":[{{"name":"agent-ui","status":"connected"}}],"model":"default-model","permissionMode":"default","__timestamp":"2026-11-30T20:09:26.919Z"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"system","subtype":"status","status":null,"session_id":"{session_id}"}}"#
    ))
    .stdout(
        r#"{"type":"file-history-snapshot","id":"f2c1","isSnapshotUpdate":false,"snapshot":{"trackedFileBackups":{}}}"#,
    )
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"parent_tool_use_id":null,"session_id":"{session_id}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"{text}","session_id":"{session_id}","usage":{{"input_tokens":11,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":7}}}}"#
    ))
}

/// The default script: start, resume and fork answer like CodeBuddy.
pub(crate) fn codebuddy_like() -> Scenario {
    Scenario::new()
        .capture_arg_flag("--mcp-config")
        .rule(text_turn(
            Rule::when(["--fork-session"]),
            "${NEW_UUID}",
            "forked: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::when(["--resume"]),
            "${ARG_AFTER:--resume}",
            "resumed: ${STDIN}",
        ))
        .rule(text_turn(
            Rule::any(),
            "${ARG_AFTER:--session-id}",
            "started: ${STDIN}",
        ))
}

/// A namespace, a fake `codebuddy` and the record of its invocations.
pub(crate) struct FakeCodeBuddy {
    pub(crate) dir: TempDir,
    pub(crate) record: PathBuf,
    pub(crate) env: Arc<RuntimeEnv>,
    pub(crate) workspace: PathBuf,
}

impl FakeCodeBuddy {
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
            ("CODEBUDDY_API_KEY", HOST_CREDENTIAL.to_owned()),
            ("CODEBUDDY_AUTH_TOKEN", HOST_CREDENTIAL.to_owned()),
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
    pub(crate) fn options(&self) -> CodeBuddyOptions {
        CodeBuddyOptions::new().with_binary(fake_cli::binary_path())
    }

    /// A driver with `options` (whose binary is replaced by the fake's).
    pub(crate) fn driver(&self, options: CodeBuddyOptions) -> CodeBuddyDriver {
        CodeBuddyDriver::new(
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
        self.invocations().pop().expect("codebuddy was invoked")
    }

    /// The namespace's `CODEBUDDY_CONFIG_DIR`.
    pub(crate) fn config_dir(&self) -> PathBuf {
        self.env.state_dir(runtime_env::RuntimeKind::CodeBuddy)
    }

    /// The temp dir.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}
