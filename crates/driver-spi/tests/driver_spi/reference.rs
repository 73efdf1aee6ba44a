//! The reference driver: sessions, shared backends, the guard rule, recorded requests,
//! simulated persistent processes and scripted behaviours.

use std::sync::Arc;

use driver_spi::reference::{
    Behavior, Fault, ProcessStats, ReferenceBackend, ReferenceConfig, ReferenceDriver,
};
use driver_spi::{
    CollectingSink, ConfigError, Driver, DriverError, DriverEvent, ExitStatus, FailureKind,
    Request, Response, ResumeRejectReason, SessionContext, SessionState, check_sequence,
};
use run_service::EnvBinding;
use secrecy::ExposeSecret;

use crate::{FIRST, SECOND, block_on, profile, request};

/// Runs one request and returns the events and the result.
async fn run(
    driver: &ReferenceDriver,
    request: Request,
) -> (Vec<DriverEvent>, Result<Response, DriverError>) {
    let sink = Arc::new(CollectingSink::new());
    let result = driver.run(request, sink.clone()).await;
    (sink.events(), result)
}

fn state_of(result: &Result<Response, DriverError>) -> SessionState {
    result
        .as_ref()
        .unwrap()
        .persistable_checkpoint()
        .unwrap()
        .clone()
}

#[test]
fn fresh_then_resumed_turns_continue_one_session() {
    block_on(async {
        let driver = ReferenceDriver::new();
        let (events, first) = run(
            &driver,
            request("r1", &FIRST, SessionContext::start(), profile("e", "s")),
        )
        .await;
        assert_eq!(check_sequence(&events), Ok(()));
        let first = first.unwrap();
        assert_eq!(first.output, "reference turn 1: prompt of r1");
        assert_eq!(first.usage.unwrap().input_tokens, 3);
        let state = first.persistable_checkpoint().unwrap().clone();

        let (events, second) = run(
            &driver,
            request(
                "r2",
                &FIRST,
                SessionContext::continue_or_start(state.clone()),
                profile("e", "s"),
            ),
        )
        .await;
        assert_eq!(check_sequence(&events), Ok(()));
        let second = second.unwrap();
        assert_eq!(
            second.output,
            "reference turn 2: prompt of r2 [earlier: prompt of r1]"
        );
        assert_eq!(
            second.persistable_checkpoint().unwrap().resume_id,
            state.resume_id
        );
        assert_eq!(
            driver.backend().session_turns(&state.resume_id).unwrap(),
            Some(2)
        );
        assert_eq!(
            driver.backend().session_ids().unwrap(),
            vec![state.resume_id]
        );
    });
}

/// The restart scenario the agent crate builds on: two drivers, one provider backend, a new
/// port, env-var name and token after the restart.
#[test]
fn a_second_driver_on_the_shared_backend_resumes_with_the_new_endpoint() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let host1 = ReferenceDriver::with_backend(backend.clone());
        let (_, first) = run(
            &host1,
            request(
                "r1",
                &FIRST,
                SessionContext::start(),
                profile("exact-4101", "ui-v1"),
            ),
        )
        .await;
        let state = state_of(&first);

        let host2 = ReferenceDriver::with_backend(backend.clone());
        assert_ne!(host1.instance_id(), host2.instance_id());
        let (events, second) = run(
            &host2,
            request(
                "r2",
                &SECOND,
                SessionContext::continue_only(state.clone()),
                profile("exact-4202", "ui-v1"),
            ),
        )
        .await;
        assert_eq!(check_sequence(&events), Ok(()));
        assert_eq!(state_of(&second).resume_id, state.resume_id);

        // What reached the second driver: the new URL, env-var name and token only.
        let recorded = backend.last_request().unwrap();
        assert_eq!(recorded.driver_instance(), host2.instance_id());
        assert_eq!(
            recorded.request().mcp[0].transport,
            SECOND.server().transport
        );
        assert_eq!(
            recorded.request().runtime.services[0].url.as_deref(),
            Some(SECOND.url().as_str())
        );
        assert_eq!(recorded.secret_env_names(), vec![SECOND.env_name]);
        assert_eq!(
            recorded.expose_secret_env(SECOND.env_name).as_deref(),
            Some(SECOND.token)
        );
        assert_eq!(recorded.expose_secret_env(FIRST.env_name), None);

        let materialized = backend.last_materialization().unwrap();
        let materialized = materialized.expose_secret();
        assert!(materialized.contains(SECOND.token) && materialized.contains(&SECOND.url()));
        assert!(materialized.contains(SECOND.env_name));
        assert!(!materialized.contains(FIRST.token) && !materialized.contains(&FIRST.url()));
        assert!(!materialized.contains(FIRST.env_name));
        assert_eq!(backend.request_count(), 2);
    });
}

