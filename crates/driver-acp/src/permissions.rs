//! `session/request_permission` under the run's one permission policy.
//!
//! The tool call's kind names the action: `edit`, `delete` and `move` are writes, `execute`
//! runs commands, `fetch` is network; `read`, `search` and `think` are not governed by the
//! policy and are allowed once without asking; any other kind (an MCP tool, `other`, a kind
//! of a newer protocol) is treated as running commands, the strictest reading, except a call
//! of a tool of one of the request's own MCP servers, which is `mcp` (Gemini asks for those
//! with kind `other` and the title `<tool> (<server> MCP Server)`). The answer
//! selects the agent's own option: `allow_once` for an approval and `reject_once` for a
//! denial; `allow_always` only when the policy itself allows the action (never for a host's
//! one-off yes), and `reject_always` only when no one-off rejection is offered.

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionRequest, ToolKind,
};
use driver_spi::{Action, ApprovalDecision, ApprovalQuery, Permission, Request};
use serde_json::Value;

use crate::protocol::{cancelled, selected};

/// The request, read with the protocol's types; `None` when it is not one.
fn read(params: &Value) -> Option<RequestPermissionRequest> {
    serde_json::from_value(params.clone()).ok()
}

/// The policy's action for a tool kind; `None` for the kinds it does not govern.
fn action(kind: Option<ToolKind>) -> Option<Action> {
    match kind.unwrap_or_default() {
        ToolKind::Read | ToolKind::Search | ToolKind::Think => None,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move => Some(Action::Write),
        ToolKind::Fetch => Some(Action::Network),
        _ => Some(Action::Commands),
    }
}

/// The policy's action for a permission request of `run`: by the tool's kind, but `Mcp`
/// for a call (kind `other`) of a tool of one of the run's MCP servers, as Gemini titles
/// one: `<tool> (<server> MCP Server)`.
fn action_of(run: &Request, asked: &RequestPermissionRequest) -> Option<Action> {
    let fields = &asked.tool_call.fields;
    let own_mcp_tool = matches!(fields.kind.unwrap_or_default(), ToolKind::Other)
        && fields.title.as_deref().is_some_and(|title| {
            run.mcp
                .iter()
                .any(|server| title.ends_with(&format!(" ({} MCP Server)", server.name)))
        });
    if own_mcp_tool {
        Some(Action::Mcp)
    } else {
        action(fields.kind)
    }
}

/// The approval a permission request of `run` asks for; `None` for a read-only kind
/// (answered by [`read_only_answer`]) or a request that is not well formed (refused as
/// unsupported).
pub(crate) fn query(run: &Request, params: &Value) -> Option<ApprovalQuery> {
    let request = read(params)?;
    let action = action_of(run, &request)?;
    let call = &request.tool_call;
    let tool = call
        .fields
        .title
        .clone()
        .or_else(|| call.fields.name.clone())
        .unwrap_or_else(|| "tool".to_owned());
    let arguments = call
        .fields
        .raw_input
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    Some(
        ApprovalQuery::new(action, tool)
            .with_call_id(call.tool_call_id.0.to_string())
            .with_arguments(arguments),
    )
}

/// The answer to a permission request for a kind the policy does not govern: allowed once.
pub(crate) fn read_only_answer(params: &Value) -> Option<Value> {
    let request = read(params)?;
    if action(request.tool_call.fields.kind).is_some() {
        return None;
    }
    Some(pick(&request.options, &[PermissionOptionKind::AllowOnce]))
}

/// The answer that carries `decision`, by the options the agent offered.
pub(crate) fn answer(request: &Request, params: &Value, decision: &ApprovalDecision) -> Value {
    let Some(asked) = read(params) else {
        return cancelled();
    };
    let standing = action_of(request, &asked)
        .is_some_and(|action| request.permissions.get(action) == Permission::Allow);
    let kinds: &[PermissionOptionKind] = match decision {
        ApprovalDecision::Approve if standing => &[
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ],
        ApprovalDecision::Approve => &[PermissionOptionKind::AllowOnce],
        _ => &[
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ],
    };
    pick(&asked.options, kinds)
}

