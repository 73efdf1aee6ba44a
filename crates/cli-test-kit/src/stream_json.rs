//! The scripted fake of a resident stream-json CLI, for the tests of the two stream-json
//! dialects (Claude Code, CodeBuddy): `fake_cli` serving one turn per `user` line, with the
//! session its argv names.

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

/// A resident stream-json CLI: `initialize` is answered (a pre-warm's warm-up), each `user`
/// line is one clean turn ([`turn`]) on the session its argv names (a fork gets a new id, a resume keeps its id, a new session the host's id,
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
    // The warm-up of a pre-warm: answered at once, no turn.
    let initialize = LineRule::when([r#""subtype":"initialize""#]).stdout(
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"${FIELD:request_id}","response":{}}}"#,
    );
    let mut scenario = Scenario::new().capture_arg_flag("--mcp-config");
    for (mut rule, session) in rules {
        for line in extra {
            rule = rule.serve(line.clone());
        }
        rule = rule.serve(initialize.clone());
        scenario = scenario.rule(rule.serve(turn(LineRule::when([USER_LINE]), session)));
    }
    scenario
}

/// The conformance factory of a resident stream-json dialect over the fake: [`resident`]
/// with the kit's [`tool_use`] rules, every line recorded in `served`, so the kit runs every
/// clause, the policy and approval clauses included.
pub fn resident_factory<D: driver_cli::CommonOptions + Clone>(
    harness: fake_cli::Harness,
    options: D,
    served: &std::path::Path,
) -> crate::FakeCliFactory<D> {
    crate::FakeCliFactory::resident(harness, options)
        .with_tool_use(driver_spi::Action::Write, served, ALLOWED)
        .with_steering()
}

/// [`resident`] with the kit's [`tool_use`] and [`steered_turn`] rules first, recording every
/// line it is sent in `served`: the scenario of [`resident_factory`].
pub fn resident_kit(served: &std::path::Path) -> Scenario {
    let rules: Vec<LineRule> = tool_use().into_iter().chain(steered_turn()).collect();
    resident(&rules).serve_record(served)
}

