//! Cancellation and process-group cleanup: no orphan, no zombie.

use std::time::Duration;

use driver_spi::ExitStatus;
use fake_cli::{Rule, Scenario};

use crate::process::CliProcess;
use crate::tests::support::{
    eventually, fixture, group_is_gone, limits, live_group_members, proc_stat, read_pid,
};

/// A scenario that starts a grandchild (a helper server, say), reports ready and hangs.
fn with_grandchild(pid_file: &std::path::Path) -> Scenario {
    Scenario::new().rule(
        Rule::any()
            .spawn_grandchild(pid_file)
            .stdout("ready")
            .hang(),
    )
}

fn assert_running_in_group(pid: u32, pgid: u32) {
    let (state, _, pgrp) = proc_stat(pid).expect("process is running");
    assert_eq!(pgrp, pgid);
    assert_ne!(state, 'Z');
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_running_process_ends_its_whole_group() {
    let fx = fixture();
    let pid_file = fx.path("grandchild.pid");
    let mut process =
        CliProcess::spawn(&fx.env, fx.fake(&with_grandchild(&pid_file)), limits()).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ready"));
    let child = process.pid();
    let grandchild = read_pid(&pid_file);
    assert_running_in_group(child, child);
    assert_running_in_group(grandchild, child);
    assert_eq!(live_group_members(child).len(), 2);

    // The driver's run future is dropped: Drop must end everything.
    drop(process);
    assert!(eventually(|| group_is_gone(child, &[grandchild])));
}

#[test]
fn dropping_after_the_runtime_is_gone_still_cleans_up() {
    let fx = fixture();
    let pid_file = fx.path("grandchild.pid");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let process = runtime.block_on(async {
        let mut p =
            CliProcess::spawn(&fx.env, fx.fake(&with_grandchild(&pid_file)), limits()).unwrap();
        assert_eq!(p.next_line().await.unwrap().as_deref(), Some("ready"));
        p
    });
    let child = process.pid();
    let grandchild = read_pid(&pid_file);
    drop(runtime);
    // No runtime at all now: Drop works from plain threads.
    drop(process);
    assert!(eventually(|| group_is_gone(child, &[grandchild])));
}

#[tokio::test]
async fn cancelling_the_task_that_owns_the_process_ends_the_group() {
    let fx = fixture();
    let pid_file = fx.path("grandchild.pid");
    let command = fx.fake(&with_grandchild(&pid_file));
    let env = std::sync::Arc::new(fx.env);
    let (tx, rx) = tokio::sync::oneshot::channel();
    // A driver-like run: reads until the end, which never comes.
    let run = tokio::spawn(async move {
        let mut process = CliProcess::spawn(&env, command, limits()).unwrap();
        assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ready"));
        tx.send(process.pid()).unwrap();
        while process.next_line().await.unwrap().is_some() {}
    });
    let child = rx.await.unwrap();
    let grandchild = read_pid(&pid_file);
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    assert!(eventually(|| group_is_gone(child, &[grandchild])));
}

#[tokio::test]
async fn terminate_escalates_to_sigkill_when_sigterm_is_ignored() {
    let fx = fixture();
    // An ignored signal stays ignored across exec, so `sleep` ignores SIGTERM too.
    let command = fx
        .command("sh")
        .args(["-c", "trap '' TERM; echo ready; exec sleep 600"]);
    let limits = limits().with_kill_grace(Duration::from_millis(200));
    let mut process = CliProcess::spawn(&fx.env, command, limits).unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ready"));
    let pid = process.pid();
    let finished = process.terminate().await;
    assert_eq!(finished.status, ExitStatus::Signal(9));
    assert!(eventually(|| group_is_gone(pid, &[])));
}

#[tokio::test]
async fn dropping_escalates_to_sigkill_when_sigterm_is_ignored() {
    let fx = fixture();
    let command = fx.command("sh").args([
        "-c",
        "trap '' TERM; sleep 600 & echo $!; echo ready; exec sleep 600",
    ]);
    let limits = limits().with_kill_grace(Duration::from_millis(200));
    let mut process = CliProcess::spawn(&fx.env, command, limits).unwrap();
    let grandchild: u32 = process.next_line().await.unwrap().unwrap().parse().unwrap();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("ready"));
    let pid = process.pid();
    assert_running_in_group(grandchild, pid);
    drop(process);
    assert!(eventually(|| group_is_gone(pid, &[grandchild])));
}

#[tokio::test]
async fn a_grandchild_left_behind_after_a_normal_exit_is_ended() {
    let fx = fixture();
    let pid_file = fx.path("grandchild.pid");
    // The grandchild inherits stdout, so stdout only ends once it is gone.
    let scenario = Scenario::new().rule(
        Rule::any()
            .spawn_grandchild(&pid_file)
            .stdout("done")
            .exit(0),
    );
    let mut process = CliProcess::spawn(&fx.env, fx.fake(&scenario), limits()).unwrap();
    let child = process.pid();
    assert_eq!(process.next_line().await.unwrap().as_deref(), Some("done"));
    assert_eq!(process.next_line().await.unwrap(), None);
    let finished = process.wait().await.unwrap();
    assert_eq!(finished.status, ExitStatus::Success);
    let grandchild = read_pid(&pid_file);
    assert!(eventually(|| group_is_gone(child, &[grandchild])));
}
