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