#[test]
fn guard_accepts_an_exact_change_and_rejects_a_session_compatibility_change() {
    block_on(async {
        let driver = ReferenceDriver::new();
        let (_, first) = run(
            &driver,
            request(
                "r1",
                &FIRST,
                SessionContext::start(),
                profile("exact-a", "compat-1"),
            ),
        )
        .await;
        let state = state_of(&first);

        let (events, rejected) = run(
            &driver,
            request(
                "r2",
                &FIRST,
                SessionContext::continue_only(state.clone()),
                profile("exact-a", "compat-2"),
            ),
        )
        .await;
        assert_eq!(
            rejected.unwrap_err(),
            DriverError::ResumeRejected {
                reason: ResumeRejectReason::GuardMismatch
            }
        );
        assert!(events.is_empty(), "a rejection comes before any event");

        let (_, accepted) = run(
            &driver,
            request(
                "r3",
                &SECOND,
                SessionContext::continue_only(state.clone()),
                profile("exact-b", "compat-1"),
            ),
        )
        .await;
        assert_eq!(state_of(&accepted).resume_id, state.resume_id);
    });
}

#[test]
fn the_guard_from_exact_fault_rejects_an_endpoint_rotation() {
    block_on(async {
        let driver = ReferenceDriver::new().with_fault(Fault::GuardFromExactFingerprint);
        let (_, first) = run(
            &driver,
            request(
                "r1",
                &FIRST,
                SessionContext::start(),
                profile("exact-a", "compat-1"),
            ),
        )
        .await;
        let (_, second) = run(
            &driver,
            request(
                "r2",
                &SECOND,
                SessionContext::continue_only(state_of(&first)),
                profile("exact-b", "compat-1"),
            ),
        )
        .await;
        assert_eq!(
            second.unwrap_err(),
            DriverError::resume_rejected(ResumeRejectReason::GuardMismatch)
        );
    });
}

#[test]
fn unknown_expired_missing_and_malformed_sessions_are_rejected() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone());
        let p = profile("e", "s");
        let (_, first) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        let state = state_of(&first);
        let reason = |result: Result<Response, DriverError>| match result {
            Err(DriverError::ResumeRejected { reason }) => reason,
            other => panic!("expected a rejection, got {other:?}"),
        };

        let mut unknown = state.clone();
        unknown.resume_id = "ref-session-999".to_owned();
        let (_, r) = run(
            &driver,
            request("r2", &FIRST, SessionContext::continue_only(unknown), p),
        )
        .await;
        assert_eq!(reason(r), ResumeRejectReason::UnknownSession);

        let mut blank = state.clone();
        blank.resume_id = " ".to_owned();
        let (_, r) = run(
            &driver,
            request("r3", &FIRST, SessionContext::continue_only(blank), p),
        )
        .await;
        assert_eq!(reason(r), ResumeRejectReason::InvalidState);

        let mut only = SessionContext::continue_only(state.clone());
        only.state = None;
        let (_, r) = run(&driver, request("r4", &FIRST, only, p)).await;
        assert_eq!(reason(r), ResumeRejectReason::MissingState);

        let mut fork = SessionContext::fork(state.clone());
        fork.state = None;
        let (_, r) = run(&driver, request("r5", &FIRST, fork, p)).await;
        assert_eq!(reason(r), ResumeRejectReason::MissingState);

        assert!(backend.expire_session(&state.resume_id).unwrap());
        let (_, r) = run(
            &driver,
            request(
                "r6",
                &FIRST,
                SessionContext::continue_only(state.clone()),
                p,
            ),
        )
        .await;
        assert_eq!(reason(r), ResumeRejectReason::Expired);

        assert!(backend.forget_session(&state.resume_id).unwrap());
        assert!(!backend.forget_session(&state.resume_id).unwrap());
        assert!(!backend.expire_session(&state.resume_id).unwrap());
        let (_, r) = run(
            &driver,
            request("r7", &FIRST, SessionContext::continue_only(state), p),
        )
        .await;
        assert_eq!(reason(r), ResumeRejectReason::UnknownSession);

        // Every request was recorded, rejected ones included.
        assert_eq!(backend.request_count(), 7);
    });
}

