//! The steering scenario every CLI driver that steers runs against its real binary (issue
//! 43), through the agent: the model's first reply runs a command that waits for a file;
//! while it waits, the host steers the Thread's running turn ([`agent::Thread::steer`]); once
//! the driver acknowledged the follow-up, the file appears and the command ends. Then:
//! - the mock's next model request, the same turn's, holds the follow-up, and the turn makes
//!   no other model request;
//! - the turn's events hold one [`ThreadEventKind::FollowUp`] with the follow-up, after the
//!   command's tool call started, and the run finishes clean with the model's last answer,
//!   persisted once;
//! - once the turn ended, steering it is [`SteerError::NoTurn`]; a driver of the same CLI
//!   that cannot steer (one process per turn) refuses at once, typed
//!   ([`SteerError::Unsupported`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent::{Agent, SteerError, ThreadEventKind};
use driver_spi::{Action, Driver, PermissionPolicy};
use thread_store::memory::MemoryStore;

use crate::{RecordedRequest, Reply};

/// The follow-up the scenario's host sends.
pub const FOLLOW_UP: &str = "Steering note: also list the files you changed.";

/// The model's last answer, after the follow-up.
pub const ANSWER: &str = "steered answer";

/// What a CLI's steering test supplies.
pub struct SteerSetup<'a> {
    /// The runtime's working directory: the release file is made here.
    pub workspace: &'a Path,
    /// The CLI's driver in resident mode (it declares steering).
    pub resident: Arc<dyn Driver>,
    /// The same CLI's driver with one process per turn (it cannot steer).
    pub per_turn: Arc<dyn Driver>,
    /// The model's call of the CLI's own command tool running this shell command.
    pub command_call: &'a (dyn Fn(&str) -> Reply + Sync),
    /// Queues a reply on the mock model.
    pub push_reply: &'a (dyn Fn(Reply) + Sync),
    /// The mock's model requests so far.
    pub model_requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
}

impl std::fmt::Debug for SteerSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SteerSetup")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

/// How long the scenario waits for the CLI at each step (a cold start included).
const PATIENCE: Duration = Duration::from_secs(90);

fn agent(setup: &SteerSetup<'_>, driver: Arc<dyn Driver>) -> Agent {
    Agent::builder(driver)
        .store(Arc::new(MemoryStore::new()))
        .workspace(setup.workspace.to_string_lossy())
        // Claude Code runs commands unasked only with writes and the network allowed too.
        .permissions(
            PermissionPolicy::default()
                .allow(Action::Commands)
                .allow(Action::Write)
                .allow(Action::Network),
        )
        .build()
        .expect("the agent builds")
}

/// Runs the scenario (see the [module docs](self)); panics on the first broken expectation.
pub async fn run_steer_scenario(setup: &SteerSetup<'_>) {
    let release = setup.workspace.join("steer-release");
    let _ = std::fs::remove_file(&release);
    let wait = format!(
        "i=0; while [ ! -e '{path}' ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done; echo released",
        path = release.display()
    );
    (setup.push_reply)((setup.command_call)(&wait));
    (setup.push_reply)(Reply::text(ANSWER));
    let before = (setup.model_requests)().len();

    let agent = agent(setup, setup.resident.clone());
    let thread = agent.thread("steer");
    let mut stream = thread
        .stream("Run the waiting command.")
        .expect("it starts");
    // The command is running: the turn waits for it.
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|k| matches!(k, ThreadEventKind::ToolCallStarted { .. }))
    {
        let event = tokio::time::timeout(PATIENCE, stream.next_event())
            .await
            .expect("the command starts in time");
        let Some(event) = event else {
            let ended = stream.result().await;
            panic!("the run ended before the command started: {ended:?}, {seen:?}");
        };
        seen.push(event.kind);
    }
    thread
        .steer(FOLLOW_UP, PATIENCE)
        .await
        .expect("the driver delivers the follow-up into the running turn");
    std::fs::write(&release, b"go").expect("the release file");
    let result = tokio::time::timeout(PATIENCE, stream.result())
        .await
        .expect("the turn ends in time")
        .expect("the steered turn succeeds");

    let requests: Vec<RecordedRequest> = (setup.model_requests)()
        .into_iter()
        .skip(before)
        .filter(RecordedRequest::is_model_request)
        .collect();
    assert_eq!(
        requests.len(),
        2,
        "one turn: the command's request and the one after it"
    );
    assert!(
        !requests[0].body().to_string().contains(FOLLOW_UP),
        "the first request came before the follow-up"
    );
    assert!(
        requests[1].body().to_string().contains(FOLLOW_UP),
        "the turn's next model request holds the follow-up: {}",
        requests[1].body()
    );
    assert_eq!(result.output, ANSWER);
    seen.extend(result.events.iter().map(|e| e.kind.clone()));
    let started = seen
        .iter()
        .position(|k| matches!(k, ThreadEventKind::ToolCallStarted { .. }));
    let followed: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, k)| matches!(k, ThreadEventKind::FollowUp { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(followed.len(), 1, "one follow-up event: {seen:?}");
    assert!(started < Some(followed[0]), "{seen:?}");
    assert_eq!(
        seen[followed[0]],
        ThreadEventKind::FollowUp {
            text: FOLLOW_UP.to_owned()
        }
    );
    assert!(result.record_id.is_some(), "the turn persisted");
    assert_eq!(
        thread.steer("too late", PATIENCE).await,
        Err(SteerError::NoTurn)
    );
    agent.close().await;

    // One process per turn cannot take a follow-up: refused at once, whatever runs.
    let per_turn = agent_per_turn(setup);
    assert_eq!(
        per_turn.thread("steer").steer(FOLLOW_UP, PATIENCE).await,
        Err(SteerError::Unsupported)
    );
}

fn agent_per_turn(setup: &SteerSetup<'_>) -> Agent {
    agent(setup, setup.per_turn.clone())
}
