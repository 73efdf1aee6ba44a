//! The permission and approval scenario every CLI driver with approvals runs against its
//! real binary (issue 27): the mock model asks to write a file with the CLI's own tool, and
//! - under a policy that asks, the host **denies** (the file does not exist and the model sees
//!   the denial) and then **approves** (the file exists), in each process mode given;
//! - under a policy that allows it, the file is written without a request;
//! - under a policy that forbids it, there is no request and no file.
//!
//! Every run is checked for its approval events: exactly one request and its outcome when the
//! policy asks, none otherwise.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{
    ApprovalOutcome, ApprovalTicket, Approvals, CollectingSink, Driver, DriverEvent,
    PermissionPolicy, ProfilePayload, Request, SessionContext,
};
use run_service::RunId;

use crate::{RecordedRequest, Reply};

/// The reason the scenario's host denies with.
pub const DENY_REASON: &str = "the host does not allow this file";

/// What a CLI's approval test supplies.
pub struct ApprovalSetup<'a> {
    /// The runtime's working directory: the files are written here.
    pub workspace: &'a Path,
    /// Builds the CLI's driver, resident (`true`) or one process per turn; the scenario
    /// builds each once.
    pub driver: &'a (dyn Fn(bool) -> Arc<dyn Driver> + Sync),
    /// The model's call of the CLI's own tool that creates the file at this path.
    pub write_call: &'a (dyn Fn(&Path) -> Reply + Sync),
    /// Queues a reply on the mock model.
    pub push_reply: &'a (dyn Fn(Reply) + Sync),
    /// The mock's model requests so far.
    pub model_requests: &'a (dyn Fn() -> Vec<RecordedRequest> + Sync),
    /// A policy under which the write asks the host.
    pub ask: PermissionPolicy,
    /// A policy under which the write runs without asking.
    pub allow: PermissionPolicy,
    /// A policy under which the write never runs and never asks.
    pub forbid: PermissionPolicy,
    /// What the model's tool result holds after the host's denial (the CLI's words, or
    /// [`DENY_REASON`] where the CLI passes the host's reason on).
    pub denial_seen: &'a str,
    /// The process modes the asking runs are exercised in (`true`: resident).
    pub ask_modes: &'a [bool],
}

impl std::fmt::Debug for ApprovalSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalSetup")
            .field("workspace", &self.workspace)
            .field("ask", &self.ask)
            .field("allow", &self.allow)
            .field("forbid", &self.forbid)
            .finish_non_exhaustive()
    }
}

/// How the scenario's host answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Host {
    Approve,
    Deny,
}

/// One run's observations.
struct Observed {
    file: PathBuf,
    events: Vec<DriverEvent>,
    tickets: usize,
    output: String,
}

impl Observed {
    fn outcomes(&self) -> Vec<ApprovalOutcome> {
        self.events
            .iter()
            .filter_map(|e| match e {
                DriverEvent::ApprovalResolved { outcome, .. } => Some(*outcome),
                _ => None,
            })
            .collect()
    }

    fn requested(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, DriverEvent::ApprovalRequested { .. }))
            .count()
    }
}

const KIND: Kind = Kind::new("test-kit 2026-12-03 approvals-profile v1");

/// A temporary directory and its `workspace` subdirectory (created), for a setup.
///
/// # Panics
/// When the directory cannot be made.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("the workspace directory");
    (dir, workspace)
}

/// A [`write_call`](ApprovalSetup::write_call) for a CLI whose file-writing tool is `Write`
/// with `file_path` and `content` (Claude Code, CodeBuddy): [`Reply::claude_write`].
pub fn write_tool(path: &Path) -> Reply {
    Reply::claude_write(path, "written by the model\n")
}

/// The scenario's drivers, one per process mode, built on first use.
struct Drivers<'a> {
    build: &'a (dyn Fn(bool) -> Arc<dyn Driver> + Sync),
    built: Mutex<[Option<Arc<dyn Driver>>; 2]>,
}