/// Selects the first offered option of the first of `kinds` offered; `cancelled` when none
/// is (a denial then still stops the tool).
fn pick(options: &[PermissionOption], kinds: &[PermissionOptionKind]) -> Value {
    kinds
        .iter()
        .find_map(|kind| options.iter().find(|o| o.kind == *kind))
        .map_or_else(cancelled, |option| selected(&option.option_id.0))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use driver_spi::{PermissionPolicy, ProfilePayload};
    use run_service::RunId;
    use serde_json::json;

    use super::*;

    fn asked(kind: &str, options: &[&str]) -> Value {
        let options: Vec<Value> = options
            .iter()
            .map(|k| json!({"optionId": format!("opt-{k}"), "name": k, "kind": k}))
            .collect();
        json!({
            "sessionId": "s1",
            "toolCall": {"toolCallId": "call-1", "title": "rm -rf build", "kind": kind,
                         "rawInput": {"command": "rm -rf build"}},
            "options": options,
        })
    }

    fn request(policy: PermissionPolicy) -> Request {
        let fp = compat_fingerprint_for_tests();
        let mut request = Request::new(RunId::new("r"), "hi", ProfilePayload::new(fp, fp));
        request.permissions = policy;
        request
    }

    fn compat_fingerprint_for_tests() -> compat_fingerprint::Fingerprint {
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("acp permissions test v1"),
            |e| {
                e.str("p");
            },
        )
    }

    const ALL: &[&str] = &["allow_once", "allow_always", "reject_once", "reject_always"];

    #[test]
    fn kinds_map_to_the_policy_actions() {
        let q = query(&request(PermissionPolicy::DEFAULT), &asked("execute", ALL)).unwrap();
        assert_eq!(q.action, Action::Commands);
        assert_eq!(q.tool, "rm -rf build");
        assert_eq!(q.call_id.as_deref(), Some("call-1"));
        assert_eq!(
            query(&request(PermissionPolicy::DEFAULT), &asked("edit", ALL))
                .unwrap()
                .action,
            Action::Write
        );
        assert_eq!(
            query(&request(PermissionPolicy::DEFAULT), &asked("fetch", ALL))
                .unwrap()
                .action,
            Action::Network
        );
        assert_eq!(
            query(&request(PermissionPolicy::DEFAULT), &asked("other", ALL))
                .unwrap()
                .action,
            Action::Commands,
            "the strictest reading"
        );
        assert!(query(&request(PermissionPolicy::DEFAULT), &asked("read", ALL)).is_none());
        assert_eq!(
            read_only_answer(&asked("read", ALL)).unwrap(),
            json!({"outcome": {"outcome": "selected", "optionId": "opt-allow_once"}})
        );
        assert_eq!(read_only_answer(&asked("execute", ALL)), None);
        assert!(
            query(
                &request(PermissionPolicy::DEFAULT),
                &json!({"not": "a request"})
            )
            .is_none()
        );
    }

    #[test]
    fn a_tool_of_the_requests_own_mcp_server_is_the_mcp_action() {
        // As gemini --acp 0.61.0 asks for an MCP tool: kind `other`, titled by its server.
        let ping = |server: &str| {
            json!({
                "sessionId": "s1",
                "toolCall": {"toolCallId": "mcp_agent-tools_ping__call_0",
                             "title": format!("ping ({server} MCP Server)"), "kind": "other"},
                "options": [
                    {"optionId": "proceed_always_server", "name": "a", "kind": "allow_always"},
                    {"optionId": "proceed_once", "name": "o", "kind": "allow_once"},
                    {"optionId": "cancel", "name": "r", "kind": "reject_once"}],
            })
        };
        let mut run = request(PermissionPolicy::DEFAULT);
        run.mcp.push(run_service::McpServer::streamable_http(
            "agent-tools",
            "http://127.0.0.1:1/mcp",
        ));
        assert_eq!(
            query(&run, &ping("agent-tools")).unwrap().action,
            Action::Mcp
        );
        assert_eq!(
            query(&run, &ping("elsewhere")).unwrap().action,
            Action::Commands,
            "a server the request does not declare"
        );
        let mut execute = ping("agent-tools");
        execute["toolCall"]["kind"] = json!("execute");
        assert_eq!(query(&run, &execute).unwrap().action, Action::Commands);
        // Allowed by the default policy: once first, as for any standing permission.
        assert_eq!(
            answer(&run, &ping("agent-tools"), &ApprovalDecision::Approve),
            json!({"outcome": {"outcome": "selected", "optionId": "proceed_once"}})
        );
    }

    #[test]
    fn an_always_option_is_chosen_only_when_the_policy_allows() {
        let ask = PermissionPolicy::DEFAULT.with(Action::Commands, Permission::Ask);
        let allow = PermissionPolicy::DEFAULT.with(Action::Commands, Permission::Allow);
        let only_always = asked("execute", &["allow_always", "reject_once"]);
        // The host's one-off yes never becomes a standing approval: nothing to select.
        assert_eq!(
            answer(&request(ask), &only_always, &ApprovalDecision::Approve),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        assert_eq!(
            answer(&request(allow), &only_always, &ApprovalDecision::Approve),
            json!({"outcome": {"outcome": "selected", "optionId": "opt-allow_always"}})
        );
        assert_eq!(
            answer(
                &request(allow),
                &asked("execute", ALL),
                &ApprovalDecision::Approve
            ),
            json!({"outcome": {"outcome": "selected", "optionId": "opt-allow_once"}}),
            "once first, even when always is allowed"
        );
        assert_eq!(
            answer(
                &request(ask),
                &asked("execute", ALL),
                &ApprovalDecision::deny("no")
            ),
            json!({"outcome": {"outcome": "selected", "optionId": "opt-reject_once"}})
        );
    }
}
