//! The pre-warm scenario every pre-warming driver's real-CLI test runs, written once.
//!
//! [`run_prewarm_scenario`] plays, against a real CLI kept alive between turns (the driver
//! built with a resident process mode), offline, with the [`ResidentSetup`] of
//! [`resident`](crate::resident) (the hosts' hosted `ping` tools hand a Thread one slot, and a
//! second attach of the Thread while the slot is held a fresh random URL: the provider whose
//! endpoint differs per attach):
//! 1. **A new Thread.** Host 1 pre-warms Thread [`THREAD`], which has no stored session: one
//!    resident process starts (the pool counts a start). The first run starts the session on
//!    that very process (the same pids, a reuse, no second start).
//! 2. **A resume.** The driver's processes are closed; host 1 pre-warms the Thread again: a new
//!    process opens the stored session. The next run resumes it on that process (the same
//!    pids, a reuse), and the model sees the first turn.
//! 3. **An incompatible change.** A `resume_only` handle with another permission policy is
//!    refused with `Incompatible` before any process starts (no new pid, no start).
//! 4. **A rotation.** Host 1 pre-warms; host 2 (its own tool port, token and env-var name)
//!    runs the Thread: the pre-warmed process is recycled before the prompt (its pids gone,
//!    a recycle counted) and a new one resumes the session.
//! 5. **Close.** `Agent::close` of both hosts leaves no process of the CLI behind.

use std::collections::BTreeSet;
use std::sync::Arc;

use agent::{Action, PermissionPolicy, SessionOutcome, ThreadError};
use hosted_tools::{HostedToolsProvider, ToolSet};

use crate::hosts::{Calls, agent, ping_tool};
use crate::resident::ResidentSetup;
use crate::{Reply, Script};

/// The Thread key of the scenario.
pub const THREAD: &str = "warm";
/// The first run's prompt, on the pre-warmed process.
pub const FIRST_PROMPT: &str = "Remember the word heliotrope.";
/// The model's first answer.
pub const FIRST_ANSWER: &str = "First answer, pre-warmed.";
/// The resumed run's prompt.
pub const SECOND_PROMPT: &str = "Which word did I ask you to remember?";
/// The model's answer to [`SECOND_PROMPT`].
pub const SECOND_ANSWER: &str = "Second answer, resumed pre-warmed.";
/// Host 2's prompt, after the rotation.
pub const THIRD_PROMPT: &str = "Answer after the rotation.";
/// The model's answer to [`THIRD_PROMPT`].
pub const THIRD_ANSWER: &str = "Third answer, recycled.";

/// The model's replies for [`run_prewarm_scenario`], in order.
pub fn prewarm_script() -> Script {
    Script::new()
        .then(Reply::text(FIRST_ANSWER))
        .then(Reply::text(SECOND_ANSWER))
        .then(Reply::text(THIRD_ANSWER))
}

async fn host(setup: &ResidentSetup<'_>, label: &'static str, calls: &Calls) -> agent::Agent {
    let tools = HostedToolsProvider::new(
        ToolSet::new([ping_tool(label, "1", calls)]).expect("a valid tool set"),
    );
    agent(setup.dir, Arc::clone(&setup.driver), Arc::new(tools)).await
}