impl Drivers<'_> {
    fn get(&self, resident: bool) -> Arc<dyn Driver> {
        let mut built = self
            .built
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        built[usize::from(resident)]
            .get_or_insert_with(|| (self.build)(resident))
            .clone()
    }
}

/// One stateless run whose model writes `approval-<label>.txt` under `policy`.
async fn run(
    setup: &ApprovalSetup<'_>,
    drivers: &Drivers<'_>,
    label: &str,
    resident: bool,
    policy: PermissionPolicy,
    host: Host,
) -> Observed {
    let file = setup.workspace.join(format!("approval-{label}.txt"));
    let _ = std::fs::remove_file(&file);
    (setup.push_reply)((setup.write_call)(&file));
    (setup.push_reply)(Reply::text("done"));
    let tickets = Arc::new(Mutex::new(0usize));
    let counted = tickets.clone();
    let approvals = Approvals::new(Arc::new(move |ticket: ApprovalTicket| {
        *counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        let _ = match host {
            Host::Approve => ticket.approve(),
            Host::Deny => ticket.deny(DENY_REASON),
        };
    }));
    let fp = Fingerprint::of(KIND, |e| e.str(label));
    let request = Request::new(
        RunId::new(format!("approval-{label}")),
        format!("Create the file {}", file.display()),
        ProfilePayload::new(fp, fp),
    )
    .with_session(SessionContext::stateless())
    .with_workspace(setup.workspace.to_string_lossy())
    .with_permissions(policy)
    .with_approvals(approvals);
    let sink = Arc::new(CollectingSink::new());
    let response = drivers
        .get(resident)
        .run(request, sink.clone())
        .await
        .unwrap_or_else(|e| panic!("{label}: the run failed: {e}"));
    assert!(response.is_clean(), "{label}: {:?}", response.failure);
    let tickets = *tickets
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let output = (setup.model_requests)()
        .last()
        .map(|r| {
            r.function_call_outputs()
                .into_iter()
                .map(|o| o.output)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    Observed {
        file,
        events: sink.events(),
        tickets,
        output,
    }
}

/// Runs the scenario (see the [module docs](self)); panics on the first broken expectation.
pub async fn run_approval_scenario(setup: &ApprovalSetup<'_>) {
    let drivers = &Drivers {
        build: setup.driver,
        built: Mutex::new([None, None]),
    };
    for &resident in setup.ask_modes {
        let mode = if resident { "resident" } else { "per-turn" };

        let denied = run(
            setup,
            drivers,
            &format!("deny-{mode}"),
            resident,
            setup.ask,
            Host::Deny,
        )
        .await;
        assert!(!denied.file.exists(), "{mode}: denied, yet the file exists");
        assert_eq!(denied.tickets, 1, "{mode}: one request reached the host");
        assert_eq!(denied.requested(), 1, "{mode}: {:?}", denied.events);
        assert_eq!(denied.outcomes(), [ApprovalOutcome::Denied], "{mode}");
        assert!(
            denied.output.contains(setup.denial_seen),
            "{mode}: the model did not see the denial: {:?}",
            denied.output
        );

        let approved = run(
            setup,
            drivers,
            &format!("approve-{mode}"),
            resident,
            setup.ask,
            Host::Approve,
        )
        .await;
        assert!(approved.file.exists(), "{mode}: approved, yet no file");
        assert_eq!(approved.tickets, 1, "{mode}: one request reached the host");
        assert_eq!(approved.outcomes(), [ApprovalOutcome::Approved], "{mode}");
    }

    let allowed = run(setup, drivers, "allow", false, setup.allow, Host::Deny).await;
    assert!(allowed.file.exists(), "allowed, yet no file");
    assert_eq!(allowed.tickets, 0, "allowed: no request reaches the host");
    assert_eq!(allowed.requested(), 0, "{:?}", allowed.events);

    let forbidden = run(setup, drivers, "forbid", false, setup.forbid, Host::Approve).await;
    assert!(!forbidden.file.exists(), "forbidden, yet the file exists");
    assert_eq!(
        forbidden.tickets, 0,
        "forbidden: no request reaches the host"
    );
    assert_eq!(forbidden.requested(), 0, "{:?}", forbidden.events);
}
