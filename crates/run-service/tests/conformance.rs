//! The provider conformance kit against the example provider, and broken providers that each
//! fail one clause, to show the kit can fail.
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "../examples/support/loopback_provider.rs"]
mod loopback_provider;

use run_service::conformance::{KitOptions, check_provider};
use run_service::{
    EnvBinding, ProviderError, RunAttachment, RunId, RunServiceCompatibility, RunServiceProvider,
    ServiceRef, async_trait,
};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn example_provider() {
    let provider = loopback_provider::LoopbackProvider::new("1");
    let report = block_on(check_provider(&provider, &KitOptions::default())).unwrap();
    assert!(report.opted_in);
    assert_eq!(report.clauses_passed, 6);
}

/// A provider whose behaviour each broken case tweaks.
struct Broken(fn(&RunId) -> Result<RunAttachment, ProviderError>);

#[async_trait]
impl RunServiceProvider for Broken {
    async fn attach_run(&self, run: &RunId) -> Result<RunAttachment, ProviderError> {
        (self.0)(run)
    }
    async fn detach_run(&self, _run: &RunId) -> Result<(), ProviderError> {
        Ok(())
    }
}

fn service(run: &RunId, token: &str) -> ServiceRef {
    ServiceRef::new("svc", "svc")
        .with_url(format!("http://127.0.0.1:1/{run}"))
        .with_secret_env(EnvBinding::new("SVC_TOKEN", token))
}

fn clause_of(provider: Broken) -> &'static str {
    block_on(check_provider(
        &provider,
        &KitOptions::default().canary("CANARY-kit"),
    ))
    .unwrap_err()
    .clause
}

#[test]
fn invalid_attachment_fails_rs01() {
    let provider = Broken(|run| {
        Ok(RunAttachment::new([service(run, "t")])
            .with_resume_compatibility(RunServiceCompatibility::new("", "fp")))
    });
    assert_eq!(clause_of(provider), "RS-01");
}

#[test]
fn unstable_tuple_fails_rs02() {
    let provider = Broken(|run| {
        let fp = format!(
            "fp-{}",
            run.as_str().len() + usize::from(run.as_str().ends_with('2'))
        );
        Ok(RunAttachment::new([service(run, "t")])
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
            RunAttachment::new([service(run, "t")]).with_resume_compatibility(
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
    let provider = Broken(|_| Err(ProviderError::new("no port")));
    assert_eq!(clause_of(provider), "RS-05");
}
