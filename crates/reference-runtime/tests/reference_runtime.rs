//! The reference runtime on disk: the driver kit passes on it, and drivers of separate
//! "processes" (each with its own backend, on one namespace) resume, fork and reject as one
//! process does with the in-memory table.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::conformance::{self, ReferenceFactory};
use driver_spi::reference::{ReferenceBackend, ReferenceDriver, ReferenceSession, SessionTable};
use driver_spi::{
    CollectingSink, Driver, DriverError, FailureKind, ProfilePayload, Request, ResumeRejectReason,
    RuntimePayload, SessionContext, SessionState,
};
use reference_runtime::{DESCRIPTOR, FileSessions};
use run_service::{EnvBinding, RunId};
use runtime_env::{CredentialNamespace, RuntimeEnv, RuntimeEnvBuilder};

const K: Kind = Kind::new("reference-runtime tests 2026-12-02 profile v1");

fn profile() -> ProfilePayload {
    ProfilePayload::new(
        Fingerprint::of(K, |e| e.str("exact")),
        Fingerprint::of(K, |e| e.str("session")),
    )
}

fn env(base: &Path) -> RuntimeEnvBuilder {
    let namespace: CredentialNamespace = "user:alice".parse().unwrap();
    RuntimeEnv::builder(base.join("env"), namespace, base.to_path_buf())
}

fn sessions(base: &Path) -> FileSessions {
    FileSessions::new(Arc::new(env(base).runtimes([&DESCRIPTOR]).build().unwrap())).unwrap()
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// A driver as a new process builds it: its own backend, the namespace's session files.
fn process(base: &Path) -> ReferenceDriver {
    reference_runtime::driver(env(base)).unwrap()
}

/// Starts a session ("hello") in a new process; its stored state.
async fn start_in_a_new_process(base: &Path) -> SessionState {
    let first = turn(&process(base), "r1", "hello", SessionContext::start())
        .await
        .unwrap();
    state(&first)
}

async fn turn(
    driver: &ReferenceDriver,
    run: &str,
    prompt: &str,
    session: SessionContext,
) -> Result<driver_spi::Response, DriverError> {
    let request = Request::new(RunId::new(run), prompt, profile()).with_session(session);
    driver.run(request, Arc::new(CollectingSink::new())).await
}

fn state(response: &driver_spi::Response) -> SessionState {
    response.persistable_checkpoint().unwrap().clone()
}

/// `cargo xtask conformance` runs this by name: every clause passes on the file table.
/// The driver is bound to the namespace its session files live in, so an agent on it owns
/// the Threads it writes in that namespace's name.
#[test]
fn the_driver_is_bound_to_its_namespace() {
    let base = tempfile::tempdir().unwrap();
    assert_eq!(
        process(base.path()).credential_namespace(),
        Some("user:alice")
    );
}

#[test]
fn conformance_on_disk() {
    let base = tempfile::tempdir().unwrap();
    let backend = ReferenceBackend::with_sessions(sessions(base.path()));
    let factory = ReferenceFactory::with_backend(backend);
    let report = block_on(conformance::run(&factory));
    println!("{report}");
    // The reference driver keeps no process to warm: CAP-05 judges its refusal.
    report.assert_passed_except(&[conformance::Clause::Prw01, conformance::Clause::Prw02]);
}

#[test]
fn a_later_process_resumes_forks_and_is_refused_once_the_session_is_gone() {
    let base = tempfile::tempdir().unwrap();
    block_on(async {
        let first = turn(
            &process(base.path()),
            "r1",
            "hello",
            SessionContext::start(),
        )
        .await
        .unwrap();
        assert_eq!(first.output, "reference turn 1: hello");
        let started = state(&first);

        // Another process resumes: the turn number and the history come from disk.
        let second = turn(
            &process(base.path()),
            "r2",
            "again",
            SessionContext::continue_only(started.clone()),
        )
        .await
        .unwrap();
        assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
        assert_eq!(state(&second).resume_id, started.resume_id);

        // A third forks it: a new session with the history, the parent untouched.
        let forked = turn(
            &process(base.path()),
            "r3",
            "branch",
            SessionContext::fork(state(&second)),
        )
        .await
        .unwrap();
        assert_eq!(
            forked.output,
            "reference turn 3: branch [earlier: hello | again]"
        );
        let child = state(&forked);
        assert_ne!(child.resume_id, started.resume_id);
        let table = sessions(base.path());
        assert_eq!(
            table.get(&started.resume_id).unwrap().map(|s| s.turns),
            Some(2)
        );
        let mut ids = vec![started.resume_id.clone(), child.resume_id.clone()];
        ids.sort();
        assert_eq!(table.ids().unwrap(), ids);

        // The session files are gone: a later process is refused as a CLI that lost them.
        std::fs::remove_file(table.dir().join(format!("{}.json", started.resume_id))).unwrap();
        let refused = turn(
            &process(base.path()),
            "r4",
            "lost",
            SessionContext::continue_only(state(&second)),
        )
        .await;
        assert!(
            matches!(
                refused,
                Err(DriverError::ResumeRejected {
                    reason: ResumeRejectReason::UnknownSession
                })
            ),
            "{refused:?}"
        );
    });
}

#[test]
fn an_expired_session_is_refused_by_every_later_process() {
    let base = tempfile::tempdir().unwrap();
    block_on(async {
        let started = start_in_a_new_process(base.path()).await;
        assert!(
            process(base.path())
                .backend()
                .expire_session(&started.resume_id)
                .unwrap()
        );
        let refused = turn(
            &process(base.path()),
            "r2",
            "again",
            SessionContext::continue_only(started),
        )
        .await;
        assert!(
            matches!(
                refused,
                Err(DriverError::ResumeRejected {
                    reason: ResumeRejectReason::Expired
                })
            ),
            "{refused:?}"
        );
    });
}

#[test]
fn session_files_are_private_and_hold_no_secret_of_the_request() {
    let base = tempfile::tempdir().unwrap();
    let canary = "canary-reference-runtime-9f3b7d21c4e6";
    block_on(async {
        let request = Request::new(RunId::new("r1"), "hello", profile())
            .with_session(SessionContext::start())
            .with_runtime(
                RuntimePayload::default().with_secret_env(EnvBinding::new("DOCS_TOKEN", canary)),
            );
        process(base.path())
            .run(request, Arc::new(CollectingSink::new()))
            .await
            .unwrap();
    });
    let dir = sessions(base.path()).dir();
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(files.len(), 1);
    for file in files {
        let meta = file.metadata().unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.contains("hello"), "{text}");
        assert!(!text.contains(canary), "{text}");
    }
}

