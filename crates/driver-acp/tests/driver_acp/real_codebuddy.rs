//! The ACP driver against the real `codebuddy --acp` (2.117.0), fully offline: the test kit's
//! Chat Completions mock (`CODEBUDDY_BASE_URL`) stands in for the model (each step of its
//! script skips CodeBuddy's title-helper requests). Resident processes, a
//! SQLite store, the scenarios of [`real_support`](crate::real_support).
//!
//! Needs `CODEBUDDY_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::time::Instant;

use driver_spi::ApprovalOutcome;
use test_kit::Reply;
use test_kit::chat::MockChat;

use crate::real_support::{self as support, Real};

/// The model key: a canary that must reach only CodeBuddy's environment.
const KEY: &str = "cb-acp-key-canary-8b41e07a";

fn binary(what: &str) -> Option<std::path::PathBuf> {
    test_kit::real_cli::binary("CODEBUDDY_BIN", what)
}

fn real<'a>(
    bin: &'a std::path::Path,
    model: &MockChat,
    requests: &'a (dyn Fn() -> Vec<test_kit::RecordedRequest> + Sync),
) -> Real<'a> {
    Real {
        entry: &driver_acp::CODEBUDDY,
        bin,
        base_url: model.base_url(),
        key: KEY,
        requests,
    }
}

#[test]
fn codebuddy_acp_resumes_a_thread_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = binary("driver-acp restart scenario against the real codebuddy --acp") else {
        return;
    };
    let log = test_kit::restart::trace_log();
    let model = MockChat::start(support::script(support::restart_replies(), true)).unwrap();
    let requests = || model.model_requests();
    let started = Instant::now();
    test_kit::real_cli::block_on(support::restart_scenario(
        &real(&bin, &model, &requests),
        log,
    ));
    for request in model.model_requests() {
        assert_eq!(
            request.bearer(),
            Some(KEY),
            "the key reached codebuddy's env"
        );
    }
    println!("codebuddy restart scenario: {:?}", started.elapsed());
}

/// CodeBuddy asks before running its `Bash` tool (`execute`): approved, the file is written
/// and the turn ends cleanly. Denied (`reject_once`): no file, and CodeBuddy ends the whole
/// turn at once with `stopReason: cancelled` (`codebuddy.ai/outcome: PERMISSION_DENIED`, no
/// further model request), which the driver reports as a failed run (what is asserted below).
#[test]
fn codebuddy_acp_asks_the_host_before_a_command_and_obeys() {
    let Some(bin) = binary("driver-acp approvals against the real codebuddy --acp") else {
        return;
    };
    let (dir, workspace) = support::test_dir();
    let approved = workspace.join("approved.txt");
    let denied = workspace.join("denied.txt");
    let model = MockChat::start(support::script(
        vec![
            Reply::codebuddy_command(format!("printf ok > {}", approved.display())),
            Reply::text("done"),
            Reply::codebuddy_command(format!("printf no > {}", denied.display())),
            Reply::text("done"),
        ],
        true,
    ))
    .unwrap();
    let requests = || model.model_requests();
    let real = real(&bin, &model, &requests);
    let started = Instant::now();
    test_kit::real_cli::block_on(async {
        let driver = real.driver(dir.path(), true);
        support::assert_an_approved_command_runs(&*driver, &workspace, &approved).await;

        let before = model.model_requests().len();
        let (result, events, tickets) = support::approval_run(&*driver, &workspace, false).await;
        // CodeBuddy ends the turn `cancelled` on a rejection (`PERMISSION_DENIED`, no further
        // model request); the driver reports an agent-cancelled turn as a response with a
        // failure (observed: exit code 1, `FailureKind::Other`, "the agent cancelled the
        // turn"), no output and no checkpoint.
        let response = result.expect("a response, with the failure in it");
        let failure = response.failure.as_ref().expect("the denied turn failed");
        assert_eq!(failure.kind, driver_spi::FailureKind::Other, "{failure:?}");
        assert!(failure.message.contains("cancelled"), "{failure:?}");
        assert_eq!(response.output, "");
        assert_eq!(tickets, 1, "one request reached the host");
        assert_eq!(support::outcomes(&events), [ApprovalOutcome::Denied]);
        assert!(!denied.exists(), "denied, yet the file exists");
        assert!(
            model.model_requests()[before..]
                .iter()
                .filter(|r| !support::is_title(r))
                .count()
                <= 1,
            "no model request after the rejection"
        );
        driver
            .process_lifecycle()
            .unwrap()
            .close_processes()
            .await
            .unwrap();
        let left = support::gone(
            dir.path(),
            &support::agent_pids(dir.path()),
            std::time::Duration::from_secs(10),
        )
        .await;
        assert!(left.is_empty(), "close_processes left {left:?}");
    });
    println!("codebuddy approvals: {:?}", started.elapsed());
}

#[test]
fn codebuddy_acp_cancelled_turn_ends_its_process_and_the_thread_goes_on() {
    let Some(bin) = binary("driver-acp cancel against the real codebuddy --acp") else {
        return;
    };
    let model = MockChat::start(support::script(support::cancel_replies(), true)).unwrap();
    let requests = || model.model_requests();
    let started = Instant::now();
    test_kit::real_cli::block_on(support::cancel_scenario(&real(&bin, &model, &requests)));
    println!("codebuddy cancel scenario: {:?}", started.elapsed());
}