#[test]
fn fork_creates_a_new_session_and_keeps_the_parent() {
    block_on(async {
        let driver = ReferenceDriver::new();
        let p = profile("e", "s");
        let (_, first) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        let parent = state_of(&first);
        let (events, forked) = run(
            &driver,
            request("r2", &FIRST, SessionContext::fork(parent.clone()), p),
        )
        .await;
        assert_eq!(check_sequence(&events), Ok(()));
        let child = state_of(&forked);
        assert_ne!(child.resume_id, parent.resume_id);
        assert_eq!(
            forked.unwrap().output,
            "reference turn 2: prompt of r2 [earlier: prompt of r1]"
        );
        assert_eq!(
            driver.backend().session_turns(&parent.resume_id).unwrap(),
            Some(1)
        );
        assert_eq!(
            driver.backend().session_turns(&child.resume_id).unwrap(),
            Some(2)
        );
    });
}

#[test]
fn stateless_runs_return_no_checkpoint() {
    block_on(async {
        let driver = ReferenceDriver::new();
        let (events, result) = run(
            &driver,
            request("r1", &FIRST, SessionContext::stateless(), profile("e", "s")),
        )
        .await;
        assert_eq!(check_sequence(&events), Ok(()));
        assert!(result.unwrap().checkpoint.is_none());
        assert!(driver.backend().session_ids().unwrap().is_empty());
    });
}

#[test]
fn persistent_processes_are_reused_while_the_signature_matches_and_replaced_otherwise() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone());
        let p = profile("e", "s");
        let (_, first) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        let state = state_of(&first);
        let stats = backend.process_stats();
        assert_eq!((stats.spawned, stats.live, stats.reused), (1, 1, 0));

        let (_, _) = run(
            &driver,
            request(
                "r2",
                &FIRST,
                SessionContext::continue_only(state.clone()),
                p,
            ),
        )
        .await;
        let stats = backend.process_stats();
        assert_eq!(
            (stats.spawned, stats.live, stats.reused, stats.replaced),
            (1, 1, 1, 0)
        );

        // New endpoint and token: the process is replaced before the prompt is sent.
        let (_, third) = run(
            &driver,
            request(
                "r3",
                &SECOND,
                SessionContext::continue_only(state.clone()),
                profile("e2", "s"),
            ),
        )
        .await;
        assert_eq!(
            state_of(&third).resume_id,
            state.resume_id,
            "same provider session"
        );
        let stats = backend.process_stats();
        assert_eq!(
            (stats.spawned, stats.live, stats.replaced, stats.closed),
            (2, 1, 1, 1)
        );

        // Each prompt went to exactly one process, once; r3's went to the new process.
        let deliveries = backend.deliveries();
        assert_eq!(deliveries.len(), 3);
        for run_id in ["r1", "r2", "r3"] {
            assert_eq!(backend.deliveries_of(&run_service::RunId::new(run_id)), 1);
        }
        assert_eq!(deliveries[0].process_id, deliveries[1].process_id);
        assert_ne!(deliveries[1].process_id, deliveries[2].process_id);
        let materialized = backend.last_materialization().unwrap();
        assert!(materialized.expose_secret().contains(SECOND.token));
        assert!(!materialized.expose_secret().contains(FIRST.token));

        // Close: idempotent, and a later run spawns again.
        let lifecycle = driver.process_lifecycle().unwrap();
        lifecycle.close_processes().await.unwrap();
        lifecycle.close_processes().await.unwrap();
        let stats = backend.process_stats();
        assert_eq!((stats.live, stats.closed), (0, 2));
        let (_, _) = run(
            &driver,
            request(
                "r4",
                &SECOND,
                SessionContext::continue_only(state),
                profile("e2", "s"),
            ),
        )
        .await;
        assert_eq!(backend.process_stats().live, 1);
        assert_eq!(backend.process_stats().spawned, 3);
    });
}

#[test]
fn closing_one_driver_leaves_the_other_drivers_processes() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let a = ReferenceDriver::with_backend(backend.clone());
        let b = ReferenceDriver::with_backend(backend.clone());
        let p = profile("e", "s");
        let _ = run(&a, request("r1", &FIRST, SessionContext::start(), p)).await;
        let _ = run(&b, request("r2", &FIRST, SessionContext::start(), p)).await;
        assert_eq!(backend.process_stats().live, 2);
        a.process_lifecycle()
            .unwrap()
            .close_processes()
            .await
            .unwrap();
        assert_eq!(backend.process_stats().live, 1);
    });
}

