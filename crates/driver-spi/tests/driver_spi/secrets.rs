//! A canary secret in a request's secret env never appears in the `Debug` output or any
//! serialized form of the request, the response, the events or the errors.

use std::sync::Arc;

use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceConfig, ReferenceDriver};
use driver_spi::{
    CollectingSink, Driver, DriverError, FailureKind, ProcessSignature, Request, Response,
    ResumeRejectReason, SessionContext,
};
use run_service::EnvBinding;
use secrecy::ExposeSecret;

use crate::{Allocation, block_on, profile, request};

const CANARY: &str = "canary-7f3b9e1d-secret";
const CONFIG_CANARY: &str = "config-canary-c0ffee42";

const CANARY_ALLOCATION: Allocation = Allocation {
    port: 4303,
    env_name: "UI_TOKEN_CANARY",
    token: CANARY,
};

fn canary_request(run: &str, session: SessionContext) -> Request {
    request(run, &CANARY_ALLOCATION, session, profile("e", "s")).with_runtime(
        driver_spi::RuntimePayload::from_services([CANARY_ALLOCATION.service()])
            .with_secret_env(EnvBinding::new("HOST_TOKEN", CANARY)),
    )
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} leaks the canary: {text}");
    assert!(
        !text.contains(CONFIG_CANARY),
        "{what} leaks the config canary: {text}"
    );
}

#[test]
fn request_debug_and_json_hold_no_secret_value() {
    let r = canary_request("r1", SessionContext::start());
    // Positive control: the canary is really in the request.
    assert_eq!(
        r.runtime
            .secret("HOST_TOKEN")
            .unwrap()
            .value()
            .expose_secret(),
        CANARY
    );
    assert_clean("Request Debug", &format!("{r:?}"));
    assert_clean("Request pretty Debug", &format!("{r:#?}"));
    let json = serde_json::to_string(&r).unwrap();
    assert_clean("Request JSON", &json);
    assert!(
        json.contains("HOST_TOKEN") && json.contains("UI_TOKEN_CANARY"),
        "names are kept"
    );
    assert_clean("Redactor Debug", &format!("{:?}", r.redactor()));
    assert_clean(
        "ProcessSignature Debug",
        &format!("{:?}", ProcessSignature::builder().request(&r).finish()),
    );
    assert_clean(
        "ProcessSignatureBuilder Debug",
        &format!("{:?}", ProcessSignature::builder().request(&r)),
    );
}

/// Runs the reference driver through every behaviour with the canary in its request and its
/// config, and checks every output surface.
#[test]
fn responses_events_and_errors_hold_no_secret_value() {
    block_on(async {
        let backend = ReferenceBackend::new();
        let driver = ReferenceDriver::with_backend(backend.clone()).with_config(
            ReferenceConfig::new().with_env(EnvBinding::new("PROVIDER_KEY", CONFIG_CANARY)),
        );
        let behaviors = [
            Behavior::Reply,
            Behavior::CallTool {
                name: "lookup".into(),
                arguments: "{}".into(),
                result: "ok".into(),
            },
            Behavior::Fail(FailureKind::Authentication),
            Behavior::FailedResponse(FailureKind::ModelProvider),
            Behavior::RejectResume(ResumeRejectReason::GuardMismatch),
        ];
        let mut responses: Vec<Response> = Vec::new();
        let mut errors: Vec<DriverError> = Vec::new();
        for (i, behavior) in behaviors.into_iter().enumerate() {
            backend.push_behavior(behavior);
            let sink = Arc::new(CollectingSink::new());
            let result = driver
                .run(
                    canary_request(&format!("r{i}"), SessionContext::start()),
                    sink.clone(),
                )
                .await;
            for event in sink.events() {
                assert_clean("event Debug", &format!("{event:?}"));
                assert_clean("event JSON", &serde_json::to_string(&event).unwrap());
            }
            match result {
                Ok(response) => responses.push(response),
                Err(error) => errors.push(error),
            }
        }
        // A resume, so a checkpoint built from a canary-carrying request is checked too.
        let state = responses[0].persistable_checkpoint().unwrap().clone();
        let sink = Arc::new(CollectingSink::new());
        responses.push(
            driver
                .run(
                    canary_request("resume", SessionContext::continue_only(state)),
                    sink,
                )
                .await
                .unwrap(),
        );
        assert_eq!(errors.len(), 2);
        for response in &responses {
            assert_clean("Response Debug", &format!("{response:#?}"));
            assert_clean("Response JSON", &serde_json::to_string(response).unwrap());
        }
        for error in &errors {
            assert_clean("DriverError Display", &error.to_string());
            assert_clean("DriverError Debug", &format!("{error:?}"));
        }
        for recorded in backend.requests() {
            assert_clean("RecordedRequest Debug", &format!("{recorded:?}"));
        }
        assert_clean("ReferenceBackend Debug", &format!("{backend:?}"));
        assert_clean("ReferenceDriver Debug", &format!("{driver:?}"));

        // Positive controls: the secrets did reach the driver and its materialization.
        let last = backend.last_request().unwrap();
        assert_eq!(
            last.expose_secret_env("HOST_TOKEN").as_deref(),
            Some(CANARY)
        );
        let materialized = backend.last_materialization().unwrap();
        assert!(materialized.expose_secret().contains(CANARY));
        assert!(materialized.expose_secret().contains(CONFIG_CANARY));
        assert_clean("materialization Debug", &format!("{materialized:?}"));
        let fp = driver.config_fingerprinter().unwrap().config_fingerprint();
        assert_clean("config fingerprint", &fp.to_string());
    });
}