/// Line rules for the kit's steered turn, before [`resident`]'s turn rule, as Claude Code
/// runs one under `--replay-user-messages`: a `user` line of
/// [`STEER_PROMPT`](crate::STEER_PROMPT) starts a turn on the bare session (its init, the
/// prompt's echo, a first answer) that waits; the follow-up's `user` line
/// ([`STEER_TEXT`](driver_spi::conformance::STEER_TEXT)) is echoed as taken, and the turn
/// answers it and ends.
pub fn steered_turn() -> [LineRule; 2] {
    let echo = |text: &str| {
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":"{text}"}},"session_id":"${{SESSION}}","parent_tool_use_id":null,"isReplay":true}}"#
        )
    };
    let start = LineRule::when([USER_LINE, crate::STEER_PROMPT])
        .stdout(r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"${SESSION}","tools":["Bash"],"mcp_servers":[{"name":"agent-ui","status":"connected"}],"model":"claude-test","permissionMode":"default"}"#)
        .stdout(echo(crate::STEER_PROMPT))
        .stdout(r#"{"type":"assistant","message":{"id":"msg_steer_0","type":"message","role":"assistant","content":[{"type":"text","text":"working; "}]},"parent_tool_use_id":null,"session_id":"${SESSION}"}"#);
    let follow_up = driver_spi::conformance::STEER_TEXT;
    let end = LineRule::when([USER_LINE, follow_up])
        .stdout(echo(follow_up))
        .stdout(r#"{"type":"assistant","message":{"id":"msg_steer_1","type":"message","role":"assistant","content":[{"type":"text","text":"steered"}]},"parent_tool_use_id":null,"session_id":"${SESSION}"}"#)
        .stdout(r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"steered","session_id":"${SESSION}","usage":{"input_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":7}}"#);
    [start, end]
}

/// What the driver's answer to a permission request contains when it lets the tool run: the
/// marker for [`FakeCliFactory::with_tool_use`](crate::FakeCliFactory::with_tool_use).
pub const ALLOWED: &str = r#""allowed":true"#;

/// Line rules for the kit's scripted tool use, before [`resident`]'s turn rule: a `user` line
/// of [`TOOL_USE_PROMPT`](crate::TOOL_USE_PROMPT) starts a turn on the bare
/// session that uses `Write` with the kit's
/// [`TOOL_ARGUMENTS`](driver_spi::conformance::TOOL_ARGUMENTS) and asks `can_use_tool`; an
/// answer that allows it ([`ALLOWED`]) gets the tool's result and the turn's end, one that
/// refuses it an error result and the turn's end.
pub fn tool_use() -> [LineRule; 3] {
    let args = driver_spi::conformance::TOOL_ARGUMENTS;
    let ask = LineRule::when([USER_LINE, crate::TOOL_USE_PROMPT])
        .stdout(r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"${SESSION}","tools":["Write"],"mcp_servers":[{"name":"agent-ui","status":"connected"}],"model":"claude-test","permissionMode":"default"}"#)
        .stdout(format!(
            r#"{{"type":"assistant","message":{{"id":"msg_tool","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"toolu_kit","name":"Write","input":{args}}}]}},"parent_tool_use_id":null,"session_id":"${{SESSION}}"}}"#
        ))
        .stdout(format!(
            r#"{{"type":"control_request","request_id":"perm_${{COUNT}}","request":{{"subtype":"can_use_tool","tool_name":"Write","input":{args},"tool_use_id":"toolu_kit"}}}}"#
        ));
    let end = |rule: LineRule, result: &str, is_error: bool| {
        rule.stdout(format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_kit","content":"{result}","is_error":{is_error}}}]}},"session_id":"${{SESSION}}"}}"#
        ))
        .stdout(r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done","session_id":"${SESSION}","usage":{"input_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":7}}"#)
    };
    const ANSWER: &str = r#""type":"control_response""#;
    [
        ask,
        end(LineRule::when([ANSWER, ALLOWED]), "written", false),
        end(
            LineRule::when([ANSWER, r#""allowed":false"#]),
            "permission denied",
            true,
        ),
    ]
}

/// The events of a turn on session `session` (a template) whose model echoes the canary key
/// ([`CANARY`](crate::CANARY)) everywhere a model's text goes: a `Bash` tool's
/// input (first asked with `can_use_tool`, when `ask`: a resident process's permission
/// request), the tool's result, and the answer. The lines for a per-turn [`Rule`]'s or a
/// resident [`LineRule`]'s `stdout` steps, for
/// [`assert_canary_hidden`](crate::assert_canary_hidden).
pub fn canary_turn(session: &str, ask: bool) -> Vec<String> {
    let key = crate::CANARY;
    let input = format!(r#"{{"command":"echo {key}","description":"print the key"}}"#);
    let mut lines = vec![
        format!(
            r#"{{"type":"system","subtype":"init","cwd":"/w","session_id":"{session}","tools":["Bash"],"mcp_servers":[],"model":"claude-test","permissionMode":"default"}}"#
        ),
        format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"Bash","input":{input}}}]}},"parent_tool_use_id":null,"session_id":"{session}"}}"#
        ),
    ];
    if ask {
        lines.push(format!(
            r#"{{"type":"control_request","request_id":"perm_1","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{input},"tool_use_id":"toolu_1"}}}}"#
        ));
    }
    lines.extend([
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"{key}","is_error":false}}]}},"session_id":"{session}"}}"#
        ),
        format!(
            r#"{{"type":"assistant","message":{{"id":"msg_2","type":"message","role":"assistant","content":[{{"type":"text","text":"the key is {key}"}}]}},"parent_tool_use_id":null,"session_id":"{session}"}}"#
        ),
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"the key is {key}","session_id":"{session}","usage":{{"input_tokens":11,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":7}}}}"#
        ),
    ]);
    lines
}
