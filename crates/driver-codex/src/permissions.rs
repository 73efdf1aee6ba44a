//! The permission policy as Codex's sandbox, approval policy and features, and its approval
//! requests (app-server) as approvals.
//!
//! Facts from the pinned binary (codex 0.169.0, offline; see `docs/codex-app-server.md`):
//! - the sandbox is enforced by Codex's own bubblewrap: `read-only` refuses writes,
//!   `workspace-write` allows them in the workspace, and network only with
//!   `sandbox_workspace_write.network_access`;
//! - `exec` always runs with approval policy `never`; in app-server, `on-request` asks
//!   (`item/fileChange/requestApproval`, and `item/commandExecution/requestApproval` for a
//!   command the model wants to run outside the sandbox), `untrusted` asks for every command
//!   and is accepted only as a `thread/start` parameter;
//! - `features.shell_tool=false` and `features.unified_exec=false` take the command tool away;
//! - an answer is `{"decision":"accept"}` or `{"decision":"decline"}`; a decline carries no
//!   reason the model sees.

use driver_spi::{
    Action, ApprovalDecision, ApprovalQuery, Permission, PermissionPolicy, Request, Unsupported,
};
use serde_json::{Value, json};

/// Refuses what Codex cannot enforce: asking about MCP tools or network, and network without
/// workspace writes (only the workspace-write sandbox has a network switch).
pub(crate) fn check(policy: &PermissionPolicy) -> Result<(), Unsupported> {
    let refuse = |action, permission| Err(Unsupported::Permission { action, permission });
    if policy.mcp == Permission::Ask {
        return refuse(Action::Mcp, Permission::Ask);
    }
    match policy.network {
        Permission::Ask => refuse(Action::Network, Permission::Ask),
        Permission::Allow if policy.write != Permission::Allow => {
            refuse(Action::Network, Permission::Allow)
        }
        _ => Ok(()),
    }
}

/// The `-c` settings of `policy` (without MCP servers' approval modes), in order.
pub(crate) fn settings(policy: &PermissionPolicy) -> Vec<(&'static str, &'static str)> {
    let approval = if policy.write == Permission::Ask || policy.commands == Permission::Ask {
        // `untrusted` (commands asked) goes in the thread's parameters; see `thread_policy`.
        "\"on-request\""
    } else {
        "\"never\""
    };
    let sandbox = if policy.write == Permission::Allow {
        "\"workspace-write\""
    } else {
        "\"read-only\""
    };
    let mut settings = vec![("approval_policy", approval), ("sandbox_mode", sandbox)];
    if policy.network == Permission::Allow {
        settings.push(("sandbox_workspace_write.network_access", "true"));
    }
    if policy.commands == Permission::Deny {
        settings.push(("features.shell_tool", "false"));
        settings.push(("features.unified_exec", "false"));
    }
    settings
}

/// The approval policy a thread of `policy` is opened with, when it differs from the launch's:
/// `untrusted`, which asks for every command.
pub(crate) fn thread_policy(policy: &PermissionPolicy) -> Option<&'static str> {
    (policy.commands == Permission::Ask).then_some("untrusted")
}

const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
const FILE_APPROVAL: &str = "item/fileChange/requestApproval";

/// The approval an app-server request asks for. A command is asked about as a command when
/// the policy asks about commands (`untrusted`), else as a write: `on-request` asks only for
/// a command that wants out of the read-only sandbox.
pub(crate) fn approval(request: &Request, method: &str, params: &Value) -> Option<ApprovalQuery> {
    let (action, tool, arguments) = match method {
        COMMAND_APPROVAL => {
            let action = if request.permissions.commands == Permission::Ask {
                Action::Commands
            } else {
                Action::Write
            };
            let command = params.get("command").and_then(Value::as_str).unwrap_or("");
            (action, "commandExecution", command.to_owned())
        }
        FILE_APPROVAL => {
            let reason = params.get("reason").and_then(Value::as_str).unwrap_or("");
            (Action::Write, "fileChange", reason.to_owned())
        }
        _ => return None,
    };
    let mut query = ApprovalQuery::new(action, tool).with_arguments(arguments);
    if let Some(id) = params.get("itemId").and_then(Value::as_str) {
        query = query.with_call_id(id);
    }
    Some(query)
}

/// Codex's answer to an approval request.
pub(crate) fn answer(decision: &ApprovalDecision) -> Value {
    match decision {
        ApprovalDecision::Approve => json!({"decision": "accept"}),
        _ => json!({"decision": "decline"}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn the_policy_becomes_sandbox_approval_and_features() {
        let default = settings(&PermissionPolicy::default());
        assert_eq!(
            default,
            [
                ("approval_policy", "\"never\""),
                ("sandbox_mode", "\"read-only\""),
                ("features.shell_tool", "false"),
                ("features.unified_exec", "false"),
            ]
        );
        let writes = PermissionPolicy::allow_all();
        assert_eq!(
            settings(&writes),
            [
                ("approval_policy", "\"never\""),
                ("sandbox_mode", "\"workspace-write\""),
                ("sandbox_workspace_write.network_access", "true"),
            ]
        );
        let ask = PermissionPolicy::default()
            .allow(Action::Commands)
            .ask(Action::Write);
        assert_eq!(
            settings(&ask)[..2],
            [
                ("approval_policy", "\"on-request\""),
                ("sandbox_mode", "\"read-only\"")
            ]
        );
        assert_eq!(thread_policy(&ask), None);
        assert_eq!(
            thread_policy(&PermissionPolicy::default().ask(Action::Commands)),
            Some("untrusted")
        );
    }

    #[test]
    fn what_codex_cannot_enforce_is_refused() {
        assert!(check(&PermissionPolicy::default()).is_ok());
        assert!(check(&PermissionPolicy::allow_all()).is_ok());
        assert!(check(&PermissionPolicy::default().ask(Action::Mcp)).is_err());
        assert!(check(&PermissionPolicy::default().ask(Action::Network)).is_err());
        assert!(check(&PermissionPolicy::default().allow(Action::Network)).is_err());
    }

    #[test]
    fn requests_become_approvals_and_decisions_answers() {
        use compat_fingerprint::{Fingerprint, Kind};
        const K: Kind = Kind::new("driver-codex 2026-12-03 test v1");
        let fp = Fingerprint::of(K, |e| e.str("p"));
        let request = Request::new(
            run_service::RunId::new("r"),
            "hi",
            driver_spi::ProfilePayload::new(fp, fp),
        )
        .with_permissions(
            PermissionPolicy::default()
                .allow(Action::Commands)
                .ask(Action::Write),
        );
        let params = json!({"command": "/bin/bash -lc 'touch x'", "itemId": "call_0"});
        let query = approval(&request, COMMAND_APPROVAL, &params).unwrap();
        assert_eq!(query.action, Action::Write);
        assert_eq!(query.call_id.as_deref(), Some("call_0"));
        assert!(query.arguments.contains("touch x"));
        let file = approval(&request, FILE_APPROVAL, &json!({"itemId": "call_1"})).unwrap();
        assert_eq!(file.action, Action::Write);
        assert!(approval(&request, "mcpServer/elicitation/request", &params).is_none());
        assert_eq!(
            answer(&ApprovalDecision::Approve),
            json!({"decision": "accept"})
        );
        assert_eq!(
            answer(&ApprovalDecision::deny("no")),
            json!({"decision": "decline"})
        );
    }
}
