//! Issue 40: a policy that asks about writes asks on the real `codex`, and the host sees
//! what it is asked about, offline against the test kit's Responses mock.
//!
//! - With commands denied, Codex's only write tool is `apply_patch`, which codex 0.169.0
//!   offers only for a model of its own catalog (`apply_patch_tool_type` in the model's
//!   metadata; the mock's `mock-model` has none): under `ask(Write)` alone, a catalog model's
//!   patch is asked about, a denial stops it and an approval writes the file (per turn and
//!   resident), and a model Codex does not know is refused
//!   before launch, naming the permission that would give it a tool to write with.
//! - A file change's approval carries its paths and kinds (Codex's
//!   `item/fileChange/requestApproval` has none; they come from the `fileChange` item started
//!   before it).
//!
//! Needs `CODEX_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::path::Path;
use std::sync::{Arc, Mutex};

use cli_test_kit::run;
use driver_spi::ProcessLifecycle as _;
use driver_spi::{
    Action, ApprovalRequest, ApprovalTicket, Approvals, DriverError, DriverEvent, Permission,
    PermissionPolicy, ProfilePayload, Request, SessionContext, Unsupported,
};
use run_service::RunId;
use test_kit::approvals;
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};

/// A model of codex 0.169.0's bundled catalog, whose metadata gives it the `apply_patch` tool.
const CATALOG_MODEL: &str = "gpt-5.5";

fn profile() -> ProfilePayload {
    let kind = compat_fingerprint::Kind::new("driver-codex policy issue-40 v1");
    let fp = |s: &str| compat_fingerprint::Fingerprint::of(kind, |e| e.str(s));
    ProfilePayload::new(fp("exact"), fp("session"))
}

/// The model's freeform `apply_patch` call adding `name` (the form a catalog model's tool
/// takes: a `custom_tool_call` whose input is the patch).
fn freeform_patch(name: &str) -> Reply {
    let patch =
        format!("*** Begin Patch\n*** Add File: {name}\n+written by the model\n*** End Patch\n");
    let item = serde_json::json!({
        "type": "custom_tool_call", "id": "ctc_0", "call_id": "call_patch",
        "name": "apply_patch", "input": patch, "status": "completed",
    });
    let events = [
        serde_json::json!({"type": "response.created", "response": {"id": "resp_patch"}}),
        serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        serde_json::json!({"type": "response.completed", "response": {"id": "resp_patch",
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    Reply::raw(200, "text/event-stream", body)
}

/// The model's patch through `exec_command` (the command tool), which Codex applies as a file
/// change.
fn command_patch(name: &str) -> Reply {
    let cmd = format!(
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {name}\n+written by the model\n*** End Patch\nEOF\n"
    );
    Reply::builtin_call("exec_command", serde_json::json!({ "cmd": cmd }))
}

/// A host that records every request and denies it.
fn denying(seen: &Arc<Mutex<Vec<ApprovalRequest>>>) -> Approvals {
    let seen = seen.clone();
    Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        seen.lock().unwrap().push(ticket.request().clone());
        let _ = ticket.deny(approvals::DENY_REASON);
    }))
}

fn asked(events: &[DriverEvent]) -> Vec<(Action, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            DriverEvent::ApprovalRequested {
                action,
                tool,
                arguments,
                ..
            } => Some((*action, tool.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_policy_that_asks_about_writes_asks_without_the_command_tool() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "ask(Write) against the real codex")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let policy = PermissionPolicy::default().ask(Action::Write);
    test_kit::real_cli::block_on(async {
        for resident in [false, true] {
            let driver = crate::real_binary::driver_with(
                dir.path(),
                &bin,
                &model,
                cli_test_kit::process_mode(resident),
            );
            // Denied: asked once with the path, and nothing written.
            let name = format!("asked-{resident}.txt");
            let seen = Arc::new(Mutex::new(Vec::new()));
            let before = model.model_requests().len();
            model.push_reply(freeform_patch(&name));
            model.push_reply(Reply::text("done"));
            let request = Request::new(RunId::new("policy-ask-write"), "write it", profile())
                .with_session(SessionContext::start())
                .with_workspace(workspace.to_string_lossy())
                .with_model(CATALOG_MODEL)
                .with_permissions(policy)
                .with_approvals(denying(&seen));
            let (response, events) = run(&driver, request).await;
            assert!(response.unwrap().is_clean(), "{events:?}");
            let asked = asked(&events);
            assert_eq!(
                asked.len(),
                1,
                "resident={resident}: one request: {events:?}"
            );
            assert_eq!(asked[0].0, Action::Write);
            assert!(asked[0].2.contains(&name), "the path: {asked:?}");
            assert_eq!(seen.lock().unwrap().len(), 1, "the handler was asked");
            assert!(!workspace.join(&name).exists(), "the denial stopped it");
            let requests = model.model_requests();
            let tools = requests[before].body()["tools"].to_string();
            assert!(tools.contains("apply_patch"), "the write tool: {tools}");
            assert!(!tools.contains("exec_command"), "no command tool: {tools}");
            assert!(
                requests[before + 1].body()["input"]
                    .to_string()
                    .contains("rejected"),
                "the model read the refusal"
            );

            // Approved: the same tool writes the file.
            model.push_reply(freeform_patch(&name));
            model.push_reply(Reply::text("done"));
            let request = Request::new(RunId::new("policy-ask-write-2"), "write it", profile())
                .with_session(SessionContext::start())
                .with_workspace(workspace.to_string_lossy())
                .with_model(CATALOG_MODEL)
                .with_permissions(policy)
                .with_approvals(Approvals::approve_all());
            let (response, events) = run(&driver, request).await;
            assert!(response.unwrap().is_clean(), "{events:?}");
            assert!(
                workspace.join(&name).exists(),
                "resident={resident}: approved"
            );
            driver.close_processes().await.unwrap();
        }
    });
}

#[test]
fn a_policy_that_asks_about_writes_on_a_model_without_the_patch_tool_is_refused() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "ask(Write) refused before launch")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver =
        crate::real_binary::driver_with(dir.path(), &bin, &model, driver_cli::ProcessMode::PerTurn);
    test_kit::real_cli::block_on(async {
        let request = Request::new(RunId::new("policy-refused"), "write", profile())
            .with_session(SessionContext::start())
            .with_workspace(workspace.to_string_lossy())
            .with_permissions(PermissionPolicy::default().ask(Action::Write))
            .with_approvals(Approvals::deny_all("no"));
        let (response, _) = run(&driver, request).await;
        match response {
            Err(DriverError::Unsupported(Unsupported::PermissionNeeds {
                action: Action::Write,
                permission: Permission::Ask,
                needs: Action::Commands,
            })) => {}
            other => panic!("not refused before launch: {other:?}"),
        }
        assert!(model.model_requests().is_empty(), "nothing was launched");
    });
}

