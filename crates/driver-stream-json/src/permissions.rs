//! The permission policy as Claude Code's and CodeBuddy's flags, and their permission
//! requests as approvals.
//!
//! Facts from the pinned binaries (claude 2.1.197, codebuddy 2.117.0; see
//! `docs/stream-json-resident.md`):
//! - `--permission-mode dontAsk` refuses every tool that is not allowed, and the model sees the
//!   refusal; `acceptEdits` allows file edits; `default` asks, which headless means a
//!   `can_use_tool` control request on a stream-json stdin (Claude also needs
//!   `--permission-prompt-tool stdio`; CodeBuddy has no such flag) and a refusal otherwise.
//! - Claude Code runs commands it judges read-only (`ls`) without asking in every mode, so
//!   denying commands there takes `--disallowedTools Bash`; CodeBuddy asks for every command,
//!   and a disallowed tool fails its whole turn, so CodeBuddy relies on the mode instead.
//! - Neither CLI sandboxes commands: a command may write and reach the network, so commands
//!   are allowed only when writes and network are.
//! - CodeBuddy runs MCP tools unchecked with a text prompt: denying them takes
//!   `--disallowedTools mcp__<server>`.

use driver_spi::{
    Action, ApprovalDecision, ApprovalQuery, Permission, PermissionPolicy, Unsupported,
};
use serde_json::{Value, json};

/// How one CLI takes the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionFlags {
    /// The flag value that routes permission requests to stdin, when the CLI needs one
    /// (Claude Code: `--permission-prompt-tool stdio`).
    pub prompt_tool: Option<&'static str>,
    /// Whether a disallowed built-in tool is only removed (Claude Code), not fatal to the
    /// turn (CodeBuddy).
    pub disallow_builtins: bool,
}

impl PermissionFlags {
    /// Claude Code.
    pub const CLAUDE_CODE: Self = Self {
        prompt_tool: Some("stdio"),
        disallow_builtins: true,
    };

    /// CodeBuddy Code.
    pub const CODEBUDDY: Self = Self {
        prompt_tool: None,
        disallow_builtins: false,
    };

    /// Refuses what these CLIs cannot enforce: commands allowed while writes or network are
    /// not (no sandbox holds a command back).
    ///
    /// # Errors
    /// [`Unsupported::Permission`] for `commands=allow`.
    pub(crate) fn check(self, policy: &PermissionPolicy) -> Result<(), Unsupported> {
        if policy.commands == Permission::Allow
            && (policy.write != Permission::Allow || policy.network != Permission::Allow)
        {
            return Err(Unsupported::Permission {
                action: Action::Commands,
                permission: Permission::Allow,
            });
        }
        Ok(())
    }

    /// The permission flags for a turn under `policy` with these MCP server names; `routed`
    /// when the turn runs on a stream-json stdin that answers permission requests.
    pub(crate) fn args<'a>(
        self,
        policy: &PermissionPolicy,
        servers: impl IntoIterator<Item = &'a str>,
        routed: bool,
    ) -> Vec<String> {
        let asks = policy.asks() && routed;
        let mode = if policy.write == Permission::Allow {
            "acceptEdits"
        } else if asks {
            "default"
        } else {
            "dontAsk"
        };
        let mut args = vec!["--permission-mode".to_owned(), mode.to_owned()];
        if let (true, Some(tool)) = (asks, self.prompt_tool) {
            args.extend(["--permission-prompt-tool".to_owned(), tool.to_owned()]);
        }
        let mut allowed: Vec<String> = Vec::new();
        let mut disallowed: Vec<String> = Vec::new();
        let mut rule = |permission: Permission, tools: Vec<String>, builtin: bool| match permission
        {
            Permission::Allow => allowed.extend(tools),
            Permission::Deny if !builtin || self.disallow_builtins => disallowed.extend(tools),
            _ => {}
        };
        rule(policy.commands, vec!["Bash".to_owned()], true);
        rule(
            policy.network,
            vec!["WebFetch".to_owned(), "WebSearch".to_owned()],
            true,
        );
        rule(
            policy.mcp,
            servers.into_iter().map(|s| format!("mcp__{s}")).collect(),
            false,
        );
        if !disallowed.is_empty() {
            args.extend(["--disallowedTools".to_owned(), disallowed.join(",")]);
        }
        // Variadic: last, so nothing after it is read as a tool.
        if !allowed.is_empty() {
            args.extend(["--allowedTools".to_owned(), allowed.join(",")]);
        }
        args
    }
}

/// The policy action a tool of these CLIs takes; `None` for tools that only read (always
/// allowed). A tool not known here counts as a command, the most guarded kind.
pub(crate) fn tool_action(tool: &str) -> Option<Action> {
    match tool {
        "Read" | "Glob" | "Grep" | "LS" | "NotebookRead" | "TodoWrite" | "TodoRead" => None,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => Some(Action::Write),
        "WebFetch" | "WebSearch" => Some(Action::Network),
        _ if tool.starts_with("mcp__") => Some(Action::Mcp),
        _ => Some(Action::Commands),
    }
}

