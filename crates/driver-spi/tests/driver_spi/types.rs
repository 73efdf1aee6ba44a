//! Data types: descriptor and capability checks, responses and checkpoints, errors, requests.

use std::sync::Arc;

use driver_spi::reference::ReferenceDriver;
use driver_spi::{
    Capabilities, Checkpoint, CodecError, ConfigError, Descriptor, Driver, DriverError, ExitStatus,
    FailureKind, ProgramProblem, ProgramUnavailable, Redactor, Response, ResumeRejectReason,
    RunFailure, SessionContext, SessionMode, SessionState, Unsupported, Usage,
};
use run_service::{EnvBinding, McpServer, TransportKind};

use crate::{FIRST, SECOND, profile, request};

#[test]
fn driver_is_object_safe_and_shareable() {
    let driver: Arc<dyn Driver> = Arc::new(ReferenceDriver::new());
    let descriptor = driver.descriptor();
    assert_eq!(descriptor.driver_type, "reference");
    assert!(descriptor.capabilities.resume);
    assert!(driver.session_codec().is_some());
    assert!(driver.config_fingerprinter().is_some());
    assert!(driver.process_lifecycle().is_some());
}

#[test]
fn capabilities_check_rejects_what_is_not_declared() {
    let stateless = Capabilities::none().with_mcp_transport(TransportKind::StreamableHttp);
    let fresh = request("r1", &FIRST, SessionContext::start(), profile("e", "s"));
    assert_eq!(stateless.check(&fresh), Ok(()));

    let resumed = request(
        "r2",
        &FIRST,
        SessionContext::continue_or_start(SessionState::new("s-1")),
        profile("e", "s"),
    );
    assert_eq!(stateless.check(&resumed), Err(Unsupported::Resume));
    let only = request(
        "r3",
        &FIRST,
        SessionContext::continue_only(SessionState::new("s-1")),
        profile("e", "s"),
    );
    assert_eq!(stateless.check(&only), Err(Unsupported::Resume));
    let fork = request(
        "r4",
        &FIRST,
        SessionContext::fork(SessionState::new("s-1")),
        profile("e", "s"),
    );
    assert_eq!(stateless.check(&fork), Err(Unsupported::Fork));
    assert_eq!(
        stateless
            .clone()
            .with_resume(true)
            .with_fork(true)
            .check(&fork),
        Ok(())
    );

    let stdio_only = Capabilities::none().with_mcp_transport(TransportKind::Stdio);
    assert_eq!(
        stdio_only.check(&fresh),
        Err(Unsupported::McpTransport(TransportKind::StreamableHttp))
    );
    let sse = fresh
        .clone()
        .with_mcp([McpServer::sse("x", "http://127.0.0.1:1/sse")]);
    assert_eq!(
        stdio_only.check(&sse),
        Err(Unsupported::McpTransport(TransportKind::Sse))
    );
    assert_eq!(
        Unsupported::McpTransport(TransportKind::Sse).to_string(),
        "MCP transport sse is not supported by this driver"
    );
}

#[test]
fn descriptor_builders_set_every_capability() {
    let caps = Capabilities::none()
        .with_resume(true)
        .with_fork(true)
        .with_streaming(true)
        .with_persistent_processes(true)
        .with_mcp_transport(TransportKind::Sse);
    let d = Descriptor::new("codex", "Codex CLI").with_capabilities(caps.clone());
    assert_eq!(d.capabilities, caps);
    assert!(caps.supports_mcp_transport(TransportKind::Sse));
    assert!(!caps.supports_mcp_transport(TransportKind::Stdio));
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["capabilities"]["mcp_transports"][0], "sse");
    assert_eq!(serde_json::from_value::<Descriptor>(json).unwrap(), d);
}

