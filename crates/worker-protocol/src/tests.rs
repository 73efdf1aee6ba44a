//! Unit tests of the wire types: round trips, secrets only through `to_wire`, error codes.

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{
    Action, ApprovalDecision, DriverError, FailureKind, OutputSchema, PermissionPolicy,
    ProfilePayload, Request, ResumeRejectReason, RunFailure, RuntimePayload, SessionContext,
    SessionState, Unsupported,
};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};
use serde_json::json;
use std::collections::BTreeMap;

use super::*;

const K: Kind = Kind::new("worker-protocol test 2026-12-05 profile v1");
const CANARY: &str = "canary-secret-7f3a";

fn request() -> Request {
    let fp = Fingerprint::of(K, |e| e.str("p"));
    let service = ServiceRef::new("ui", "UI")
        .with_url("http://127.0.0.1:1/mcp")
        .with_mcp(McpServer::streamable_http("ui", "http://127.0.0.1:1/mcp"))
        .with_secret_env(EnvBinding::new("UI_TOKEN", CANARY));
    Request::new(RunId::new("run-1"), "hello", ProfilePayload::new(fp, fp))
        .with_session(SessionContext::continue_only(SessionState::new("ref-1")))
        .with_runtime(
            RuntimePayload::from_services([service])
                .with_secret_env(EnvBinding::new("HOST_KEY", "other-secret")),
        )
        .with_model("m")
        .with_workspace("/w")
        .with_metadata("k", "v")
        .with_permissions("write=ask".parse::<PermissionPolicy>().unwrap_or_default())
        .with_output_schema(OutputSchema::new(json!({"type": "object"})).prompt_only())
}

#[test]
fn a_request_round_trips_with_its_secrets_through_to_wire_only() {
    let original = request();
    let wire = WireRequest::from_request(&original);
    assert!(
        !format!("{wire:?}").contains(CANARY),
        "Debug hides secret values"
    );
    let body = serde_json::to_string(&wire.body).unwrap_or_default();
    assert!(
        !body.contains(CANARY),
        "the body never holds a secret value"
    );
    let sent = wire.to_wire().to_string();
    assert!(sent.contains(CANARY), "the pipe carries the value");
    let back: WireRequest = serde_json::from_str(&sent).expect("it parses");
    let back = back
        .into_request(driver_spi::Approvals::none())
        .expect("valid");
    assert_eq!(
        serde_json::to_value(&back).ok(),
        serde_json::to_value(&original).ok()
    );
    assert_eq!(
        back.redactor().redact(CANARY),
        original.redactor().redact(CANARY)
    );
    assert_eq!(
        back.runtime.services[0].secret_env,
        original.runtime.services[0].secret_env
    );
    assert_eq!(back.runtime.secret_env, original.runtime.secret_env);
}

#[test]
fn more_secret_lists_than_services_are_invalid_params() {
    let mut wire = WireRequest::from_request(&request()).to_wire();
    wire["service_secret_env"] = json!([[], []]);
    let wire: WireRequest = serde_json::from_value(wire).expect("parses");
    assert_eq!(
        wire.into_request(driver_spi::Approvals::none()).err(),
        Some(ProtocolError::InvalidParams)
    );
}

#[test]
fn a_configuration_carries_its_key_only_on_the_wire() {
    let config = DriverConfig::Registry {
        env: wire_env(BTreeMap::new()),
        runtime: "codex".to_owned(),
        binary: None,
        model: Some("m".to_owned()),
        base_url: None,
        key: Some(WireBinding::from(&EnvBinding::new(
            "OPENAI_API_KEY",
            CANARY,
        ))),
        resident: false,
    };
    let configure = Configure { driver: 3, config };
    assert!(!format!("{configure:?}").contains(CANARY));
    let sent = configure.to_wire();
    let back: Configure = serde_json::from_value(sent).expect("parses");
    let DriverConfig::Registry { key: Some(key), .. } = back.config else {
        panic!("a registry configuration with a key");
    };
    assert_eq!(
        key.into_binding(),
        EnvBinding::new("OPENAI_API_KEY", CANARY)
    );
}

fn wire_env(vars: BTreeMap<String, String>) -> WireEnv {
    WireEnv {
        base_dir: "/b".into(),
        namespace: "user:a".to_owned(),
        cwd: "/c".into(),
        vars,
    }
}