#[test]
fn the_stale_process_fault_keeps_the_old_configuration() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver =
            ReferenceDriver::with_backend(backend.clone()).with_fault(Fault::ReuseStaleProcess);
        let p = profile("e", "s");
        let (_, first) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        let _ = run(
            &driver,
            request(
                "r2",
                &SECOND,
                SessionContext::continue_only(state_of(&first)),
                p,
            ),
        )
        .await;
        assert_eq!(backend.process_stats().replaced, 0);
        let materialized = backend.last_materialization().unwrap();
        assert!(
            materialized.expose_secret().contains(FIRST.token),
            "stale by design"
        );
    });
}

#[test]
fn without_persistent_processes_every_run_is_one_shot() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver =
            ReferenceDriver::with_backend(backend.clone()).with_persistent_processes(false);
        assert!(!driver.descriptor().capabilities.persistent_processes);
        assert!(driver.process_lifecycle().is_none());
        let p = profile("e", "s");
        let (_, first) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        let _ = run(
            &driver,
            request(
                "r2",
                &FIRST,
                SessionContext::continue_only(state_of(&first)),
                p,
            ),
        )
        .await;
        let stats: ProcessStats = backend.process_stats();
        assert_eq!(
            (
                stats.spawned,
                stats.closed,
                stats.live,
                stats.reused,
                stats.replaced
            ),
            (2, 2, 0, 0, 0)
        );
        assert_ne!(
            backend.deliveries()[0].process_id,
            backend.deliveries()[1].process_id
        );
    });
}

#[test]
fn scripted_failures_rejections_and_event_sequences() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone());
        let p = profile("e", "s");
        backend.push_behavior(Behavior::Fail(FailureKind::RateLimited));
        backend.push_behavior(Behavior::FailedResponse(FailureKind::Limit));
        backend.push_behavior(Behavior::RejectResume(ResumeRejectReason::Expired));
        backend.push_behavior(Behavior::Events(vec![
            DriverEvent::text("no start"),
            DriverEvent::RunFinished,
            DriverEvent::text("late"),
        ]));
        backend.push_behavior(Behavior::CallTool {
            name: "lookup".into(),
            arguments: "{\"q\":1}".into(),
            result: "found".into(),
        });
        assert_eq!(backend.pending_behaviors(), 5);

        let (events, r) = run(&driver, request("r1", &FIRST, SessionContext::start(), p)).await;
        match r {
            Err(DriverError::Failed(failure)) => assert_eq!(failure.kind, FailureKind::RateLimited),
            other => panic!("{other:?}"),
        }
        assert_eq!(check_sequence(&events), Ok(()));
        assert_eq!(
            events.last(),
            Some(&DriverEvent::RunFailed {
                kind: FailureKind::RateLimited
            })
        );

        let (events, r) = run(&driver, request("r2", &FIRST, SessionContext::start(), p)).await;
        let r = r.unwrap();
        assert_eq!(r.exit, ExitStatus::Code(1));
        assert_eq!(r.failure.as_ref().unwrap().kind, FailureKind::Limit);
        assert!(!r.checkpoint.as_ref().unwrap().valid);
        assert_eq!(r.persistable_checkpoint(), None);
        assert_eq!(check_sequence(&events), Ok(()));

        let (events, r) = run(&driver, request("r3", &FIRST, SessionContext::start(), p)).await;
        assert_eq!(
            r.unwrap_err(),
            DriverError::resume_rejected(ResumeRejectReason::Expired)
        );
        assert!(events.is_empty());

        let (events, r) = run(&driver, request("r4", &FIRST, SessionContext::start(), p)).await;
        assert_eq!(
            events,
            vec![
                DriverEvent::text("no start"),
                DriverEvent::RunFinished,
                DriverEvent::text("late")
            ],
            "emitted exactly as scripted"
        );
        assert!(check_sequence(&events).is_err());
        assert_eq!(r.unwrap().output, "no startlate");

        let (events, r) = run(&driver, request("r5", &FIRST, SessionContext::start(), p)).await;
        assert_eq!(check_sequence(&events), Ok(()));
        assert!(
            matches!(&events[1], DriverEvent::ToolCallStarted { name, .. } if name == "lookup")
        );
        assert!(r.unwrap().is_clean());
        assert_eq!(backend.pending_behaviors(), 0);

        // The queue is empty: back to replies.
        let (_, r) = run(&driver, request("r6", &FIRST, SessionContext::start(), p)).await;
        assert!(r.unwrap().output.starts_with("reference turn 1"));
    });
}

