//! The resident stream-json loop (shared by Claude Code and CodeBuddy through
//! `driver_stream_json::Resident`) against the scripted fake: several turns on one process,
//! a crash mid-turn (no replay), malformed and unknown lines, cancellation by `interrupt`.

use std::sync::Arc;
use std::time::Duration;

use cli_test_kit::stream_json::{USER_LINE, resident};
use cli_test_kit::{checkpoint, failed_kind, run};
use driver_claude_code::{ClaudeCodeDriver, CommonOptions};
use driver_cli::ProcessMode;
use driver_process::pool::PoolLimits;
use driver_spi::{
    CollectingSink, Driver, DriverEvent, FailureKind, ProcessLifecycle as _, Request,
    SessionContext, SessionState, check_sequence,
};
use fake_cli::{LineRule, is_running, read_served_lines};

use crate::support::{FakeClaude, fake_claude};

struct Fake {
    claude: FakeClaude,
    served: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Fake {
    fn new(extra: &[LineRule]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let served = dir.path().join("served.jsonl");
        let claude = fake_claude(resident(extra).serve_record(&served), &[]);
        Self {
            claude,
            served,
            _dir: dir,
        }
    }

    fn driver(&self) -> ClaudeCodeDriver {
        self.claude.driver(
            self.claude
                .options()
                .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
        )
    }

    fn count(&self, needle: &str) -> usize {
        read_served_lines(&self.served)
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    fn request(&self, prompt: &str) -> Request {
        // One required MCP server: its `--mcp-config` file belongs to the process.
        crate::fake_cli::request(
            prompt,
            "http://127.0.0.1:4101/mcp",
            "UI_TOKEN",
            &self.claude,
        )
    }
}

fn resume(request: Request, state: &SessionState) -> Request {
    request.with_session(SessionContext::continue_only(state.clone()))
}

/// The pid a turn's answer names (`pid N turn M`).
fn pid_of(output: &str) -> u32 {
    output.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn several_turns_run_on_one_process() {
    let fake = Fake::new(&[]);
    let driver = fake.driver();
    let (first, events) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    let pid = pid_of(&first.output);
    let state = checkpoint(&first);
    for prompt in ["two", "three"] {
        let (next, events) = run(&driver, resume(fake.request(prompt), &state)).await;
        let next = next.unwrap();
        assert_eq!(check_sequence(&events), Ok(()));
        assert_eq!(pid_of(&next.output), pid);
        assert_eq!(checkpoint(&next).resume_id, state.resume_id);
    }
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.reused), (1, 2));
    let calls = fake.claude.invocations();
    assert_eq!(calls.len(), 1, "one process");
    let argv = &calls[0].argv;
    assert!(
        argv.windows(2)
            .any(|w| w == ["--input-format", "stream-json"])
    );
    assert!(
        argv.windows(2)
            .any(|w| w[0] == "--session-id" && w[1] == state.resume_id)
    );
    assert_eq!(fake.count(USER_LINE), 3, "one message per turn");
    driver.close_processes().await.unwrap();
    assert!(!is_running(pid));
}

#[tokio::test]
async fn a_crash_mid_turn_is_not_replayed_and_the_next_turn_resumes() {
    let crash = LineRule::when([USER_LINE, "crash"]).kill_self();
    let fake = Fake::new(&[crash]);
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    let (crashed, _) = run(&driver, resume(fake.request("crash"), &state)).await;
    assert_eq!(failed_kind(&crashed), Some(FailureKind::Process));
    let (next, _) = run(&driver, resume(fake.request("after"), &state)).await;
    assert_eq!(checkpoint(&next.unwrap()).resume_id, state.resume_id);
    assert_eq!(fake.count("crash"), 1, "no replay");
    let calls = fake.claude.invocations();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1]
            .argv
            .windows(2)
            .any(|w| w[0] == "--resume" && w[1] == state.resume_id)
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn malformed_and_unknown_lines_do_not_break_a_turn() {
    let noise = LineRule::when([USER_LINE, "noisy"])
        .stdout("this is not json")
        .stdout(r#"{"type":"rate_limit_event","whatever":1}"#)
        .stdout(r#"{"no_type":true}"#);
    // The noise rule runs first, then nothing: fold a clean turn into it.
    let noisy = cli_test_kit::stream_json::turn(noise, "${ARG_AFTER:--session-id}");
    let fake = Fake::new(&[noisy]);
    let driver = fake.driver();
    let (result, events) = run(&driver, fake.request("noisy")).await;
    result.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_turn_sends_interrupt_then_ends_the_process() {
    // The turn starts and never ends; the interrupt goes unanswered, so the process is ended
    // after the kill grace.
    let stall = LineRule::when([USER_LINE, "stall"]).stdout(
        r#"{"type":"system","subtype":"init","session_id":"${ARG_AFTER:--session-id}","mcp_servers":[{"name":"agent-ui","status":"connected"}]}"#,
    );
    let fake = Fake::new(&[stall]);
    let driver = Arc::new(fake.driver());
    let sink = Arc::new(CollectingSink::new());
    let running = {
        let (driver, sink) = (Arc::clone(&driver), sink.clone());
        let request = fake.request("stall");
        tokio::spawn(async move { driver.run(request, sink).await })
    };
    for _ in 0..400 {
        if sink.events().contains(&DriverEvent::RunStarted) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sink.events().contains(&DriverEvent::RunStarted));
    running.abort();
    let _ = running.await;
    driver.close_processes().await.unwrap();
    assert_eq!(fake.count(r#""subtype":"interrupt""#), 1, "interrupted");
    let pid = fake.claude.invocations()[0].pid;
    assert!(!is_running(pid));
}

#[tokio::test]
async fn a_required_server_not_connected_at_init_stops_the_turn() {
    let down = LineRule::when([USER_LINE, "down"]).stdout(
        r#"{"type":"system","subtype":"init","session_id":"${ARG_AFTER:--session-id}","mcp_servers":[{"name":"agent-ui","status":"failed"}]}"#,
    );
    let fake = Fake::new(&[down]);
    let driver = fake.driver();
    let (result, events) = run(&driver, fake.request("down")).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::McpUnavailable));
    assert!(events.is_empty(), "nothing emitted from the stopped batch");
    assert_eq!(
        driver.pool_stats().unwrap().idle,
        0,
        "the process was ended"
    );
}

#[tokio::test]
async fn a_very_long_prompt_does_not_deadlock() {
    let fake = Fake::new(&[]);
    let driver = fake.driver();
    let prompt = "x".repeat(4 << 20);
    let (result, _) = run(&driver, fake.request(&prompt)).await;
    result.unwrap();
    assert_eq!(fake.count(USER_LINE), 1);
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_thread_moves_between_resident_and_per_turn_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = resident(&[]).serve_record(dir.path().join("served.jsonl"));
    scenario.rules.extend(crate::support::claude_like().rules);
    let claude = fake_claude(scenario, &[]);
    let resident_driver = claude.driver(
        claude
            .options()
            .with_process_mode(ProcessMode::Resident(PoolLimits::default())),
    );
    let per_turn = claude.driver(claude.options());
    let request =
        |p: &str| crate::fake_cli::request(p, "http://127.0.0.1:4101/mcp", "UI_TOKEN", &claude);
    // Started resident, continued per turn, then resident again: one session throughout.
    let (first, _) = run(&resident_driver, request("one")).await;
    let state = checkpoint(&first.unwrap());
    resident_driver.close_processes().await.unwrap();
    let (second, _) = run(&per_turn, resume(request("two"), &state)).await;
    let second = second.unwrap();
    assert_eq!(second.output, "resumed: two");
    assert_eq!(checkpoint(&second).resume_id, state.resume_id);
    let (third, _) = run(
        &resident_driver,
        resume(request("three"), &checkpoint(&second)),
    )
    .await;
    assert_eq!(checkpoint(&third.unwrap()).resume_id, state.resume_id);
    let argv: Vec<Vec<String>> = claude.invocations().into_iter().map(|c| c.argv).collect();
    assert_eq!(argv.len(), 3);
    assert!(argv[0].contains(&"--input-format".to_owned()));
    assert!(!argv[1].contains(&"--input-format".to_owned()));
    assert!(
        argv[2]
            .windows(2)
            .any(|w| w[0] == "--resume" && w[1] == state.resume_id)
    );
    resident_driver.close_processes().await.unwrap();
}
