//! The Codex driver in app-server mode against a scripted fake app-server (the fake CLI's
//! serve mode answering Codex's JSON-RPC shapes, from `docs/codex-app-server.md`): the pool's
//! reuse, recycle, replace and evict decisions, no replay after a crash mid-turn, interrupt on
//! cancellation, malformed and unknown messages, an unanswered request, an unknown thread,
//! bare runs and close.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cli_test_kit::{checkpoint, failed_kind, run};
use driver_cli::ProcessMode;
use driver_codex::{CodexDriver, CodexOptions, CommonOptions};
use driver_process::command::Limits;
use driver_process::pool::PoolLimits;
use driver_spi::{
    CollectingSink, Driver, DriverError, DriverEvent, FailureKind, ProcessLifecycle as _,
    ProfilePayload, Request, ResumeRejectReason, RuntimePayload, SessionContext, SessionState,
    check_sequence,
};
use fake_cli::{LineRule, Scenario, is_running, read_served_lines};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

use crate::app_server_script::{
    INITIALIZE, THREAD_FORK, THREAD_RESUME, THREAD_START, TURN_INTERRUPT, TURN_START, app_server,
    initialize, threads, turn,
};
use crate::support::{FakeCodex, fake_codex};

/// A fake app-server, the record of every line it was sent, and drivers in app-server mode.
pub(crate) struct Fake {
    pub(crate) codex: FakeCodex,
    served: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fake {
    pub(crate) fn new(scenario: Scenario) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let served = dir.path().join("served.jsonl");
        let codex = fake_codex(scenario.serve_record(&served), &[]);
        Self {
            codex,
            served,
            _dir: dir,
        }
    }

    fn options(&self, limits: PoolLimits) -> CodexOptions {
        CodexOptions::new().with_process_mode(ProcessMode::Resident(limits))
    }

    pub(crate) fn driver(&self) -> CodexDriver {
        self.codex.driver(self.options(PoolLimits::default()))
    }

    /// Every line the fake processes were sent, in order.
    fn served(&self) -> Vec<String> {
        read_served_lines(&self.served).unwrap()
    }

    /// How many served lines contain `needle`.
    pub(crate) fn count(&self, needle: &str) -> usize {
        self.served().iter().filter(|l| l.contains(needle)).count()
    }

    pub(crate) fn request(&self, prompt: &str) -> Request {
        request(prompt, &self.codex.workspace)
    }
}

pub(crate) fn request(prompt: &str, workspace: &Path) -> Request {
    let profile = ProfilePayload::new(
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("driver-codex app-server tests v1"),
            |e| e.str("exact"),
        ),
        compat_fingerprint::Fingerprint::of(
            compat_fingerprint::Kind::new("driver-codex app-server tests v1"),
            |e| e.str("session"),
        ),
    );
    Request::new(RunId::new("run-1"), prompt, profile).with_workspace(workspace.to_str().unwrap())
}

/// The request with one MCP server whose bearer (`token`) travels in `UI_TOKEN`.
pub(crate) fn with_token(request: Request, token: &str) -> Request {
    let url = "http://127.0.0.1:4101/mcp/slot";
    let mcp = McpServer::streamable_http("agent-ui", url).with_bearer_token_env("UI_TOKEN");
    let service = ServiceRef::new("agent-ui", "Agent UI")
        .with_url(url)
        .with_mcp(mcp.clone())
        .with_secret_env(EnvBinding::new("UI_TOKEN", token.to_owned()));
    request
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp([mcp])
}

pub(crate) fn resume(request: Request, state: &SessionState) -> Request {
    request.with_session(SessionContext::continue_only(state.clone()))
}

/// The pid a turn's answer names.
pub(crate) fn pid_of(output: &str) -> u32 {
    let rest = output
        .strip_prefix("pid ")
        .expect("an answer naming its pid");
    rest[..rest.find(':').unwrap()].parse().unwrap()
}

