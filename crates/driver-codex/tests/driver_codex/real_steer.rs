//! Steering the real `codex app-server`'s running turn, offline against the test kit's
//! Responses mock ([`test_kit::steer`]): the follow-up goes in as `turn/steer` while the
//! model's command waits, and Codex's next model request of the same turn holds it; one
//! process per turn (`exec`) refuses a follow-up, typed.
//!
//! Needs `CODEX_BIN` (a visible `SKIPPED` locally, a failure under CI).

use test_kit::responses::MockResponses;
use test_kit::steer::{SteerSetup, run_steer_scenario};
use test_kit::{Reply, Script};

#[test]
fn codex_app_server_takes_a_follow_up_into_the_running_turn() {
    let Some(bin) = test_kit::real_cli::binary("CODEX_BIN", "steering the real codex app-server")
    else {
        return;
    };
    let (dir, workspace) = test_kit::approvals::workspace();
    let model = MockResponses::start(Script::new()).unwrap();
    let drivers = crate::real_binary::drivers(dir.path(), &bin, &model);
    test_kit::real_cli::block_on(async {
        run_steer_scenario(&SteerSetup {
            workspace: &workspace,
            resident: drivers(true),
            per_turn: drivers(false),
            command_call: &|cmd| Reply::codex_command(cmd),
            push_reply: &|reply| model.push_reply(reply),
            model_requests: &|| model.model_requests(),
        })
        .await;
    });
}
