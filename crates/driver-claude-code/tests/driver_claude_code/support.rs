//! A `claude` stand-in: the workspace's scripted fake CLI, answering with Claude Code's own
//! stream-json event shapes.

use std::ops::Deref;
use std::path::PathBuf;

use driver_claude_code::{ClaudeCodeDriver, ClaudeCodeOptions, CommonOptions};
use fake_cli::{Harness, Rule, Scenario};

/// `--version` of the pinned release.
pub(crate) const VERSION: &str = "2.1.197 (Claude Code)";

/// The events of a clean text turn on session `session_id` (a template).
pub(crate) fn text_turn(rule: Rule, session_id: &str, text: &str) -> Rule {
    rule.stdout(format!(
        r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session_id}","tools":["Bash"],"mcp_servers":[{{"name":"agent-ui","status":"connected"}}],"model":"claude-test","permissionMode":"default"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"parent_tool_use_id":null,"session_id":"{session_id}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"{text}","session_id":"{session_id}","usage":{{"input_tokens":11,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":7}}}}"#
    ))
}

/// The default script: start, resume and fork answer like Claude Code.
pub(crate) fn claude_like() -> Scenario {
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
pub(crate) struct FakeClaude(Harness);

impl Deref for FakeClaude {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl FakeClaude {
    /// A fake that follows `scenario`, recording the values of `record_env`; the host
    /// environment carries this CLI's credential variables.
    pub(crate) fn new(scenario: Scenario, record_env: &[&str]) -> Self {
        Self(Harness::new(
            &driver_claude_code::RUNTIME.descriptor,
            scenario,
            VERSION,
            record_env,
            &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        ))
    }

    /// Options pointing at the fake binary.
    pub(crate) fn options(&self) -> ClaudeCodeOptions {
        ClaudeCodeOptions::new().with_binary(fake_cli::binary_path())
    }

    /// A driver with `options` (whose binary is replaced by the fake's).
    pub(crate) fn driver(&self, options: ClaudeCodeOptions) -> ClaudeCodeDriver {
        ClaudeCodeDriver::new(
            self.env.clone(),
            options.with_binary(fake_cli::binary_path()),
        )
    }

    /// The harness, for the shared conformance factory.
    pub(crate) fn into_harness(self) -> Harness {
        self.0
    }

    /// The namespace's `CLAUDE_CONFIG_DIR`.
    pub(crate) fn config_dir(&self) -> PathBuf {
        self.env
            .state_dir(&driver_claude_code::RUNTIME.descriptor)
            .unwrap()
            .to_owned()
    }
}