#[tokio::test]
async fn two_turns_of_a_thread_reuse_one_process_and_each_prompt_goes_once() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    assert!(driver.descriptor().capabilities.persistent_processes);
    let (first, events) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    let pid = pid_of(&first.output);
    assert!(first.output.ends_with(": one"), "{}", first.output);
    let state = checkpoint(&first);

    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    assert_eq!(check_sequence(&events), Ok(()));
    assert_eq!(
        pid_of(&second.output),
        pid,
        "the same process served both turns"
    );
    assert_eq!(checkpoint(&second).resume_id, state.resume_id);
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.reused, stats.idle), (1, 1, 1));
    assert_eq!(fake.codex.invocations().len(), 1, "one spawn");
    assert_eq!(fake.count(INITIALIZE), 1);
    assert_eq!(fake.count(THREAD_START), 1);
    assert_eq!(
        fake.count(THREAD_RESUME),
        0,
        "the loaded thread is not resumed again"
    );
    assert_eq!(fake.count(r#""text":"one""#), 1);
    assert_eq!(fake.count(r#""text":"two""#), 1);
    let argv = &fake.codex.invocations()[0].argv;
    assert_eq!(argv[0], "app-server");
    assert!(!argv.iter().any(|a| a == "exec" || a == "-"));

    driver.close_processes().await.unwrap();
    assert!(!is_running(pid), "close ends the process");
    assert_eq!(driver.pool_stats().unwrap().idle, 0);
}

#[tokio::test]
async fn a_rotated_token_recycles_the_process_and_resumes_cold() {
    let log = test_kit::restart::trace_log();
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    let (first, _) = run(&driver, with_token(fake.request("one"), "token-aaaa-1111")).await;
    let first = first.unwrap();
    let old = pid_of(&first.output);
    let state = checkpoint(&first);

    let rotated = with_token(resume(fake.request("two"), &state), "token-bbbb-2222");
    let (second, _) = run(&driver, rotated).await;
    let second = second.unwrap();
    let new = pid_of(&second.output);
    assert_ne!(new, old, "a new process");
    assert!(
        !is_running(old),
        "the old process ended before the new one served"
    );
    assert_eq!(checkpoint(&second).resume_id, state.resume_id);
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.recycled, stats.reused), (2, 1, 0));
    // The new process resumed the thread cold, and no value reached its argv.
    let served = fake.served();
    let resumed = served.iter().filter(|l| l.contains(THREAD_RESUME)).count();
    assert_eq!(resumed, 1);
    assert!(
        served
            .iter()
            .any(|l| l.contains(&state.resume_id) && l.contains(THREAD_RESUME))
    );
    for call in fake.codex.invocations() {
        assert!(!call.argv.join(" ").contains("token-"), "{:?}", call.argv);
    }
    // The decision is traced with the changed component's name, never a value.
    let log = log.text();
    let recycle = log
        .lines()
        .find(|l| l.contains("recycle") && l.contains("secret_env:UI_TOKEN"))
        .unwrap_or_else(|| panic!("no recycle decision naming the token variable in:\n{log}"));
    assert!(!recycle.contains("4101"), "{recycle}");
    assert!(!log.contains("token-aaaa") && !log.contains("token-bbbb"));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_process_that_died_between_turns_is_replaced_and_the_thread_resumed() {
    let once = LineRule::when([TURN_START]).once();
    let mut scenario = Scenario::new().serve(initialize());
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    // The first turn completes, then the process exits.
    let mut first_turn = once;
    for step in turn().steps {
        first_turn = first_turn.step(step);
    }
    let scenario = scenario.serve(first_turn.exit(0)).serve(turn());
    let fake = Fake::new(scenario);
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    let old = pid_of(&first.output);
    wait_until(|| !is_running(old)).await;

    let (second, _) = run(&driver, resume(fake.request("two"), &checkpoint(&first))).await;
    let second = second.unwrap();
    assert_ne!(pid_of(&second.output), old);
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.replaced, stats.started), (1, 2));
    assert_eq!(fake.count(THREAD_RESUME), 1);
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_crash_mid_turn_fails_the_turn_and_the_prompt_is_never_sent_again() {
    let crash = LineRule::when([TURN_START, r#""text":"crash""#])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-x"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-x"}}}"#)
        .stderr("fake app-server: crashing")
        .kill_self();
    let mut scenario = Scenario::new().serve(initialize()).serve(crash);
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    let fake = Fake::new(scenario.serve(turn()));
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());

    let (crashed, events) = run(&driver, resume(fake.request("crash"), &state)).await;
    assert_eq!(
        failed_kind(&crashed),
        Some(FailureKind::Process),
        "{crashed:?}"
    );
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(matches!(events.last(), Some(DriverEvent::RunFailed { .. })));

    let (next, _) = run(&driver, resume(fake.request("three"), &state)).await;
    let next = next.unwrap();
    assert!(next.output.ends_with(": three"));
    assert_eq!(fake.count(r#""text":"crash""#), 1, "no replay");
    assert_eq!(
        fake.count(THREAD_RESUME),
        1,
        "a new process resumed the thread"
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_turn_interrupts_it_then_ends_the_process() {
    // The turn starts and never completes; an interrupt is answered and recorded.
    let stuck = LineRule::when([TURN_START])
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-stuck"}}}"#)
        .stdout(r#"{"method":"turn/started","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-stuck"}}}"#);
    let interrupt = LineRule::when([TURN_INTERRUPT]).stdout(r#"{"id":${ID},"result":{}}"#);
    let mut scenario = Scenario::new().serve(initialize()).serve(interrupt);
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    let fake = Fake::new(scenario.serve(stuck));
    let driver = Arc::new(fake.driver());
    let sink = Arc::new(CollectingSink::new());
    let running = {
        let driver = Arc::clone(&driver);
        let sink = sink.clone();
        let request = fake.request("long");
        tokio::spawn(async move { driver.run(request, sink).await })
    };
    wait_until(|| sink.events().contains(&DriverEvent::RunStarted)).await;
    running.abort();
    let _ = running.await;
    driver.close_processes().await.unwrap();
    let served = fake.served();
    let interrupt = served
        .iter()
        .find(|l| l.contains(TURN_INTERRUPT))
        .expect("the turn was interrupted");
    assert!(
        interrupt.contains(r#""turnId":"turn-stuck""#),
        "{interrupt}"
    );
    let pid = fake.codex.invocations()[0].pid;
    assert!(!is_running(pid), "the process ended");
    assert_eq!(driver.pool_stats().unwrap().idle, 0);
}

#[tokio::test]
async fn malformed_and_unknown_messages_do_not_break_a_turn() {
    let noisy = LineRule::when([TURN_START])
        .stdout("this is not json")
        .stdout(r#"{"method":"no/such/notification","params":{"x":1}}"#)
        .stdout(r#"{"id":987654,"result":{}}"#)
        .stdout(r#"{"truncated":"#);
    let mut scenario = Scenario::new().serve(initialize());
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    // The noise comes first (both rules match turn/start: the first matching rule runs, so
    // the noise is folded into a copy of the turn).
    let mut rule = noisy;
    for step in turn().steps {
        rule = rule.step(step);
    }
    let fake = Fake::new(scenario.serve(rule));
    let driver = fake.driver();
    let (result, events) = run(&driver, fake.request("hi")).await;
    let response = result.unwrap();
    assert!(response.output.ends_with(": hi"));
    assert_eq!(check_sequence(&events), Ok(()));
    let (again, _) = run(
        &driver,
        resume(fake.request("again"), &checkpoint(&response)),
    )
    .await;
    assert!(
        again.unwrap().output.ends_with(": again"),
        "the process still serves"
    );
    assert_eq!(driver.pool_stats().unwrap().reused, 1);
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_unanswered_request_times_out_and_leaves_no_process() {
    // Nothing answers `initialize`.
    let fake = Fake::new(Scenario::new().serve(LineRule::when(["no line has this"])));
    let limits = Limits::default().with_idle_timeout(Duration::from_millis(500));
    let driver = fake
        .codex
        .driver(fake.options(PoolLimits::default()).with_limits(limits));
    let (result, events) = run(&driver, fake.request("hi")).await;
    assert_eq!(failed_kind(&result), Some(FailureKind::Timeout));
    assert!(events.is_empty());
    let pid = fake.codex.invocations()[0].pid;
    wait_until(|| !is_running(pid)).await;
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.idle, stats.busy), (0, 0));
}

#[tokio::test]
async fn an_unknown_thread_is_a_rejected_resume() {
    let unknown = LineRule::when([THREAD_RESUME]).stdout(
        r#"{"id":${ID},"error":{"code":-32600,"message":"no rollout found for thread id ${PARAM:threadId}"}}"#,
    );
    let mut scenario = Scenario::new().serve(initialize()).serve(unknown);
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    let fake = Fake::new(scenario.serve(turn()));
    let driver = fake.driver();
    // A valid checkpoint (its guard passes), naming a thread this namespace never had.
    let (first, _) = run(&driver, fake.request("one")).await;
    let mut state = checkpoint(&first.unwrap());
    state.resume_id = "0199a213-81c0-7800-8aa1-bbab2a035a53".to_owned();
    driver.close_processes().await.unwrap();
    let (result, events) = run(&driver, resume(fake.request("hi"), &state)).await;
    assert_eq!(
        result.unwrap_err(),
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession)
    );
    assert!(events.is_empty());
    assert_eq!(fake.count(r#""text":"hi""#), 0, "the prompt was never sent");
}

#[tokio::test]
async fn bare_runs_get_a_fresh_process_each() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    let bare = |p: &str| fake.request(p).with_session(SessionContext::stateless());
    let (one, _) = run(&driver, bare("one")).await;
    let (two, _) = run(&driver, bare("two")).await;
    let (one, two) = (one.unwrap(), two.unwrap());
    assert!(one.persistable_checkpoint().is_none());
    assert_ne!(pid_of(&one.output), pid_of(&two.output));
    assert!(!is_running(pid_of(&one.output)));
    assert_eq!(
        driver.pool_stats().unwrap().idle,
        0,
        "a bare run's process is not kept"
    );
    assert!(
        fake.served()
            .iter()
            .any(|l| l.contains(r#""ephemeral":true"#))
    );
}

#[tokio::test]
async fn a_fork_runs_on_a_new_process_after_its_parent_is_retired() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    let parent = pid_of(&first.output);
    let state = checkpoint(&first);
    let fork = fake
        .request("forked")
        .with_session(SessionContext::fork(state.clone()));
    let (forked, _) = run(&driver, fork).await;
    let forked = forked.unwrap();
    assert_ne!(checkpoint(&forked).resume_id, state.resume_id);
    assert_ne!(pid_of(&forked.output), parent);
    assert!(!is_running(parent), "the parent's process was retired");
    assert_eq!(fake.count(THREAD_FORK), 1);
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn the_pool_evicts_the_least_recently_used_idle_process_at_its_cap() {
    let fake = Fake::new(app_server());
    let driver = fake
        .codex
        .driver(fake.options(PoolLimits::default().with_max_live(1)));
    let (a, _) = run(&driver, fake.request("a")).await;
    let a = a.unwrap();
    let (b, _) = run(&driver, fake.request("b")).await;
    let b = b.unwrap();
    assert!(
        !is_running(pid_of(&a.output)),
        "a's process was evicted for b's"
    );
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.evicted, stats.idle), (1, 1));
    // a's thread resumes on a new process, evicting b's.
    let (again, _) = run(&driver, resume(fake.request("a2"), &checkpoint(&a))).await;
    assert!(again.unwrap().output.ends_with(": a2"));
    assert!(!is_running(pid_of(&b.output)));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn exec_mode_resumes_a_thread_started_in_app_server_mode() {
    let fake = Fake::new(app_server().rule(crate::support::text_turn(
        fake_cli::Rule::when(["resume"]),
        "${ARG_AFTER:resume}",
        "exec resumed",
    )));
    let resident = fake.driver();
    let (first, _) = run(&resident, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    resident.close_processes().await.unwrap();
    let exec = fake.codex.driver(CodexOptions::new());
    let (second, _) = run(&exec, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    assert_eq!(second.output, "exec resumed");
    assert_eq!(checkpoint(&second).resume_id, state.resume_id);
    let argv = fake.codex.last().argv;
    assert_eq!(argv[..2], ["exec", "--json"]);
    assert_eq!(
        argv[argv.len() - 3..],
        ["resume", state.resume_id.as_str(), "-"]
    );
}

/// Polls `done` for up to 20 s (a bound for a loaded machine, not a timing assertion).
async fn wait_until(mut done: impl FnMut() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition not reached within 20 s");
}

// A hostile or careless app-server (issue 37): what it does between turns and a policy
// change between turns.

/// A turn whose process, once the turn completed, keeps writing: after `pause_ms` it
/// repeats the turn's end (another answer, another `turn/completed`) as a leftover.
fn turn_with_leftovers(pause_ms: u64) -> LineRule {
    turn()
        .sleep_ms(pause_ms)
        .stdout(r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","turnId":"turn-${COUNT}","item":{"type":"agentMessage","id":"msg_late","text":"LEFTOVER"}}}"#)
        .stdout(r#"{"method":"turn/completed","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-${COUNT}","items":[],"status":"completed","error":null}}}"#)
}

fn scenario_with(turn: LineRule) -> Scenario {
    let mut scenario = Scenario::new().serve(initialize());
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    scenario.serve(turn)
}

#[tokio::test]
async fn what_a_process_writes_after_its_turn_never_answers_the_next() {
    let fake = Fake::new(scenario_with(turn_with_leftovers(300)));
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    assert!(first.output.ends_with(": one"), "{}", first.output);
    let state = checkpoint(&first);

    // At once: the leftovers of turn one arrive while turn two waits for its answer.
    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert_eq!(check_sequence(&events), Ok(()));
    // Later: the leftovers of turn two arrive while the process is idle.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (third, _) = run(&driver, resume(fake.request("three"), &state)).await;
    let third = third.unwrap();
    assert!(third.output.ends_with(": three"), "{}", third.output);
    let texts = |events: &[DriverEvent]| format!("{events:?}");
    assert!(!texts(&events).contains("LEFTOVER"));
    assert_eq!(pid_of(&third.output), pid_of(&first.output), "one process");
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_process_that_floods_while_idle_is_ended() {
    // 200,000 lines of 500 bytes (100 MB) once the turn completed.
    let line = format!(
        r#"{{"method":"noise","params":{{"text":"{}"}}}}"#,
        "x".repeat(470)
    );
    let fake = Fake::new(scenario_with(turn().stdout_repeated(line, 200_000)));
    let driver = fake.driver();
    let (first, _) = run(&driver, fake.request("one")).await;
    let first = first.unwrap();
    let pid = pid_of(&first.output);
    // Ended by the driver, without another turn.
    wait_until(|| !is_running(pid)).await;

    let (second, _) = run(&driver, resume(fake.request("two"), &checkpoint(&first))).await;
    let second = second.unwrap();
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert_ne!(
        pid_of(&second.output),
        pid,
        "a new process served the next turn"
    );
    let stats = driver.pool_stats().unwrap();
    assert_eq!(stats.flooded, 1, "{stats:?}");
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn an_idle_process_is_ended_when_its_idle_time_is_up() {
    let fake = Fake::new(app_server());
    let limits = PoolLimits::default().with_idle_timeout(Duration::from_millis(200));
    let driver = fake.codex.driver(fake.options(limits));
    let (first, _) = run(&driver, fake.request("one")).await;
    let pid = pid_of(&first.unwrap().output);
    // No further turn, no checkout: the pool ends it when its time is up.
    wait_until(|| !is_running(pid)).await;
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.idle, stats.evicted), (0, 1), "{stats:?}");
}

#[tokio::test]
async fn a_policy_change_between_turns_recycles_the_process() {
    use driver_spi::{Action, PermissionPolicy};
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    // Writes ask, commands run: the thread is opened `on-request`.
    let writes_ask = PermissionPolicy::default()
        .allow(Action::Commands)
        .ask(Action::Write);
    let (first, _) = run(&driver, fake.request("one").with_permissions(writes_ask)).await;
    let first = first.unwrap();
    // Commands ask too: the same command line, but the thread must be opened `untrusted`.
    let commands_ask = writes_ask.ask(Action::Commands);
    let (second, _) = run(
        &driver,
        resume(fake.request("two"), &checkpoint(&first)).with_permissions(commands_ask),
    )
    .await;
    let second = second.unwrap();
    assert_ne!(
        pid_of(&second.output),
        pid_of(&first.output),
        "a process launched under another policy does not serve the turn"
    );
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.recycled, stats.reused), (2, 1, 0));
    let resumed: Vec<String> = fake
        .served()
        .into_iter()
        .filter(|l| l.contains(THREAD_RESUME))
        .collect();
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert!(
        resumed[0].contains(r#""approvalPolicy":"untrusted""#),
        "{}",
        resumed[0]
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn concurrent_per_turn_runs_that_ask_meet_no_hidden_limit() {
    use driver_spi::{Action, PermissionPolicy};
    // Each turn takes a while, so the runs overlap.
    let slow = LineRule::when([TURN_START])
        .sleep_ms(400)
        .stdout(r#"{"id":${ID},"result":{"turn":{"id":"turn-${COUNT}","status":"inProgress"}}}"#)
        .stdout(r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","turnId":"turn-${COUNT}","item":{"type":"agentMessage","id":"msg_${COUNT}","text":"pid ${PID}: ${PARAM:input.0.text}"}}}"#)
        .stdout(r#"{"method":"turn/completed","params":{"threadId":"${PARAM:threadId}","turn":{"id":"turn-${COUNT}","items":[],"status":"completed","error":null}}}"#);
    let fake = Fake::new(scenario_with(slow));
    // One process per turn; a policy that asks runs each turn on a one-turn app-server.
    let driver = fake.codex.driver(CodexOptions::new());
    let asks = PermissionPolicy::default()
        .allow(Action::Commands)
        .ask(Action::Write);
    let one = |n: usize| {
        run(
            &driver,
            fake.request(&format!("run {n}")).with_permissions(asks),
        )
    };
    // More than the pool's per-namespace default used to allow (four).
    let (a, b, c, d, e, f) = tokio::join!(one(1), one(2), one(3), one(4), one(5), one(6));
    let mut pids = Vec::new();
    for (n, (result, _)) in [a, b, c, d, e, f].into_iter().enumerate() {
        let response = result.unwrap_or_else(|e| panic!("run {}: {e}", n + 1));
        assert!(
            response.output.ends_with(&format!(": run {}", n + 1)),
            "{}",
            response.output
        );
        pids.push(pid_of(&response.output));
    }
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), 6, "a process each");
    for pid in pids {
        wait_until(|| !is_running(pid)).await;
    }
}

#[tokio::test]
async fn what_a_session_replays_while_it_opens_is_never_the_turns() {
    // A resumed thread's history comes back as notifications before the answer, as ACP's
    // `session/load` does: more of them than the driver's inbox holds, and none names a turn.
    let replayed = r#"{"method":"item/completed","params":{"threadId":"${PARAM:threadId}","item":{"type":"agentMessage","id":"msg_old","text":"REPLAYED"}}}"#;
    let replaying = LineRule::when([THREAD_RESUME])
        .stdout_repeated(replayed, 1000)
        .stdout(r#"{"id":${ID},"result":{"thread":{"id":"${PARAM:threadId}"}}}"#);
    let mut scenario = Scenario::new().serve(initialize()).serve(replaying);
    for rule in threads() {
        scenario = scenario.serve(rule);
    }
    let fake = Fake::new(scenario.serve(turn()));
    let limits = Limits::default().with_idle_timeout(Duration::from_secs(20));
    let driver = fake
        .codex
        .driver(fake.options(PoolLimits::default()).with_limits(limits));
    let (first, _) = run(&driver, fake.request("one")).await;
    let state = checkpoint(&first.unwrap());
    // A new process resumes the thread cold.
    driver.close_processes().await.unwrap();
    let (second, events) = run(&driver, resume(fake.request("two"), &state)).await;
    let second = second.unwrap();
    assert!(second.output.ends_with(": two"), "{}", second.output);
    assert_eq!(check_sequence(&events), Ok(()));
    assert!(!format!("{events:?}").contains("REPLAYED"), "{events:?}");
    assert_eq!(fake.count(THREAD_RESUME), 1);
    driver.close_processes().await.unwrap();
}
