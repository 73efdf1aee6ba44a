//! The real `codex` under the request's permission policy, offline against the test kit's
//! Responses mock ([`test_kit::approvals`]): the mock model writes a file with a patch
//! (`apply_patch` through Codex's `exec_command` tool, which Codex applies as a file change).
//! A policy that asks about writes (approval `on-request`, read-only sandbox) sends Codex's
//! `item/fileChange/requestApproval` to the host, on a one-turn app-server in per-turn mode
//! (`exec` cannot ask) and on the resident one: declined, no file and the model reads Codex's
//! "patch rejected by user" (a decline carries no reason); accepted, the file. Writes allowed
//! (`never`, workspace-write sandbox): the file, no request. The default policy (no command
//! tool at all): no request, no file.
//!
//! Needs `CODEX_BIN` (a visible `SKIPPED` locally, a failure under CI).

use driver_cli::{PoolLimits, ProcessMode};
use driver_spi::{Action, PermissionPolicy};
use test_kit::approvals::{self, ApprovalSetup, run_approval_scenario};
use test_kit::responses::MockResponses;
use test_kit::{Reply, Script};

/// What Codex 0.169.0 tells the model when the host declines a patch.
const CODEX_REFUSAL: &str = "patch rejected by user";

/// The model's patch that adds the file (relative to the workspace, Codex's cwd).
fn patch(path: &std::path::Path) -> Reply {
    let name = path.file_name().unwrap().to_string_lossy();
    let cmd = format!(
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {name}\n+written by the model\n*** End Patch\nEOF\n"
    );
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
    let setup = ApprovalSetup {
        workspace: &workspace,
        driver: &|resident| {
            let mode = match resident {
                true => ProcessMode::Resident(PoolLimits::default()),
                false => ProcessMode::PerTurn,
            };
            std::sync::Arc::new(crate::real_binary::driver_with(
                dir.path(),
                &bin,
                &model,
                mode,
            ))
        },
        write_call: &patch,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        ask: PermissionPolicy::default()
            .allow(Action::Commands)
            .ask(Action::Write),
        allow: PermissionPolicy::default()
            .allow(Action::Commands)
            .allow(Action::Write),
        forbid: PermissionPolicy::default(),
        denial_seen: CODEX_REFUSAL,
        ask_modes: &[false, true],
    };
    approvals::block_on(run_approval_scenario(&setup));
}