#[test]
fn only_a_clean_valid_checkpoint_with_a_resume_id_is_persistable() {
    let state = SessionState::new("s-1");
    let clean = Response::new("ok").with_checkpoint(Checkpoint::valid(state.clone()));
    assert_eq!(clean.persistable_checkpoint(), Some(&state));

    let invalid = Response::new("ok").with_checkpoint(Checkpoint::invalid(state.clone()));
    assert_eq!(invalid.persistable_checkpoint(), None);

    let failed = clean
        .clone()
        .with_failure(RunFailure::new(FailureKind::ModelProvider, "boom"));
    assert!(!failed.is_clean());
    assert_eq!(failed.persistable_checkpoint(), None);

    let exited = clean.clone().with_exit(ExitStatus::Code(2));
    assert_eq!(exited.persistable_checkpoint(), None);
    let signalled = clean.clone().with_exit(ExitStatus::Signal(9));
    assert_eq!(signalled.persistable_checkpoint(), None);
    let timed_out = clean.clone().with_exit(ExitStatus::TimedOut);
    assert_eq!(timed_out.persistable_checkpoint(), None);

    let blank = Response::new("ok").with_checkpoint(Checkpoint::valid(SessionState::new("  ")));
    assert_eq!(blank.persistable_checkpoint(), None);
    assert_eq!(Response::new("ok").persistable_checkpoint(), None);
}

#[test]
fn response_round_trips_through_json() {
    let response = Response::new("out")
        .with_usage(Usage::new(3, 4).with_cached_input_tokens(1))
        .with_exit(ExitStatus::Code(1))
        .with_failure(RunFailure::new(FailureKind::RateLimited, "slow down"))
        .with_checkpoint(Checkpoint::invalid(
            SessionState::new("s")
                .with_display_id("S")
                .with_data("k", "v"),
        ));
    let json = serde_json::to_string(&response).unwrap();
    assert_eq!(serde_json::from_str::<Response>(&json).unwrap(), response);
}

/// Issue 40 renamed `FailureKind::Provider` to `ModelProvider`; its serialized name stays
/// `"provider"`, so what a worker, a stored event or a recorded transcript wrote before the
/// rename still reads, and what is written now still reads on the other side of the rename.
#[test]
fn the_model_provider_failure_keeps_its_serialized_name() {
    let old = r#"{"kind":"provider","message":"overloaded"}"#;
    let failure: RunFailure = serde_json::from_str(old).expect("a pre-issue-40 failure reads");
    assert_eq!(failure.kind, FailureKind::ModelProvider);
    assert_eq!(
        serde_json::to_value(FailureKind::ModelProvider).ok(),
        Some(serde_json::json!("provider"))
    );
}

#[test]
fn run_failure_display_shows_the_kind_only() {
    let failure = RunFailure::new(FailureKind::Authentication, "token sk-live-123 rejected");
    assert_eq!(failure.to_string(), "authentication failed");
    let error = DriverError::Failed(failure);
    assert_eq!(error.to_string(), "run failed: authentication failed");
    assert!(!error.to_string().contains("sk-live"));
}

#[test]
fn errors_display_fixed_text() {
    assert_eq!(
        DriverError::resume_rejected(ResumeRejectReason::GuardMismatch).to_string(),
        "resume rejected: the session guard does not match the current request"
    );
    assert!(DriverError::from(ResumeRejectReason::Expired).is_resume_rejected());
    assert!(!DriverError::Cancelled.is_resume_rejected());
    assert_eq!(
        DriverError::from(ConfigError::missing("command")).to_string(),
        "invalid driver configuration: `command` is missing"
    );
    let invalid = ConfigError::invalid("timeout", "must be positive");
    assert_eq!(invalid.field(), "timeout");
    assert_eq!(
        invalid.to_string(),
        "invalid driver configuration: `timeout` is invalid: must be positive"
    );
    // The wrapping variant names its layer and shows its cause (issue 40: a host that prints
    // only `Display` sees what to fix); the cause is then not a source, so it prints once.
    let session = DriverError::from(CodecError::InvalidResumeId { len: 300 });
    assert_eq!(
        session.to_string(),
        "invalid session state: session resume id is malformed (300 bytes)"
    );
    assert!(std::error::Error::source(&session).is_none());
    assert_eq!(
        DriverError::from(Unsupported::Fork).to_string(),
        "session fork is not supported by this driver"
    );
}

