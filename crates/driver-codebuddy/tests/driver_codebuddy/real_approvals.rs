//! The real `codebuddy` under the request's permission policy, offline against the test kit's
//! Chat Completions mock ([`test_kit::approvals`]): the mock model writes a file with
//! CodeBuddy's `Write` tool; a policy that asks gets CodeBuddy's `can_use_tool` request on a
//! stream-json stdin, in per-turn mode (a one-turn process) and resident mode: denied, no file
//! (the model reads CodeBuddy's own refusal: it does not pass the host's reason on); approved,
//! the file. Writes allowed (`acceptEdits`): the file, no request. The default policy
//! (`dontAsk`): no request, no file.
//!
//! Needs `CODEBUDDY_BIN` (a visible `SKIPPED` locally, a failure under CI).

use driver_spi::{Action, PermissionPolicy};
use test_kit::Script;
use test_kit::approvals::{self, ApprovalSetup, run_approval_scenario};
use test_kit::chat::MockChat;

/// What CodeBuddy 2.117.0 tells the model when a tool use is refused, whatever the reason.
const CODEBUDDY_REFUSAL: &str = "doesn't want to proceed";

#[test]
fn codebuddy_asks_the_host_before_writing_and_obeys_the_policy() {
    let Some(bin) =
        test_kit::real_cli::binary("CODEBUDDY_BIN", "approvals against the real codebuddy")
    else {
        return;
    };
    let (dir, workspace) = approvals::workspace();
    let model = MockChat::start(Script::new()).unwrap();
    let setup = ApprovalSetup {
        workspace: &workspace,
        driver: &crate::real_binary::drivers(dir.path(), &bin, &model),
        write_call: &approvals::write_tool,
        push_reply: &|reply| model.push_reply(reply),
        model_requests: &|| model.model_requests(),
        ask: PermissionPolicy::default().ask(Action::Write),
        allow: PermissionPolicy::default().allow(Action::Write),
        forbid: PermissionPolicy::default(),
        denial_seen: CODEBUDDY_REFUSAL,
        ask_modes: &[false, true],
    };
    test_kit::real_cli::block_on(run_approval_scenario(&setup));
}
