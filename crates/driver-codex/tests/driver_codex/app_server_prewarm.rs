//! `Driver::prewarm` of the Codex driver against the scripted fake app-server: the thread is
//! opened without a prompt and the first turn takes the process without opening it again; a
//! ticket serves only its plan and its exact configuration; a refused pre-warm spawns nothing;
//! one process per turn refuses it.

use cli_test_kit::{checkpoint, run};
use driver_cli::ProcessMode;
use driver_codex::{CodexOptions, CommonOptions};
use driver_spi::{
    Driver as _, DriverError, ProcessLifecycle as _, SessionContext, SessionState, Unsupported,
};

use crate::app_server_fake::{Fake, pid_of, resume, with_token};
use crate::app_server_script::{THREAD_FORK, THREAD_START, TURN_START, app_server};

#[tokio::test]
async fn a_new_thread_is_opened_without_a_prompt_and_its_first_turn_takes_the_process() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    assert!(driver.descriptor().capabilities.prewarm);
    let warmed = driver.prewarm(fake.request("")).await.unwrap();
    let ticket = warmed.ticket.expect("a new thread gets a ticket");
    assert!(!warmed.reused);
    assert_eq!(fake.count(THREAD_START), 1, "the thread is open");
    assert_eq!(fake.count(TURN_START), 0, "no prompt was sent");
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.idle), (1, 1));

    let (first, _) = run(&driver, fake.request("one").with_prewarmed(ticket)).await;
    let first = first.unwrap();
    let stats = driver.pool_stats().unwrap();
    assert_eq!(
        (stats.started, stats.reused),
        (1, 1),
        "the pre-warmed process served"
    );
    assert_eq!(
        fake.count(THREAD_START),
        1,
        "the thread was not opened again"
    );
    assert_eq!(fake.codex.invocations().len(), 1, "one spawn");
    let state = checkpoint(&first);

    // A resume's pre-warm: no ticket, the idle process of the thread fits as it is.
    let warmed = driver
        .prewarm(resume(fake.request(""), &state))
        .await
        .unwrap();
    assert_eq!((warmed.ticket, warmed.reused), (None, true));
    let (second, _) = run(&driver, resume(fake.request("two"), &state)).await;
    assert_eq!(pid_of(&second.unwrap().output), pid_of(&first.output));
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_ticket_serves_only_its_plan_and_its_exact_configuration() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    // Rotated between the pre-warm and the run: recycled before the prompt.
    let warmed = driver
        .prewarm(with_token(fake.request(""), "token-aaaa-1111"))
        .await
        .unwrap();
    let rotated =
        with_token(fake.request("one"), "token-bbbb-2222").with_prewarmed(warmed.ticket.unwrap());
    let (first, _) = run(&driver, rotated).await;
    let state: SessionState = checkpoint(&first.unwrap());
    let stats = driver.pool_stats().unwrap();
    assert_eq!((stats.started, stats.recycled, stats.reused), (2, 1, 0));

    // Warmed for a new thread, carried by a fork: the fork starts its own process and the
    // pre-warmed one stays idle, untouched.
    let warmed = driver.prewarm(fake.request("")).await.unwrap();
    let fork = fake
        .request("fork")
        .with_session(SessionContext::fork(state))
        .with_prewarmed(warmed.ticket.unwrap());
    let (forked, _) = run(&driver, fork).await;
    forked.unwrap();
    assert_eq!(fake.count(THREAD_FORK), 1);
    let stats = driver.pool_stats().unwrap();
    assert_eq!(
        (stats.started, stats.reused),
        (4, 0),
        "no reuse across plans"
    );
    driver.close_processes().await.unwrap();
}

#[tokio::test]
async fn a_refused_prewarm_spawns_nothing_and_one_process_per_turn_refuses_it() {
    let fake = Fake::new(app_server());
    let driver = fake.driver();
    // Refused by the run's checks (an empty model): the same error, before any spawn.
    let refused = driver.prewarm(fake.request("").with_model("")).await;
    let run_refused = run(&driver, fake.request("x").with_model("")).await.0;
    assert!(
        matches!(refused, Err(DriverError::InvalidConfig(_))),
        "{refused:?}"
    );
    assert_eq!(
        refused.unwrap_err(),
        run_refused.unwrap_err(),
        "the run's own error"
    );
    assert!(fake.codex.invocations().is_empty(), "nothing spawned");

    let per_turn = fake
        .codex
        .driver(CodexOptions::new().with_process_mode(ProcessMode::PerTurn));
    assert!(!per_turn.descriptor().capabilities.prewarm);
    let refused = per_turn.prewarm(fake.request("")).await;
    assert!(
        matches!(refused, Err(DriverError::Unsupported(Unsupported::Prewarm))),
        "{refused:?}"
    );
}
