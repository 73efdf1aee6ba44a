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
//!   what is left to write with is `apply_patch` (a freeform tool), which Codex offers only
//!   for a model whose metadata names an `apply_patch_tool_type`: every model of its bundled
//!   catalog ([`PATCH_TOOL_MODELS`]), not a model it does not know (a gateway's, the test
//!   kit's `mock-model`). A policy that permits writes but denies commands is therefore
//!   refused for a model outside the catalog ([`Unsupported::PermissionNeeds`]): it would
//!   never write, and a policy that asks about writes would never ask;
//! - a file change's approval request (`item/fileChange/requestApproval`) names its item
//!   (`itemId`) but carries no paths: they are in the `fileChange` item of the `item/started`
//!   notification just before it (`changes`: `path`, `kind.type` `add|delete|update`,
//!   `kind.move_path`, `diff`), which the driver notes ([`note`]) and puts in the approval's
//!   arguments;
//! - an answer is `{"decision":"accept"}` or `{"decision":"decline"}`; a decline carries no
//!   reason the model sees.

use driver_cli::TurnNotes;
use driver_spi::{
    Action, ApprovalDecision, ApprovalQuery, Permission, PermissionPolicy, Request, Unsupported,
};
use serde_json::{Value, json};

/// The models of codex 0.169.0's bundled catalog. Each one's metadata has
/// `"apply_patch_tool_type": "freeform"` (the catalog is embedded in the native binary), so
/// Codex offers it the `apply_patch` tool with the command tool off: checked with
/// `gpt-5.5` against the test kit's mock (the request's tools: `apply_patch` and no
/// `exec_command`), while `mock-model` (fallback metadata) gets no write tool at all.
/// Codex's default model (no `model` set) is one of them.
pub(crate) const PATCH_TOOL_MODELS: [&str; 12] = [
    "gpt-6-astra",
    "gpt-6.1-sol",
    "gpt-6.1-terra",
    "gpt-6-sol",
    "gpt-6-luna",
    "gpt-5.6-sol",
    "gpt-5.6-terra",
    "gpt-5.6-luna",
    "gpt-daybreak-blue-latest",
    "gpt-daybreak-red-latest",
    "gpt-5.5",
    "codex-auto-review",
];

