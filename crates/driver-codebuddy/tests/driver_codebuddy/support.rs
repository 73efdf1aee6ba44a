//! A `codebuddy` stand-in: the workspace's scripted fake CLI, answering with CodeBuddy's own
//! stream-json event shapes (as transcribed from the pinned 2.117.0).

use std::ops::Deref;
use std::path::PathBuf;

use driver_codebuddy::{CodeBuddyDriver, CodeBuddyOptions, CommonOptions};
use fake_cli::{Harness, Rule, Scenario};

/// `--version` of the pinned release.
pub(crate) const VERSION: &str = "2.117.0";

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

/// A namespace, a fake CLI and the record of its invocations ([`Harness`]).
pub(crate) struct FakeCodeBuddy(Harness);

impl Deref for FakeCodeBuddy {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl FakeCodeBuddy {
    /// A fake that follows `scenario`, recording the values of `record_env`; the host
    /// environment carries this CLI's credential variables.
    pub(crate) fn new(scenario: Scenario, record_env: &[&str]) -> Self {
        Self(Harness::new(
            &driver_codebuddy::RUNTIME.descriptor,
            scenario,
            VERSION,
            record_env,
            &["CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"],
        ))
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

    /// The namespace's `CODEBUDDY_CONFIG_DIR`.
    pub(crate) fn config_dir(&self) -> PathBuf {
        self.env
            .state_dir(&driver_codebuddy::RUNTIME.descriptor)
            .unwrap()
            .to_owned()
    }

    /// The harness, for the shared conformance factory.
    pub(crate) fn into_harness(self) -> Harness {
        self.0
    }
}
