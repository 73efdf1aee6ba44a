//! The real `codex` under the request's permission policy, offline against the test kit's
//! Responses mock ([`test_kit::approvals`]), on a one-turn app-server in per-turn mode (`exec`
//! cannot ask) and on the resident one. Two ways the model writes a file, each run through the
//! whole scenario (denied: no file and the model reads Codex's "rejected by user", since a
//! decline carries no reason; approved: the file; allowed: no request; the default policy,
//! which has no command tool at all: no request, no file):
//! - a patch (`apply_patch` through `exec_command`, which Codex applies as a file change)
//!   under a policy that asks about writes (`on-request`, read-only sandbox): Codex's
//!   `item/fileChange/requestApproval`;
//! - a command (`touch`) under a policy that asks about commands (a thread opened
//!   `untrusted`): Codex's `item/commandExecution/requestApproval`.
//!
//! Needs `CODEX_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::path::Path;
use std::sync::Arc;

use driver_spi::{Action, PermissionPolicy};
use test_kit::approvals::{self, ApprovalSetup, run_approval_scenario};
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};

/// What Codex 0.169.0 tells the model when the host declines a patch ("patch rejected by
/// user") or a command ("… Rejected(\"rejected by user\")").
const CODEX_REFUSAL: &str = "rejected by user";

/// The model's patch that adds the file (relative to the workspace, Codex's cwd).
fn patch(path: &Path) -> Reply {
    let name = path.file_name().unwrap().to_string_lossy();
    let cmd = format!(
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {name}\n+written by the model\n*** End Patch\nEOF\n"
    );
    Reply::builtin_call("exec_command", serde_json::json!({ "cmd": cmd }))
}

/// The model's command that creates the file.
fn touch(path: &Path) -> Reply {
    let cmd = format!("touch '{}'", path.display());
    Reply::builtin_call("exec_command", serde_json::json!({ "cmd": cmd }))
}

#[test]
fn codex_asks_the_host_before_writing_and_obeys_the_policy() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "approvals against the real codex")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver = crate::real_binary::drivers(dir.path(), &bin, &model);
    let everything = PermissionPolicy::default()
        .allow(Action::Commands)
        .allow(Action::Write);
    let patches = ApprovalSetup {
        workspace: &workspace,
        driver: &driver,
        write_call: &patch,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        ask: everything.ask(Action::Write),
        allow: everything,
        forbid: PermissionPolicy::default(),
        denial_seen: CODEX_REFUSAL,
        ask_modes: &[false, true],
    };
    let commands = ApprovalSetup {
        write_call: &touch,
        ask: everything.ask(Action::Commands),
        ..patches
    };
    test_kit::real_cli::block_on(async {
        run_approval_scenario(&patches).await;
        run_approval_scenario(&commands).await;
    });
}

/// Issue 37, fault 1: a resident app-server launched for a Thread under `write=ask,
/// commands=allow` has the same command line as one under `commands=ask`, and Codex learns
/// `untrusted` only when a thread is opened. A host that calls the driver directly on the
/// resumed conversation under `commands=ask` must still be asked before the command runs:
/// the process is recycled and the thread reopened `untrusted`, not reused as loaded. The
/// command runs in the read-only sandbox (it only prints), so on the old process it would run
/// without asking and the model would read its output.
#[test]
fn a_policy_change_between_turns_is_not_served_by_the_old_process() {
    use cli_test_kit::{checkpoint, run};
    use driver_cli::ProcessMode;
    use driver_process::pool::PoolLimits;
    use driver_spi::{
        ApprovalTicket, Approvals, DriverEvent, ProcessLifecycle as _, ProfilePayload, Request,
        SessionContext,
    };
    use run_service::RunId;

    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "a policy change on a resident codex")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let driver = crate::real_binary::driver_with(
        dir.path(),
        &bin,
        &model,
        ProcessMode::Resident(PoolLimits::default()),
    );
    let profile = ProfilePayload::new(
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("driver-codex policy change v1"),
            |e| e.str("exact"),
        ),
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("driver-codex policy change v1"),
            |e| e.str("session"),
        ),
    );
    let writes_ask = PermissionPolicy::default()
        .allow(Action::Commands)
        .ask(Action::Write);
    let commands_ask = writes_ask.ask(Action::Commands);
    // `$((…))` keeps it off Codex's list of known-safe commands, which `untrusted` runs.
    let command = Reply::builtin_call(
        "exec_command",
        serde_json::json!({ "cmd": "echo policy-canary-$((6*7))" }),
    );
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let deny = Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        seen.lock().unwrap().push(ticket.request().action);
        let _ = ticket.deny(approvals::DENY_REASON);
    }));
    test_kit::real_cli::block_on(async {
        model.push_reply(Reply::text("first answer"));
        let first = Request::new(RunId::new("policy-1"), "hello", profile)
            .with_session(SessionContext::start())
            .with_workspace(workspace.to_string_lossy())
            .with_permissions(writes_ask)
            .with_approvals(deny.clone());
        let (first, _) = run(&driver, first).await;
        let state = checkpoint(&first.unwrap());

        model.push_reply(command);
        model.push_reply(Reply::text("done"));
        let second = Request::new(RunId::new("policy-2"), "touch the file", profile)
            .with_session(SessionContext::continue_only(state))
            .with_workspace(workspace.to_string_lossy())
            .with_permissions(commands_ask)
            .with_approvals(deny);
        let (second, events) = run(&driver, second).await;
        assert!(second.unwrap().is_clean());
        let requested: Vec<Action> = events
            .iter()
            .filter_map(|e| match e {
                DriverEvent::ApprovalRequested { action, .. } => Some(*action),
                _ => None,
            })
            .collect();
        assert_eq!(requested, [Action::Commands], "{events:?}");
        assert_eq!(*asked.lock().unwrap(), [Action::Commands]);
        let outputs: Vec<String> = model
            .model_requests()
            .iter()
            .flat_map(|r| r.function_call_outputs())
            .map(|o| o.output)
            .collect();
        assert!(
            !outputs.iter().any(|o| o.contains("policy-canary-42")),
            "the denied command ran: {outputs:?}"
        );
        let stats = driver.pool_stats().unwrap();
        assert_eq!((stats.started, stats.recycled), (2, 1), "{stats:?}");
        driver.close_processes().await.unwrap();
    });
}