/// Plays the pre-warm scenario (see the [module docs](self)) and panics at the first outcome
/// that differs. The mock must be scripted with [`prewarm_script`].
///
/// # Panics
/// On any failed check: that is the test.
pub async fn run_prewarm_scenario(setup: ResidentSetup<'_>) {
    std::fs::create_dir_all(setup.dir.join("workspace")).expect("workspace created");
    let calls: Calls = Arc::default();
    let counts = || (setup.pool_counts)();
    let live = || (setup.live_pids)();
    let host1 = host(&setup, "host-1", &calls).await;
    let thread = host1.thread(THREAD);

    // ---- 1. A Thread with no stored session ----
    println!("1. host 1 pre-warms Thread {THREAD:?} (no stored session), then runs it");
    assert!(live().is_empty(), "no process before the pre-warm");
    let warm = thread.prewarm().await.expect("the pre-warm succeeds");
    assert!(!warm.reused, "a new process was started");
    let warmed = live();
    assert!(!warmed.is_empty(), "the pre-warmed process runs");
    if let Some((started, reused, _)) = counts() {
        assert_eq!(
            (started, reused),
            (1, 0),
            "the pre-warm started one process"
        );
    }
    let one = thread
        .run(FIRST_PROMPT)
        .await
        .expect("the first run succeeds");
    assert_eq!(one.session, SessionOutcome::Started);
    assert_eq!(one.output, FIRST_ANSWER);
    same_processes(
        &live(),
        &warmed,
        "the pre-warmed process served the first turn",
    );
    if let Some((started, reused, _)) = counts() {
        assert_eq!(
            (started, reused),
            (1, 1),
            "the run reused the pre-warmed process"
        );
    }

    // ---- 2. A Thread with a stored session ----
    println!("   pids {warmed:?}; 2. processes closed, host 1 pre-warms the stored session");
    let lifecycle = setup
        .driver
        .process_lifecycle()
        .expect("a resident driver has a lifecycle");
    lifecycle.close_processes().await.expect("closed");
    assert!(live().is_empty(), "closed");
    let before = counts();
    let warm = thread
        .prewarm()
        .await
        .expect("the resume's pre-warm succeeds");
    assert!(matches!(warm.verdict, agent::Verdict::Resume { .. }));
    let resumed_pids = live();
    assert!(!resumed_pids.is_empty() && resumed_pids.is_disjoint(&warmed));
    let asked = (setup.model_requests)().len();
    let two = thread
        .run(SECOND_PROMPT)
        .await
        .expect("the resumed run succeeds");
    assert_eq!(two.session, SessionOutcome::Resumed);
    assert_eq!(two.output, SECOND_ANSWER);
    same_processes(
        &live(),
        &resumed_pids,
        "the pre-warmed process served the resume",
    );
    if let (Some((s0, r0, _)), Some((s1, r1, _))) = (before, counts()) {
        assert_eq!(
            (s1 - s0, r1 - r0),
            (1, 1),
            "one start (the pre-warm), one reuse"
        );
    }
    let history = (setup.model_requests)()
        .get(asked)
        .expect("the CLI asked the model")
        .input_texts()
        .join("\n");
    for earlier in [FIRST_PROMPT, FIRST_ANSWER] {
        assert!(
            history.contains(earlier),
            "resumed without {earlier:?}: {history}"
        );
    }

    // ---- 3. An incompatible change is refused before any process starts ----
    println!("   pids {resumed_pids:?}; 3. an incompatible pre-warm is refused");
    let before = counts();
    // MCP tools denied: part of the Thread's compatibility fingerprint.
    let other = PermissionPolicy::default().deny(Action::Mcp);
    let refused = thread
        .clone()
        .with_permissions(other)
        .resume_only()
        .prewarm()
        .await;
    assert!(
        matches!(refused, Err(ThreadError::Incompatible { .. })),
        "refused as the run would be: {refused:?}"
    );
    same_processes(&live(), &resumed_pids, "no process started");
    assert_eq!(counts(), before, "the pool decided nothing");

    // ---- 4. A rotation between the pre-warm and the run recycles the process ----
    println!("4. host 1 pre-warms, host 2 (rotated tools) runs: the process is recycled");
    thread.prewarm().await.expect("host 1's pre-warm succeeds");
    let prewarmed: BTreeSet<u32> = live();
    let before = counts();
    let host2 = host(&setup, "host-2", &calls).await;
    let three = host2
        .thread(THREAD)
        .resume_only()
        .run(THIRD_PROMPT)
        .await
        .expect("host 2's run succeeds");
    assert_eq!(three.session, SessionOutcome::Resumed);
    assert_eq!(three.output, THIRD_ANSWER);
    let rotated = live();
    assert!(
        !rotated.is_empty() && rotated.is_disjoint(&prewarmed),
        "the pre-warmed process was recycled: {prewarmed:?} then {rotated:?}"
    );
    if let (Some((s0, _, c0)), Some((s1, _, c1))) = (before, counts()) {
        assert_eq!((s1 - s0, c1 - c0), (1, 1), "one recycle, one start");
    }

    // ---- 5. Close ----
    println!("5. Agent::close of both hosts");
    host2.close().await;
    host1.close().await;
    let left = live();
    assert!(left.is_empty(), "processes outlived Agent::close: {left:?}");
}

/// Asserts that the live processes are `expected`, showing every process that differs (pid,
/// parent, executable and command line) when they are not.
fn same_processes(live: &BTreeSet<u32>, expected: &BTreeSet<u32>, what: &str) {
    if live != expected {
        let differing: BTreeSet<u32> = live.symmetric_difference(expected).copied().collect();
        panic!(
            "{what}: live {live:?}, expected {expected:?}; differing:\n{}",
            crate::resident::describe_processes(&differing)
        );
    }
}
