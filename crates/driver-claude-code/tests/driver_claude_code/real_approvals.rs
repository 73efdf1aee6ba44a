//! The real `claude` under the request's permission policy, offline against the test kit's
//! Anthropic mock ([`test_kit::approvals`]): the mock model writes a file with Claude Code's
//! `Write` tool; a policy that asks sends Claude Code's `can_use_tool` request to the host
//! (`--permission-prompt-tool stdio` on a stream-json stdin), in per-turn mode (a one-turn
//! process) and resident mode: denied, no file and the model reads the host's reason;
//! approved, the file. Writes allowed (`acceptEdits`): the file, no request. The default
//! policy (`dontAsk`): no request, no file.
//!
//! Needs `CLAUDE_BIN` (a visible `SKIPPED` locally, a failure under CI).

use driver_spi::{Action, PermissionPolicy};
use test_kit::Script;
use test_kit::anthropic::MockAnthropic;
use test_kit::approvals::{self, ApprovalSetup, run_approval_scenario};

#[test]
fn claude_asks_the_host_before_writing_and_obeys_the_policy() {
    let Some(bin) = test_kit::real_cli::binary("CLAUDE_BIN", "approvals against the real claude")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockAnthropic::start(Script::new()).unwrap();
    let setup = ApprovalSetup {
        workspace: &workspace,
        driver: &crate::real_binary::drivers(dir.path(), &bin, &model),
        write_call: &approvals::write_tool,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        ask: PermissionPolicy::default().ask(Action::Write),
        allow: PermissionPolicy::default().allow(Action::Write),
        forbid: PermissionPolicy::default(),
        denial_seen: // Claude Code hands the host's reason to the model as the tool's error.
        approvals::DENY_REASON,
        ask_modes: &[false, true],
    };
    test_kit::real_cli::block_on(run_approval_scenario(&setup));
}