/// The approval a `can_use_tool` request asks for; `None` for a read-only tool (allowed
/// without asking) or another request.
pub(crate) fn approval(method: &str, params: &Value) -> Option<ApprovalQuery> {
    if method != "can_use_tool" {
        return None;
    }
    let tool = params
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let action = tool_action(tool)?;
    let mut query = ApprovalQuery::new(action, tool).with_arguments(
        params
            .get("input")
            .map(Value::to_string)
            .unwrap_or_default(),
    );
    if let Some(id) = params.get("tool_use_id").and_then(Value::as_str) {
        query = query.with_call_id(id);
    }
    Some(query)
}

/// The answer to a `can_use_tool` request, in both CLIs' shapes at once (Claude Code reads
/// `behavior`, `updatedInput` and `message`; CodeBuddy `allowed` and `reason`, and shows the
/// model a fixed refusal). An approval sends the request's own input back unchanged: Claude
/// Code runs the tool with whatever `updatedInput` holds.
pub(crate) fn answer(params: &Value, decision: &ApprovalDecision) -> Value {
    match decision {
        ApprovalDecision::Approve => json!({
            "behavior": "allow",
            "updatedInput": params.get("input").cloned().unwrap_or_else(|| json!({})),
            "allowed": true,
        }),
        ApprovalDecision::Deny { reason } => refusal(reason),
        // Not answerable: never taken by a ticket; refused like a denial if it came.
        ApprovalDecision::Answer { output } => refusal(output),
        _ => refusal("not allowed by the host"),
    }
}

/// A refusal in both shapes.
pub(crate) fn refusal(reason: &str) -> Value {
    json!({"behavior": "deny", "message": reason, "allowed": false, "reason": reason})
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn args(flags: PermissionFlags, policy: PermissionPolicy, routed: bool) -> String {
        flags.args(&policy, ["files"], routed).join(" ")
    }

    #[test]
    fn the_default_policy_allows_the_request_servers_and_nothing_else() {
        let p = PermissionPolicy::default();
        assert_eq!(
            args(PermissionFlags::CLAUDE_CODE, p, false),
            "--permission-mode dontAsk --disallowedTools Bash,WebFetch,WebSearch --allowedTools mcp__files"
        );
        assert_eq!(
            args(PermissionFlags::CODEBUDDY, p, false),
            "--permission-mode dontAsk --allowedTools mcp__files"
        );
    }

    #[test]
    fn asking_routes_requests_only_on_a_routed_turn() {
        let p = PermissionPolicy::default().ask(Action::Write);
        assert_eq!(
            args(PermissionFlags::CLAUDE_CODE, p, true),
            "--permission-mode default --permission-prompt-tool stdio \
             --disallowedTools Bash,WebFetch,WebSearch --allowedTools mcp__files"
        );
        assert_eq!(
            args(PermissionFlags::CODEBUDDY, p, true),
            "--permission-mode default --allowedTools mcp__files"
        );
        assert!(
            args(PermissionFlags::CLAUDE_CODE, p, false).starts_with("--permission-mode dontAsk")
        );
    }

    #[test]
    fn allowed_writes_accept_edits_and_denied_mcp_is_disallowed() {
        let p = PermissionPolicy::allow_all().deny(Action::Mcp);
        assert_eq!(
            args(PermissionFlags::CODEBUDDY, p, false),
            "--permission-mode acceptEdits --disallowedTools mcp__files \
             --allowedTools Bash,WebFetch,WebSearch"
        );
    }

    #[test]
    fn commands_need_writes_and_network() {
        let flags = PermissionFlags::CLAUDE_CODE;
        let commands = PermissionPolicy::default().allow(Action::Commands);
        assert!(flags.check(&commands).is_err());
        assert!(flags.check(&commands.allow(Action::Write)).is_err());
        assert!(flags.check(&PermissionPolicy::allow_all()).is_ok());
        assert!(
            flags
                .check(&PermissionPolicy::default().ask(Action::Commands))
                .is_ok()
        );
    }

    #[test]
    fn tools_map_to_actions_and_answers_carry_the_input_back() {
        assert_eq!(tool_action("Write"), Some(Action::Write));
        assert_eq!(tool_action("Read"), None);
        assert_eq!(tool_action("mcp__files__get"), Some(Action::Mcp));
        assert_eq!(tool_action("Task"), Some(Action::Commands));
        let params =
            json!({"tool_name": "Write", "input": {"file_path": "/w/a"}, "tool_use_id": "t1"});
        let query = approval("can_use_tool", &params).unwrap();
        assert_eq!(
            (query.action, query.call_id.as_deref()),
            (Action::Write, Some("t1"))
        );
        assert!(approval("can_use_tool", &json!({"tool_name": "Read"})).is_none());
        assert!(approval("mcp_status", &params).is_none());
        let allow = answer(&params, &ApprovalDecision::Approve);
        assert_eq!(allow["updatedInput"], params["input"]);
        assert_eq!(allow["allowed"], true);
        let deny = answer(&params, &ApprovalDecision::deny("no"));
        assert_eq!(
            (deny["behavior"].as_str(), deny["reason"].as_str()),
            (Some("deny"), Some("no"))
        );
    }
}
