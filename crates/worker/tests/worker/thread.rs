//! A session on the reference runtime through the worker: it runs, and after the worker is
//! killed, resumes on a new worker from the stored session.

use std::sync::Arc;

use driver_spi::reference::ReferenceDriver;
use driver_spi::{Driver, Request, SessionContext, check_sequence};
use run_service::RunId;

use crate::support::{Watch, kill, namespace, profile, reference, worker_driver};

#[tokio::test]
async fn a_session_resumes_on_a_new_worker_after_the_worker_is_killed() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let sink = Arc::new(Watch::default());
    let first = driver
        .run(
            Request::new(RunId::new("r1"), "hello", profile()),
            sink.clone(),
        )
        .await
        .expect("the first turn");
    assert_eq!(first.output, "reference turn 1: hello");
    assert_eq!(check_sequence(&sink.events()), Ok(()));
    let state = first.persistable_checkpoint().expect("resumable").clone();
    let pid = workers.worker_pid(&namespace()).expect("a worker ran");

    kill(pid).await;
    let resumed = Request::new(RunId::new("r2"), "again", profile())
        .with_session(SessionContext::continue_only(state.clone()));
    let second = driver
        .run(resumed, Arc::new(Watch::default()))
        .await
        .expect("the resumed turn");
    assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
    assert_eq!(
        second.persistable_checkpoint().map(|s| s.resume_id.clone()),
        Some(state.resume_id.clone())
    );
    let next = workers.worker_pid(&namespace()).expect("a new worker");
    assert_ne!(next, pid, "a new worker served the resumed turn");
}

#[tokio::test]
async fn the_host_side_is_the_same_configuration_as_in_process() {
    let base = tempfile::tempdir().expect("tempdir");
    let (driver, _workers) = worker_driver(base.path(), reference(base.path(), &[]));
    let env = runtime_env::RuntimeEnv::builder(base.path().join("env"), namespace(), base.path());
    let in_process: ReferenceDriver = reference_runtime::driver(env).expect("in process");
    assert_eq!(driver.descriptor(), in_process.descriptor());
    assert_eq!(
        driver
            .config_fingerprinter()
            .map(|f| f.config_fingerprint()),
        in_process
            .config_fingerprinter()
            .map(|f| f.config_fingerprint())
    );
    assert_eq!(
        driver.credential_namespace(),
        in_process.credential_namespace()
    );
    // A session started in process resumes through the worker.
    let sink = Arc::new(Watch::default());
    let first = in_process
        .run(
            Request::new(RunId::new("r1"), "hello", profile()),
            sink.clone(),
        )
        .await
        .expect("in process");
    let state = first.persistable_checkpoint().expect("resumable").clone();
    let codec = driver.session_codec().expect("a codec");
    let theirs = in_process.session_codec().expect("a codec");
    assert_eq!(codec.name(), theirs.name());
    let params = codec
        .to_params(Some(&state))
        .expect("encodes")
        .expect("params");
    assert_eq!(
        theirs.to_params(Some(&state)).ok().flatten().as_ref(),
        Some(&params)
    );
    assert_eq!(
        codec.guard_fingerprint(&params),
        theirs.guard_fingerprint(&params)
    );
    let resumed = Request::new(RunId::new("r2"), "again", profile())
        .with_session(SessionContext::continue_only(state));
    let second = driver.run(resumed, sink).await.expect("through the worker");
    assert_eq!(second.output, "reference turn 2: again [earlier: hello]");
}
