//! The ACP driver against the real `gemini --acp` (0.61.0), fully offline: the test kit's
//! Gemini API mock (`GOOGLE_GEMINI_BASE_URL`) stands in for the model. Resident processes, a
//! SQLite store, the scenarios of [`real_support`](crate::real_support).
//!
//! Needs `GEMINI_BIN` (a visible `SKIPPED` locally, a failure under CI).

use std::time::Instant;

use driver_spi::ApprovalOutcome;
use test_kit::Reply;
use test_kit::gemini::MockGemini;

use crate::real_support::{self as support, Real};

/// The model key: a canary that must reach only Gemini's environment.
const KEY: &str = "AIza-acp-gemini-key-canary-5d7e19c4";

fn binary(what: &str) -> Option<std::path::PathBuf> {
    test_kit::real_cli::binary("GEMINI_BIN", what)
}

fn real<'a>(
    bin: &'a std::path::Path,
    model: &MockGemini,
    requests: &'a (dyn Fn() -> Vec<test_kit::RecordedRequest> + Sync),
) -> Real<'a> {
    Real {
        entry: &driver_acp::GEMINI,
        bin,
        base_url: model.base_url(),
        key: KEY,
        requests,
    }
}

#[test]
fn gemini_acp_resumes_a_thread_across_a_host_restart_and_keeps_secrets_out() {
    let Some(bin) = binary("driver-acp restart scenario against the real gemini --acp") else {
        return;
    };
    let log = test_kit::restart::trace_log();
    let model = MockGemini::start(support::script(support::restart_replies(), false)).unwrap();
    let requests = || model.model_requests();
    let started = Instant::now();
    test_kit::real_cli::block_on(support::restart_scenario(
        &real(&bin, &model, &requests),
        log,
    ));
    for request in model.model_requests() {
        assert_eq!(request.bearer(), Some(KEY), "the key reached gemini's env");
    }
    println!("gemini restart scenario: {:?}", started.elapsed());
}

/// Gemini asks before running its shell tool (`execute`): approved, the file is written and
/// the turn ends cleanly; denied (`reject_once`), no file, and Gemini goes on to the model
/// and ends the turn normally (`end_turn`).
#[test]
fn gemini_acp_asks_the_host_before_a_command_and_obeys() {
    let Some(bin) = binary("driver-acp approvals against the real gemini --acp") else {
        return;
    };
    let (dir, workspace) = support::test_dir();
    let approved = workspace.join("approved.txt");
    let denied = workspace.join("denied.txt");
    let model = MockGemini::start(support::script(
        vec![
            Reply::gemini_command(format!("printf ok > {}", approved.display())),
            Reply::text("done"),
            Reply::gemini_command(format!("printf no > {}", denied.display())),
            Reply::text("done"),
        ],
        false,
    ))
    .unwrap();
    let requests = || model.model_requests();
    let real = real(&bin, &model, &requests);
    let started = Instant::now();
    test_kit::real_cli::block_on(async {
        let driver = real.driver(dir.path(), true);
        support::assert_an_approved_command_runs(&*driver, &workspace, &approved).await;

        let (result, events, tickets) = support::approval_run(&*driver, &workspace, false).await;
        let response = result.unwrap();
        assert!(response.is_clean(), "{:?}", response.failure);
        assert_eq!(
            response.output, "done",
            "Gemini went on after the rejection"
        );
        assert_eq!(tickets, 1, "one request reached the host");
        assert_eq!(support::outcomes(&events), [ApprovalOutcome::Denied]);
        assert!(!denied.exists(), "denied, yet the file exists");
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
    println!("gemini approvals: {:?}", started.elapsed());
}

#[test]
fn gemini_acp_cancelled_turn_ends_its_process_and_the_thread_goes_on() {
    let Some(bin) = binary("driver-acp cancel against the real gemini --acp") else {
        return;
    };
    let model = MockGemini::start(support::script(support::cancel_replies(), false)).unwrap();
    let requests = || model.model_requests();
    let started = Instant::now();
    test_kit::real_cli::block_on(support::cancel_scenario(&real(&bin, &model, &requests)));
    println!("gemini cancel scenario: {:?}", started.elapsed());
}

/// The workspace's shared restart scenario ([`test_kit::restart`]) as the headless drivers
/// run it: the model makes Gemini call the hosted `ping` tool over MCP (`session/new` and
/// `session/load` carry the server, its bearer only on the wire), host 2's call reaches host
/// 2's server (its gate admits only the new token), host 3's new tool revision is refused
/// before the driver runs, and the canary scan. Under the agent's default policy the request's
/// MCP tools are allowed, so Gemini's permission request for `ping` is answered without the
/// host.
#[test]
fn gemini_acp_runs_the_shared_restart_scenario_with_a_hosted_tool_call() {
    use test_kit::restart::{self, Secrets, Setup};
    let Some(bin) = binary("driver-acp shared restart scenario against the real gemini --acp")
    else {
        return;
    };
    let log = restart::trace_log();
    let dir = tempfile::tempdir().unwrap();
    let model = MockGemini::start(restart::script()).unwrap();
    let requests = || model.model_requests();
    let real = real(&bin, &model, &requests);
    let started = Instant::now();
    test_kit::real_cli::block_on(async {
        restart::run_scenario(Setup {
            dir: dir.path(),
            // Host 2 comes right after host 1's turn, within the minute: the driver's own
            // Gemini load wait keeps the conversation.
            driver: &|_label| real.driver(dir.path(), true),
            model_requests: &requests,
            argv_marker: support::ACP_ARGV,
            secrets: Secrets::new([KEY.to_owned()]),
            log,
            call_ids: restart::CallIds::NotPassed,
        })
        .await;
    });
    println!("gemini shared restart scenario: {:?}", started.elapsed());
}
