//! The scripted fake of a resident stream-json CLI (feature `testing`), for the dialects'
//! tests: `fake_cli` serving one turn per `user` line, with the session its argv names.

use fake_cli::{LineRule, Rule, Scenario};

/// The `user` message line the driver writes for each turn.
pub const USER_LINE: &str = r#""type":"user""#;

/// The events of one clean turn on session `session` (a template): `system/init` with one
/// connected MCP server `agent-ui`, an answer naming the process and the turn
/// (`pid <pid> turn <n>`), and a successful `result` with usage.
pub fn turn(rule: LineRule, session: &str) -> LineRule {
    rule.stdout(format!(
        r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session}","tools":["Bash"],"mcp_servers":[{{"name":"agent-ui","status":"connected"}}],"model":"claude-test","permissionMode":"default"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"assistant","message":{{"id":"msg_${{COUNT}}","type":"message","role":"assistant","content":[{{"type":"text","text":"pid ${{PID}} turn ${{COUNT}}"}}]}},"parent_tool_use_id":null,"session_id":"{session}"}}"#
    ))
    .stdout(format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"pid ${{PID}} turn ${{COUNT}}","session_id":"{session}","usage":{{"input_tokens":11,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":7}}}}"#
    ))
}

/// A resident stream-json CLI: each `user` line is one clean turn ([`turn`]) on the session
/// its argv names (a fork gets a new id, a resume keeps its id, a new session the host's id,
/// a bare run a new one). `extra` line rules come first (a crash, a stall, noise). Its rules
/// match resident invocations only, so a per-turn script's rules can be appended.
pub fn resident(extra: &[LineRule]) -> Scenario {
    // Every rule needs `--input-format`, so a per-turn script's rules may follow these.
    const RESIDENT: &str = "--input-format";
    let rules: [(Rule, &str); 4] = [
        (Rule::when([RESIDENT, "--fork-session"]), "${SESSION}"),
        (Rule::when([RESIDENT, "--resume"]), "${ARG_AFTER:--resume}"),
        (
            Rule::when([RESIDENT, "--session-id"]),
            "${ARG_AFTER:--session-id}",
        ),
        (Rule::when([RESIDENT]), "${SESSION}"),
    ];
    let mut scenario = Scenario::new().capture_arg_flag("--mcp-config");
    for (mut rule, session) in rules {
        for line in extra {
            rule = rule.serve(line.clone());
        }
        scenario = scenario.rule(rule.serve(turn(LineRule::when([USER_LINE]), session)));
    }
    scenario
}
