//! The ACP-shaped test dialect against a replayed two-way transcript
//! (`fixtures/two-turns.rpc.jsonl`): the driver spawns the fake CLI in relay mode, and the kit's
//! replayed server answers its resident loop by method and id.
//!
//! The transcript is written by hand in the shapes of the test dialect (no real CLI speaks
//! it): one process, `initialize`, `session/new`, then two turns of `session/prompt`. Its ids
//! are not the driver's (it records 100 to 103, the driver's peer counts from 1), and during
//! the first turn the server asks `fs/read_text_file`, which the dialect refuses; the rest of
//! that turn is recorded after the refusal, so the turn ends only if the driver's answer
//! reached the replay under the server's id.

use std::path::Path;

use cli_test_kit::rpc_replay::{RpcReplayServer, RpcTranscript};
use cli_test_kit::{FakeCli, checkpoint, failed_kind, run};
use driver_spi::{
    Driver, FailureKind, ProcessLifecycle as _, SessionContext, SessionState, check_sequence,
};

use crate::prompt_ended::{PromptEndedOptions, request, resident};

fn server() -> RpcReplayServer {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/driver_cli/fixtures/two-turns.rpc.jsonl");
    RpcReplayServer::start(RpcTranscript::read(&path))
}

fn fake(server: &RpcReplayServer) -> FakeCli<PromptEndedOptions> {
    FakeCli::new(
        server.scenario(),
        "prompt-ended 1.0.0",
        &[],
        &["PROMPT_ENDED_API_KEY"],
    )
}

/// The transcript's first turn on `driver`: its replayed answer, in a well-formed stream (the
/// turn ends only once the refusal of the server's request reached the replay). Returns the
/// session to continue.
async fn first_turn(driver: &dyn Driver) -> SessionState {
    let (first, events) = run(driver, request("one")).await;
    let first = first.unwrap();
    assert!(first.is_clean(), "{:?}", first.failure);
    assert_eq!(first.output, "Replayed answer one");
    assert_eq!(check_sequence(&events), Ok(()));
    checkpoint(&first)
}

#[tokio::test]
async fn two_turns_replay_on_one_resident_process() {
    let server = server();
    let fake = fake(&server);
    let driver = fake.driver(resident());
    let state = first_turn(&driver).await;

    // The next turn continues the session the replay named, on the same process.
    let next = request("two").with_session(SessionContext::continue_only(state));
    let (second, _) = run(&driver, next).await;
    let second = second.unwrap();
    assert!(second.is_clean(), "{:?}", second.failure);
    assert_eq!(second.output, "Replayed answer two");

    driver.close_processes().await.unwrap();
    assert_eq!(server.assert_replayed(), 1, "one process served both turns");
    assert_eq!(fake.invocations().len(), 1);
}

#[tokio::test]
async fn a_request_the_transcript_never_recorded_fails_the_turn_naming_its_method() {
    let server = server();
    let fake = fake(&server);
    let driver = fake.driver(resident());
    let state = first_turn(&driver).await;
    // A new process loads the session: the transcript has no `session/load`.
    driver.close_processes().await.unwrap();
    let next = request("two").with_session(SessionContext::continue_only(state));
    let (second, _) = run(&driver, next).await;
    assert_eq!(
        failed_kind(&second),
        Some(FailureKind::Protocol),
        "{second:?}"
    );
    driver.close_processes().await.unwrap();

    let failures = server.failures();
    assert!(
        failures
            .iter()
            .any(|f| f.contains("`session/load` request") && f.contains("no match")),
        "{failures:?}"
    );
}