#[test]
fn an_id_the_table_could_not_have_issued_is_unknown_never_a_path() {
    let base = tempfile::tempdir().unwrap();
    let mut table = sessions(base.path());
    // A file outside the sessions directory that a path-shaped id would reach.
    std::fs::write(base.path().join("outside.json"), br#"{"turns":7}"#).unwrap();
    for id in [
        "../../../outside",
        "ref-../../outside",
        "ref-",
        "ref-UPPER",
        "",
        "ref-a/b",
        &format!("ref-{}", "a".repeat(80)),
    ] {
        assert_eq!(table.get(id).unwrap(), None, "{id}");
        assert!(!table.remove(id).unwrap(), "{id}");
        assert!(table.update(id, &ReferenceSession::new(1)).is_err(), "{id}");
    }
    assert!(base.path().join("outside.json").exists());

    // Through the driver, a tampered stored state is an unknown session.
    block_on(async {
        let refused = turn(
            &process(base.path()),
            "r1",
            "hello",
            SessionContext::continue_only(SessionState::new("../../../outside")),
        )
        .await;
        assert!(
            matches!(refused, Err(DriverError::ResumeRejected { .. })),
            "{refused:?}"
        );
    });
}

#[test]
fn a_corrupt_session_file_fails_the_run_with_a_typed_error_naming_no_path() {
    let base = tempfile::tempdir().unwrap();
    block_on(async {
        let started = start_in_a_new_process(base.path()).await;
        let file = sessions(base.path())
            .dir()
            .join(format!("{}.json", started.resume_id));
        std::fs::write(&file, b"not json").unwrap();
        let failed = turn(
            &process(base.path()),
            "r2",
            "again",
            SessionContext::continue_only(started),
        )
        .await;
        let Err(DriverError::Failed(failure)) = failed else {
            panic!("expected a failed run, got {failed:?}");
        };
        assert_eq!(failure.kind, FailureKind::Process);
        let message = &failure.message;
        assert!(message.contains("decode a session"), "{message}");
        assert!(
            !message.contains(base.path().to_str().unwrap()),
            "{message}"
        );
        // The file is left as it was: nothing is lost.
        assert_eq!(std::fs::read(&file).unwrap(), b"not json");
    });
}
