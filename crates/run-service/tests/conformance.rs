//! The provider conformance kit against the example provider, and broken providers that each
//! fail one clause, to show the kit can fail.
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "../examples/support/loopback_provider.rs"]
mod loopback_provider;

use std::sync::Arc;

use run_service::conformance::{self, Clause, Factory, Report};
use run_service::{
    EnvBinding, RunAttachment, RunId, RunServiceCompatibility, RunServiceError, RunServiceProvider,
    ServiceRef, async_trait,
};
use secrecy::SecretString;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A fresh example provider per "host", as after a restart: new ports, new tokens.
struct Loopback;

#[async_trait]
impl Factory for Loopback {
    async fn create(&self) -> Result<Arc<dyn RunServiceProvider>, RunServiceError> {
        Ok(Arc::new(loopback_provider::LoopbackProvider::new("1")))
    }
}

#[test]
fn example_provider() {
    let report = block_on(conformance::run(&Loopback));
    println!("{report}");
    report.assert_passed();
    assert!(
        report.subject().ends_with("Loopback"),
        "{}",
        report.subject()
    );
    let attachment = block_on(
        loopback_provider::LoopbackProvider::new("1").attach_run(&RunId::new("opt-in-check")),
    )
    .unwrap();
    assert!(
        attachment.resume_compatibility.is_some(),
        "the example provider opts in"
    );
}

/// A provider whose behaviour each broken case tweaks; it is its own factory, with a canary.
#[derive(Clone, Copy)]
struct Broken(fn(&RunId) -> Result<RunAttachment, RunServiceError>);

#[async_trait]
impl Factory for Broken {
    async fn create(&self) -> Result<Arc<dyn RunServiceProvider>, RunServiceError> {
        Ok(Arc::new(*self))
    }
    fn canaries(&self) -> Vec<SecretString> {
        vec![SecretString::from("CANARY-kit")]
    }
}

#[async_trait]
impl RunServiceProvider for Broken {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, RunServiceError> {
        (self.0)(run)
    }
    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        Ok(())
    }
}

fn service(run: &RunId, token: &str) -> ServiceRef {
    ServiceRef::new("svc", "svc")
        .with_url(format!("http://127.0.0.1:1/{run}"))
        .with_secret_env(EnvBinding::new("SVC_TOKEN", token))
}

/// The failed clause ids; each failure is in the report text and in the panic of the assert.
fn clause_of(provider: Broken) -> String {
    let report: Report = block_on(conformance::run(&provider));
    let failed: Vec<&str> = report.failures().iter().map(|c| c.id()).collect();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| report.assert_passed()))
        .expect_err("a broken provider fails the assert");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    for id in &failed {
        assert!(message.contains(id), "{message}");
        assert!(
            report.to_string().contains(&format!("FAIL {id}")),
            "{report}"
        );
    }
    failed.join(",")
}

#[test]
fn invalid_attachment_fails_rs01() {
    let provider = Broken(|run| {
        Ok(RunAttachment::new([service(run, "svc-token-5d1e")])
            .with_resume_compatibility(RunServiceCompatibility::new("", "fp")))
    });
    // The views do not build, so RS-02 fails as not checked; the Thread run is invalid too.
    assert_eq!(clause_of(provider), "RS-01,RS-02,RS-06");
}

#[test]
fn unstable_tuple_fails_rs02() {
    let provider = Broken(|run| {
        let fp = format!(
            "fp-{}",
            run.as_str().len() + usize::from(run.as_str().ends_with('2'))
        );
        Ok(RunAttachment::new([service(run, "svc-token-5d1e")])
            .with_resume_compatibility(RunServiceCompatibility::new("com.example.svc", fp)))
    });
    assert_eq!(clause_of(provider), "RS-02");
}

#[test]
fn secret_in_fingerprint_fails_rs03() {
    let provider = Broken(|run| {
        Ok(
            RunAttachment::new([service(run, "tok-123456")]).with_resume_compatibility(
                RunServiceCompatibility::new("com.example.svc", "fp-tok-123456"),
            ),
        )
    });
    assert_eq!(clause_of(provider), "RS-03");
    let canary = Broken(|run| {
        Ok(
            RunAttachment::new([service(run, "svc-token-5d1e")]).with_resume_compatibility(
                RunServiceCompatibility::new("com.example.CANARY-kit", "fp"),
            ),
        )
    });
    assert_eq!(clause_of(canary), "RS-03");
}

#[test]
fn allocation_in_tuple_fails_rs04() {
    let provider = Broken(|_run| {
        let fixed = ServiceRef::new("svc", "svc").with_url("http://127.0.0.1:1/mcp");
        Ok(
            RunAttachment::new([fixed]).with_resume_compatibility(RunServiceCompatibility::new(
                "com.example.svc",
                "fp@http://127.0.0.1:1/mcp",
            )),
        )
    });
    assert_eq!(clause_of(provider), "RS-04");
}

#[test]
fn failing_attach_fails_rs05() {
    // Every attach fails: RS-05 and RS-06 fail, and the clauses that need an attachment
    // fail as not checked (fail closed), rather than passing on nothing.
    let provider = Broken(|_| Err(RunServiceError::new("no port")));
    assert_eq!(clause_of(provider), "RS-01,RS-02,RS-03,RS-04,RS-05,RS-06");
}

/// The kit judges every clause: a provider that breaks two clauses is reported for both.
#[test]
fn every_clause_is_judged() {
    let provider = Broken(|run| {
        let fp = format!("fp-{run}");
        Ok(RunAttachment::new([service(run, "svc-token-5d1e")])
            .with_resume_compatibility(RunServiceCompatibility::new("com.example.svc", fp)))
    });
    // The run id in the fingerprint changes it across runs (RS-02) and is an allocation
    // detail (RS-04); the Thread run's tuple differs from the bare run's (RS-06).
    assert_eq!(clause_of(provider), "RS-02,RS-04,RS-06");
    assert_eq!(Clause::ALL.len(), 6);
}