#[test]
fn a_registry_configuration_carries_its_plain_variables_and_process_mode() {
    let vars = BTreeMap::from([("FAKE_CLI_SCENARIO".to_owned(), "/s.json".to_owned())]);
    let config = DriverConfig::Registry {
        env: wire_env(vars.clone()),
        runtime: "codex".to_owned(),
        binary: Some("/bin/fake".into()),
        model: None,
        base_url: None,
        key: None,
        resident: true,
    };
    let sent = Configure { driver: 1, config }.to_wire();
    assert_eq!(
        sent["config"]["env"]["vars"]["FAKE_CLI_SCENARIO"],
        "/s.json"
    );
    let back: Configure = serde_json::from_value(sent).expect("parses");
    let DriverConfig::Registry { env, resident, .. } = back.config else {
        panic!("a registry configuration");
    };
    assert_eq!(env, wire_env(vars));
    assert!(resident);
    // Both are optional: a configuration without them is per turn, with no variable, and
    // writes none.
    let bare: DriverConfig = serde_json::from_value(json!({
        "kind": "registry",
        "env": {"base_dir": "/b", "namespace": "user:a", "cwd": "/c"},
        "runtime": "codex",
    }))
    .expect("parses");
    let DriverConfig::Registry { env, resident, .. } = &bare else {
        panic!("a registry configuration");
    };
    assert!(env.vars.is_empty() && !resident);
    assert!(bare.to_wire()["env"].get("vars").is_none());
}

#[test]
fn every_driver_error_crosses_with_its_class() {
    let errors = [
        DriverError::resume_rejected(ResumeRejectReason::UnknownSession),
        DriverError::Unsupported(Unsupported::Fork),
        DriverError::Unsupported(Unsupported::PermissionNeeds {
            action: driver_spi::Action::Write,
            permission: driver_spi::Permission::Ask,
            needs: driver_spi::Action::Commands,
        }),
        DriverError::Unsupported(Unsupported::StrictOutputSchema(
            driver_spi::StrictSchemaError::OpenMap,
        )),
        DriverError::Failed(RunFailure::new(FailureKind::RateLimited, "slow").with_retryable(true)),
        // Issue 40: a worker's CLI that cannot be started is named on the host's side too.
        DriverError::Failed(RunFailure::program_unavailable(
            driver_spi::ProgramUnavailable::new(
                "/opt/missing/codex",
                driver_spi::ProgramProblem::NotFound,
            ),
        )),
        DriverError::Cancelled,
    ];
    for error in errors {
        let wire = TaskError::from_driver_error(&error);
        let json = serde_json::to_value(&wire).expect("serializes");
        let back: TaskError = serde_json::from_value(json).expect("parses");
        let back = back.into_driver_error();
        assert_eq!(back.to_string(), error.to_string());
        assert_eq!(back, error);
    }
    let retry = TaskError::from_driver_error(&DriverError::Failed(
        RunFailure::new(FailureKind::Process, "").with_retryable(true),
    ));
    assert!(retry.retryable);
    let config = TaskError::from_driver_error(&DriverError::InvalidConfig(
        driver_spi::ConfigError::missing("binary"),
    ));
    assert_eq!(config.code, TaskErrorCode::InvalidConfig);
    assert!(!config.retryable);
}

/// Issue 40 renamed `FailureKind::Provider` to `ModelProvider`: a worker built before the
/// rename still speaks to a host built after it, and the reverse, because the wire name
/// stays `"provider"`.
#[test]
fn a_model_provider_failure_crosses_the_wire_under_its_old_name() {
    let old = json!({
        "handle": 1,
        "seq": 4,
        "event": {"type": "driver", "event": {"type": "run_failed", "kind": "provider"}},
    });
    let params: EventParams = serde_json::from_value(old.clone()).expect("an old event reads");
    assert_eq!(
        params.event,
        TaskEvent::Driver {
            event: driver_spi::DriverEvent::RunFailed {
                kind: FailureKind::ModelProvider,
            },
        }
    );
    assert_eq!(serde_json::to_value(&params).ok(), Some(old));
}