#[test]
fn request_builders_and_runtime_payload() {
    let r = request("r1", &FIRST, SessionContext::start(), profile("e", "s"))
        .with_instructions("be brief")
        .with_metadata("tenant", "t1");
    assert_eq!(r.run_id.as_str(), "r1");
    assert_eq!(r.session.mode, SessionMode::ContinueOrStart);
    assert_eq!(r.workspace.as_deref(), Some("/work/space"));
    assert_eq!(r.instructions.as_deref(), Some("be brief"));
    assert_eq!(r.metadata["tenant"], "t1");
    assert_eq!(r.runtime.services.len(), 1);
    assert_eq!(r.runtime.secret_env.len(), 1);
    assert_eq!(r.runtime.secret("UI_TOKEN_A").unwrap().name(), "UI_TOKEN_A");
    assert!(r.runtime.secret("UI_TOKEN_B").is_none());

    let runtime = r
        .runtime
        .clone()
        .with_secret_env(EnvBinding::new("UI_TOKEN_A", "override"));
    use secrecy::ExposeSecret;
    assert_eq!(
        runtime
            .secret("UI_TOKEN_A")
            .unwrap()
            .value()
            .expose_secret(),
        "override",
        "the last binding of a name wins"
    );

    let fork = SessionContext::fork(SessionState::new("parent"));
    assert_eq!(fork.mode, SessionMode::Fork);
    assert_eq!(fork.previous_id.as_deref(), Some("parent"));
    let fresh = SessionContext::start().with_previous_id("archived");
    assert_eq!(fresh.previous_id.as_deref(), Some("archived"));
    assert!(fresh.state.is_none());
    assert_eq!(SessionContext::stateless().mode, SessionMode::Stateless);

    let swapped = r.with_profile(profile("e2", "s"));
    assert_eq!(swapped.profile, profile("e2", "s"));
}

#[test]
fn redactor_replaces_every_secret_longest_first() {
    let r = request("r1", &SECOND, SessionContext::start(), profile("e", "s"));
    let redactor = r.redactor();
    assert_eq!(
        redactor.len(),
        1,
        "runtime and service copies are deduplicated"
    );
    let text = format!("auth failed for {} at {}", SECOND.token, SECOND.url());
    let redacted = redactor.redact(&text);
    assert!(!redacted.contains(SECOND.token));
    assert!(redacted.contains("[REDACTED]"));
    assert!(redacted.contains(&SECOND.url()));

    let nested = Redactor::from_iter(
        [
            EnvBinding::new("A", "abcd"),
            EnvBinding::new("B", "abcdefgh"),
            EnvBinding::new("SHORT", "abc"),
            EnvBinding::new("EMPTY", ""),
        ]
        .iter()
        .map(|b| b.value().clone()),
    );
    assert_eq!(
        nested.len(),
        2,
        "empty values and values under MIN_SECRET_LEN are not redacted"
    );
    assert_eq!(
        nested.redact("x abcdefgh y abcd z abc"),
        "x [REDACTED] y [REDACTED] z abc"
    );
    // The workspace's one secret-value type, under the name drivers know it by.
    assert_eq!(format!("{nested:?}"), "Redactor { secrets: 2 }");
    assert!(Redactor::default().is_empty());
}

/// Issue 40: a run that could not start its program says which program and what is wrong with
/// it in `Display` (a path is host configuration, never a secret or provider text), is typed
/// for callers that branch, and keeps it across JSON (the worker's wire).
#[test]
fn a_missing_program_is_named_with_its_path_in_display() {
    let missing = RunFailure::program_unavailable(ProgramUnavailable::new(
        "/opt/nowhere/codex",
        ProgramProblem::NotFound,
    ));
    assert_eq!(missing.kind, FailureKind::Process);
    let shown = DriverError::Failed(missing.clone()).to_string();
    assert!(shown.contains("`/opt/nowhere/codex` not found"), "{shown}");
    assert!(!shown.contains("provider"), "{shown}");
    let back: RunFailure = serde_json::from_value(serde_json::to_value(&missing).unwrap()).unwrap();
    assert_eq!(back, missing);
    assert_eq!(
        back.program.as_ref().map(|p| p.problem),
        Some(ProgramProblem::NotFound)
    );
    let unusable = RunFailure::program_unavailable(ProgramUnavailable::new(
        "/etc/passwd",
        ProgramProblem::NotExecutable,
    ));
    assert!(
        unusable
            .to_string()
            .contains("`/etc/passwd` is not executable"),
        "{unusable}"
    );
    // A failure without a program shows its kind only, as before (no provider detail).
    let plain = RunFailure::new(FailureKind::Process, "stderr: secret-ish detail");
    assert_eq!(plain.to_string(), "runtime process failed");
}