/// Refuses what Codex cannot enforce: asking about MCP tools or network, network without
/// workspace writes (only the workspace-write sandbox has a network switch), and writes
/// without commands for a `model` that has no patch tool (`None`: Codex's default model).
pub(crate) fn check(policy: &PermissionPolicy, model: Option<&str>) -> Result<(), Unsupported> {
    let refuse = |action, permission| Err(Unsupported::Permission { action, permission });
    if policy.mcp == Permission::Ask {
        return refuse(Action::Mcp, Permission::Ask);
    }
    let patch_tool = model.is_none_or(|m| PATCH_TOOL_MODELS.contains(&m));
    if policy.write != Permission::Deny && policy.commands == Permission::Deny && !patch_tool {
        return Err(Unsupported::PermissionNeeds {
            action: Action::Write,
            permission: policy.write,
            needs: Action::Commands,
        });
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
const ITEM_STARTED: &str = "item/started";

/// From a started `fileChange` item: its id and its changes as a file change's approval
/// shows them, `[{"path", "kind", "move_path"?}]` (the diff is left out).
pub(crate) fn note(method: &str, params: &Value) -> Option<(String, Value)> {
    if method != ITEM_STARTED {
        return None;
    }
    let item = params.get("item")?;
    if item.get("type").and_then(Value::as_str) != Some("fileChange") {
        return None;
    }
    let id = item.get("id").and_then(Value::as_str)?;
    let changes: Vec<Value> = item
        .get("changes")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|change| {
            let path = change.get("path").and_then(Value::as_str)?;
            let kind = change.get("kind")?;
            let name = kind.get("type").or(Some(kind)).and_then(Value::as_str)?;
            let mut shown = json!({"path": path, "kind": name});
            if let Some(to) = kind.get("move_path").and_then(Value::as_str) {
                shown["move_path"] = json!(to);
            }
            Some(shown)
        })
        .collect();
    Some((id.to_owned(), Value::Array(changes)))
}

/// The approval an app-server request asks for. A command is asked about as a command when
/// the policy asks about commands (`untrusted`), else as a write: `on-request` asks only for
/// a command that wants out of the read-only sandbox. A file change's arguments are a JSON
/// text, `{"changes": [{"path", "kind"}…], "reason"?}`, its changes as [`note`] kept them.
pub(crate) fn approval(
    request: &Request,
    method: &str,
    params: &Value,
    notes: &TurnNotes,
) -> Option<ApprovalQuery> {
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
            let item = params.get("itemId").and_then(Value::as_str).unwrap_or("");
            let changes = notes.get(item).cloned().unwrap_or_else(|| json!([]));
            let mut arguments = json!({ "changes": changes });
            if let Some(reason) = params.get("reason").and_then(Value::as_str) {
                arguments["reason"] = json!(reason);
            }
            (Action::Write, "fileChange", arguments.to_string())
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
        let check = |policy: PermissionPolicy| check(&policy, None);
        assert!(check(PermissionPolicy::default()).is_ok());
        assert!(check(PermissionPolicy::allow_all()).is_ok());
        assert!(check(PermissionPolicy::default().ask(Action::Mcp)).is_err());
        assert!(check(PermissionPolicy::default().ask(Action::Network)).is_err());
        assert!(check(PermissionPolicy::default().allow(Action::Network)).is_err());
    }

    /// Issue 40: `ask(Write)` with commands denied never asked on a model without the patch
    /// tool; it is refused, naming what it would take.
    #[test]
    fn writes_without_commands_need_a_model_with_the_patch_tool() {
        let ask = PermissionPolicy::default().ask(Action::Write);
        assert_eq!(
            check(&ask, Some("mock-model")),
            Err(Unsupported::PermissionNeeds {
                action: Action::Write,
                permission: Permission::Ask,
                needs: Action::Commands,
            })
        );
        let message = check(&ask, Some("mock-model")).unwrap_err().to_string();
        assert!(message.contains("commands=allow"), "{message}");
        let allow = PermissionPolicy::default().allow(Action::Write);
        assert!(check(&allow, Some("mock-model")).is_err());
        assert!(check(&ask, Some("gpt-5.5")).is_ok());
        assert!(check(&ask, None).is_ok(), "Codex's default model");
        assert!(check(&ask.allow(Action::Commands), Some("mock-model")).is_ok());
        assert!(check(&ask.ask(Action::Commands), Some("mock-model")).is_ok());
        assert!(check(&PermissionPolicy::default(), Some("mock-model")).is_ok());
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
        let notes = TurnNotes::default();
        let query = approval(&request, COMMAND_APPROVAL, &params, &notes).unwrap();
        assert_eq!(query.action, Action::Write);
        assert_eq!(query.call_id.as_deref(), Some("call_0"));
        assert!(query.arguments.contains("touch x"));
        let file = approval(
            &request,
            FILE_APPROVAL,
            &json!({"itemId": "call_1"}),
            &notes,
        );
        assert_eq!(file.unwrap().action, Action::Write);
        let elicitation = "mcpServer/elicitation/request";
        assert!(approval(&request, elicitation, &params, &notes).is_none());
        assert_eq!(
            answer(&ApprovalDecision::Approve),
            json!({"decision": "accept"})
        );
        assert_eq!(
            answer(&ApprovalDecision::deny("no")),
            json!({"decision": "decline"})
        );
    }

    /// Issue 40: a file change's approval carries the paths and kinds of its item's changes
    /// (the shape of codex 0.169.0's `item/started` `fileChange` item).
    #[test]
    fn a_file_change_approval_carries_its_started_items_changes() {
        let started = json!({"threadId": "t", "turnId": "u", "item": {
            "type": "fileChange", "id": "call_1", "status": "inProgress",
            "changes": [
                {"path": "/w/new.txt", "kind": {"type": "add"}, "diff": "+secret body"},
                {"path": "/w/old.txt", "kind": {"type": "update", "move_path": "/w/moved.txt"},
                 "diff": "@@"},
            ],
        }});
        let (key, value) = note(ITEM_STARTED, &started).unwrap();
        assert_eq!(key, "call_1");
        assert!(note("item/completed", &started).is_none());
        assert!(
            note(
                ITEM_STARTED,
                &json!({"item": {"type": "agentMessage", "id": "m"}})
            )
            .is_none()
        );
        let mut notes = TurnNotes::default();
        notes.insert(key, value);
        let request = Request::new(
            run_service::RunId::new("r"),
            "hi",
            driver_spi::ProfilePayload::new(
                compat_fingerprint::Fingerprint::of(
                    compat_fingerprint::Kind::new("driver-codex 2026-12-05 test v1"),
                    |e| e.str("p"),
                ),
                compat_fingerprint::Fingerprint::of(
                    compat_fingerprint::Kind::new("driver-codex 2026-12-05 test v1"),
                    |e| e.str("p"),
                ),
            ),
        );
        let asked = json!({"itemId": "call_1", "reason": "outside the workspace"});
        let query = approval(&request, FILE_APPROVAL, &asked, &notes).unwrap();
        let arguments: Value = serde_json::from_str(&query.arguments).unwrap();
        assert_eq!(
            arguments,
            json!({"changes": [
                {"path": "/w/new.txt", "kind": "add"},
                {"path": "/w/old.txt", "kind": "update", "move_path": "/w/moved.txt"},
            ], "reason": "outside the workspace"})
        );
        let unknown = approval(&request, FILE_APPROVAL, &json!({"itemId": "x"}), &notes);
        assert_eq!(unknown.unwrap().arguments, r#"{"changes":[]}"#);
    }
}