#[test]
fn a_stalled_run_waits_for_release() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = Arc::new(ReferenceDriver::with_backend(backend.clone()));
        backend.push_behavior(Behavior::Stall);
        let sink = Arc::new(CollectingSink::new());
        let task = {
            let (driver, sink) = (driver.clone(), sink.clone());
            tokio::spawn(async move {
                driver
                    .run(
                        request("r1", &FIRST, SessionContext::start(), profile("e", "s")),
                        sink,
                    )
                    .await
            })
        };
        backend.wait_for_stalled(1).await;
        assert_eq!(backend.stalled_runs(), 1);
        assert_eq!(sink.events(), vec![DriverEvent::RunStarted]);
        backend.release_stalled();
        let response = task.await.unwrap().unwrap();
        assert!(response.is_clean());
        assert_eq!(backend.stalled_runs(), 0);
        assert_eq!(check_sequence(&sink.events()), Ok(()));
    });
}

#[test]
fn dropping_a_stalled_run_cancels_it_without_a_terminal_event() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone());
        backend.push_behavior(Behavior::Stall);
        let sink = Arc::new(CollectingSink::new());
        let mut run = driver.run(
            request("r1", &FIRST, SessionContext::start(), profile("e", "s")),
            sink.clone(),
        );
        tokio::select! {
            _ = &mut run => panic!("a stalled run must not finish"),
            () = backend.wait_for_stalled(1) => {}
        }
        drop(run);
        assert_eq!(backend.stalled_runs(), 0);
        assert_eq!(sink.events(), vec![DriverEvent::RunStarted]);
        // A later release does not resurrect anything, and the next run replies.
        backend.release_stalled();
        let (_, r) = self::run(
            &driver,
            request("r2", &FIRST, SessionContext::start(), profile("e", "s")),
        )
        .await;
        assert!(r.unwrap().is_clean());
    });
}

#[test]
fn config_validation_and_fingerprint() {
    block_on(async {
        let bad = ReferenceDriver::new().with_config(ReferenceConfig::new().with_command(" "));
        assert_eq!(bad.validate_config(), Err(ConfigError::missing("command")));
        let (events, r) = run(
            &bad,
            request("r1", &FIRST, SessionContext::start(), profile("e", "s")),
        )
        .await;
        assert!(matches!(r, Err(DriverError::InvalidConfig(_))));
        assert!(events.is_empty());
        let empty_flag = ReferenceDriver::new().with_config(ReferenceConfig::new().with_flag(""));
        assert_eq!(empty_flag.validate_config().unwrap_err().field(), "flags");
    });

    let config = |key: &str| {
        ReferenceConfig::new()
            .with_model("m")
            .with_flag("--x")
            .with_env(EnvBinding::new("API_KEY", key.to_owned()))
    };
    let fp = |d: &ReferenceDriver| d.config_fingerprinter().unwrap().config_fingerprint();
    let a = ReferenceDriver::new().with_config(config("key-1"));
    let b = ReferenceDriver::new().with_config(config("key-1"));
    let c = ReferenceDriver::new().with_config(config("key-2"));
    assert_eq!(fp(&a), fp(&b), "stable across instances and backends");
    assert_eq!(
        fp(&a),
        fp(&c),
        "a secret's value never enters the fingerprint"
    );
    assert_ne!(fp(&a), fp(&ReferenceDriver::new()));
}

#[test]
fn the_config_model_applies_unless_the_request_overrides_it() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone())
            .with_config(ReferenceConfig::new().with_model("config-model"));
        let mut r = request("r1", &FIRST, SessionContext::stateless(), profile("e", "s"));
        r.model = None;
        let _ = run(&driver, r).await;
        let m = backend.last_materialization().unwrap();
        assert!(m.expose_secret().contains("\"model\":\"config-model\""));
        let _ = run(
            &driver,
            request("r2", &FIRST, SessionContext::stateless(), profile("e", "s")),
        )
        .await;
        let m = backend.last_materialization().unwrap();
        assert!(m.expose_secret().contains("\"model\":\"test-model\""));
    });
}