/// The reasoning and plan events an ACP driver emits cross the wire as the driver emitted
/// them, under their snake_case names.
#[test]
fn reasoning_and_plan_events_round_trip() {
    use driver_spi::{DriverEvent, PlanEntry, PlanPriority, PlanStatus};
    let events = [
        DriverEvent::reasoning("let me think"),
        DriverEvent::plan(vec![
            PlanEntry::new("read", PlanStatus::Completed, PlanPriority::High),
            PlanEntry::new("edit", PlanStatus::InProgress, PlanPriority::Medium),
            PlanEntry::new("test", PlanStatus::Pending, PlanPriority::Low),
        ]),
        DriverEvent::plan(Vec::new()),
    ];
    for (seq, event) in (0..).zip(events) {
        let params = EventParams {
            handle: 3,
            seq,
            event: TaskEvent::Driver { event },
        };
        let wire = serde_json::to_value(&params).expect("an event serializes");
        let back: EventParams = serde_json::from_value(wire).expect("and reads back");
        assert_eq!(back, params);
    }
    let wire = serde_json::to_value(EventParams {
        handle: 1,
        seq: 2,
        event: TaskEvent::Driver {
            event: DriverEvent::plan(vec![PlanEntry::new(
                "edit",
                PlanStatus::InProgress,
                PlanPriority::High,
            )]),
        },
    })
    .expect("an event serializes");
    assert_eq!(
        wire["event"],
        json!({"type": "driver", "event": {"type": "plan", "entries": [
            {"content": "edit", "status": "in_progress", "priority": "high"}
        ]}})
    );
    assert_eq!(
        serde_json::to_value(TaskEvent::Driver {
            event: DriverEvent::reasoning("hm")
        })
        .ok(),
        Some(json!({"type": "driver", "event": {"type": "reasoning_delta", "delta": "hm"}}))
    );
}

#[test]
fn terminal_events_are_the_three_ends() {
    let events = [
        (
            TaskEvent::Driver {
                event: driver_spi::DriverEvent::RunStarted,
            },
            false,
        ),
        (
            TaskEvent::Completed {
                response: driver_spi::Response::new("x"),
            },
            true,
        ),
        (
            TaskEvent::Failed {
                error: TaskError::from_driver_error(&DriverError::Cancelled),
            },
            true,
        ),
        (TaskEvent::Stopped, true),
    ];
    for (event, terminal) in events {
        assert_eq!(event.is_terminal(), terminal);
        let params = EventParams {
            handle: 7,
            seq: 3,
            event,
        };
        let back: EventParams =
            serde_json::from_value(serde_json::to_value(&params).expect("ser")).expect("de");
        assert_eq!(back, params);
    }
}

#[test]
fn approvals_echo_their_attempt_and_decisions_round_trip() {
    let approve = Approve {
        handle: 1,
        approval_id: "approval-1".to_owned(),
        attempt: 2,
        call_id: Some("call-1".to_owned()),
        action: Action::Write,
        tool: "Write".to_owned(),
        arguments: "a.txt".to_owned(),
        answerable: true,
    };
    let back: Approve =
        serde_json::from_value(serde_json::to_value(&approve).expect("ser")).expect("de");
    assert_eq!(back, approve);
    for decision in [
        ApprovalDecision::Approve,
        ApprovalDecision::deny("no"),
        ApprovalDecision::answer("text"),
    ] {
        let wire = WireDecision::from(decision.clone());
        let json = serde_json::to_value(&wire).expect("ser");
        let back: WireDecision = serde_json::from_value(json).expect("de");
        assert_eq!(ApprovalDecision::from(back), decision);
    }
}

#[test]
fn error_codes_are_distinct_and_named_back() {
    let all = [
        ProtocolError::InvalidParams,
        ProtocolError::NotConfigured,
        ProtocolError::ConfigRejected,
        ProtocolError::UnknownHandle,
        ProtocolError::ToolNotAwaited,
        ProtocolError::DuplicateTask,
        ProtocolError::NotScriptable,
    ];
    for error in all {
        assert_eq!(ProtocolError::from_code(error.code()), Some(error));
    }
    let mut seen: Vec<i64> = all.iter().map(|e| e.code()).collect();
    seen.extend([
        codes::PARSE_ERROR,
        codes::INVALID_REQUEST,
        codes::METHOD_NOT_FOUND,
    ]);
    let count = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), count);
    assert_eq!(ProtocolError::from_code(-1), None);
}

mod hot;
