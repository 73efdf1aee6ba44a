//! Steering the real resident `claude`'s running turn, offline against the test kit's
//! Anthropic mock ([`test_kit::steer`]): the follow-up goes in as another `user` line while
//! the model's `Bash` command waits, and Claude Code's next model request of the same turn
//! holds it ("The user sent a new message while you were working"); one process per turn
//! refuses a follow-up, typed.
//!
//! Needs `CLAUDE_BIN` (a visible `SKIPPED` locally, a failure under CI).

use test_kit::anthropic::MockAnthropic;
use test_kit::steer::{SteerSetup, run_steer_scenario};
use test_kit::{Reply, Script};

#[test]
fn claude_resident_takes_a_follow_up_into_the_running_turn() {
    let Some(bin) = test_kit::real_cli::binary("CLAUDE_BIN", "steering the real resident claude")
    else {
        return;
    };
    let (dir, workspace) = test_kit::approvals::workspace();
    let model = MockAnthropic::start(Script::new()).unwrap();
    let drivers = crate::real_binary::drivers(dir.path(), &bin, &model);
    test_kit::real_cli::block_on(async {
        run_steer_scenario(&SteerSetup {
            workspace: &workspace,
            resident: drivers(true),
            per_turn: drivers(false),
            command_call: &|cmd| Reply::claude_command(cmd),
            push_reply: &|reply| model.push_reply(reply),
            model_requests: &|| model.model_requests(),
        })
        .await;
    });
}

/// A follow-up written while the model writes its last answer comes too late for the
/// running CLI turn: Claude Code runs it as a turn of its own right after. The driver keeps
/// the Thread's turn open until that one ended too (it waits for the CLI's echo of the
/// follow-up), so the run answers both, persists once, and the next turn on the same
/// process reads only its own answer.
#[test]
fn claude_resident_keeps_the_turn_open_for_a_follow_up_it_runs_next() {
    use std::sync::Arc;
    use std::time::Duration;

    use agent::{Agent, ThreadEventKind};
    use thread_store::memory::MemoryStore;

    let Some(bin) = test_kit::real_cli::binary("CLAUDE_BIN", "steering the real resident claude")
    else {
        return;
    };
    let (dir, workspace) = test_kit::approvals::workspace();
    let script = Script::new()
        .then(Reply::text("first answer").delayed(Duration::from_secs(3)))
        .then(Reply::text("answer to the follow-up"))
        .then(Reply::text("next turn's answer"));
    let model = MockAnthropic::start(script).unwrap();
    let drivers = crate::real_binary::drivers(dir.path(), &bin, &model);
    test_kit::real_cli::block_on(async {
        let agent = Agent::builder(drivers(true))
            .store(Arc::new(MemoryStore::new()))
            .workspace(workspace.to_string_lossy())
            .build()
            .unwrap();
        let thread = agent.thread("late");
        let stream = thread.stream("Answer slowly.").unwrap();
        let models = || {
            model
                .model_requests()
                .into_iter()
                .filter(test_kit::RecordedRequest::is_model_request)
                .collect::<Vec<_>>()
        };
        // The model is writing its answer (the mock holds it back).
        while models().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        thread
            .steer("One more thing.", Duration::from_secs(30))
            .await
            .unwrap();
        let result = stream.result().await.unwrap();
        assert_eq!(result.output, "answer to the follow-up");
        let requests = models();
        assert_eq!(requests.len(), 2, "the follow-up got its model request");
        assert_eq!(
            requests[1].last_user_text().as_deref(),
            Some("One more thing.")
        );
        let follow_ups = result
            .events
            .iter()
            .filter(|e| matches!(e.kind, ThreadEventKind::FollowUp { .. }))
            .count();
        assert_eq!(follow_ups, 1);
        assert!(result.record_id.is_some());

        let next = thread.run("And now?").await.unwrap();
        assert_eq!(next.output, "next turn's answer");
        assert_eq!(models().len(), 3);
        agent.close().await;
    });
}