#[test]
fn a_file_change_approval_names_its_paths() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "file-change approval paths") else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver =
        crate::real_binary::driver_with(dir.path(), &bin, &model, driver_cli::ProcessMode::PerTurn);
    let policy = PermissionPolicy::default()
        .allow(Action::Commands)
        .ask(Action::Write);
    let seen = Arc::new(Mutex::new(Vec::new()));
    test_kit::real_cli::block_on(async {
        model.push_reply(command_patch("named.txt"));
        model.push_reply(Reply::text("done"));
        let request = Request::new(RunId::new("policy-paths"), "write named.txt", profile())
            .with_session(SessionContext::start())
            .with_workspace(workspace.to_string_lossy())
            .with_permissions(policy)
            .with_approvals(denying(&seen));
        let (response, events) = run(&driver, request).await;
        assert!(response.unwrap().is_clean(), "{events:?}");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{events:?}");
        let asked = &seen[0];
        assert_eq!(
            (asked.action, asked.tool.as_str()),
            (Action::Write, "fileChange")
        );
        let arguments: serde_json::Value = serde_json::from_str(&asked.arguments)
            .unwrap_or_else(|e| panic!("JSON arguments ({e}): {:?}", asked.arguments));
        let change = &arguments["changes"][0];
        assert_eq!(change["kind"], "add", "{arguments}");
        let path = Path::new(change["path"].as_str().unwrap());
        assert_eq!(path.file_name().unwrap(), "named.txt", "{arguments}");
        assert!(!workspace.join("named.txt").exists());
    });
}

/// The binary's facts the refusal rests on, pinned: with the command tool off, a catalog
/// model is offered `apply_patch` and the mock's `mock-model` no write tool at all. When a
/// Codex release offers every model the patch tool, this fails: the refusal
/// (`PATCH_TOOL_MODELS`) can go.
#[test]
fn without_commands_only_a_catalog_model_has_a_write_tool() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "codex's write tools by model") else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver =
        crate::real_binary::driver_with(dir.path(), &bin, &model, driver_cli::ProcessMode::PerTurn);
    test_kit::real_cli::block_on(async {
        for (name, patch_tool) in [(None, false), (Some(CATALOG_MODEL), true)] {
            let before = model.model_requests().len();
            model.push_reply(Reply::text("done"));
            let mut request = Request::new(RunId::new("policy-tools"), "hi", profile())
                .with_session(SessionContext::start())
                .with_workspace(workspace.to_string_lossy());
            if let Some(name) = name {
                request = request.with_model(name);
            }
            let (response, _) = run(&driver, request).await;
            assert!(response.unwrap().is_clean());
            let tools = model.model_requests()[before].body()["tools"].to_string();
            assert_eq!(
                tools.contains("apply_patch"),
                patch_tool,
                "{name:?}: {tools}"
            );
            assert!(!tools.contains("exec_command"), "{name:?}: {tools}");
        }
    });
}
