//! A `claude` stand-in: the workspace's scripted fake CLI, answering with Claude Code's own
//! stream-json event shapes.

use cli_test_kit::FakeCli;
use driver_claude_code::ClaudeCodeOptions;
use fake_cli::{Rule, Scenario};

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

/// The fake CLI of these tests: [`FakeCli`] over [`ClaudeCodeOptions`].
pub(crate) type FakeClaude = FakeCli<ClaudeCodeOptions>;

/// A fake that follows `scenario`, recording the values of `record_env`; the host
/// environment carries this CLI's credential variables.
pub(crate) fn fake_claude(scenario: Scenario, record_env: &[&str]) -> FakeClaude {
    FakeCli::new(
        scenario,
        VERSION,
        record_env,
        &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
    )
}
