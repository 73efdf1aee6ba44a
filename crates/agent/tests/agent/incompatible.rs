//! `Incompatible` explains itself: for each component kind, the drifted component is named.

use std::sync::Arc;

use agent::{Agent, AgentBuilder, SCHEME_VERSION, SchemeMigration, ThreadError};
use driver_spi::reference::{ReferenceBackend, ReferenceConfig, ReferenceDriver};
use driver_spi::{
    CodecError, ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink,
    ProcessLifecycle, Request, Response, SessionCodec, SessionParams, SessionState,
};
use run_service::McpServer;
use thread_store::{FinalizeRequest, Query, ThreadStore};

use test_support::host::{ProviderSpec, RotatingProvider, SqliteFile, semantic_fingerprint};

/// The reference driver under another type name or codec name.
struct Renamed {
    inner: ReferenceDriver,
    driver_type: Option<&'static str>,
    codec: Option<RenamedCodec>,
}

struct RenamedCodec(&'static str);

impl SessionCodec for RenamedCodec {
    fn name(&self) -> &str {
        self.0
    }
    fn guard_keys(&self) -> &[&'static str] {
        &[]
    }
    fn to_params(&self, _: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError> {
        Ok(None)
    }
    fn from_params(&self, _: Option<&SessionParams>) -> Result<Option<SessionState>, CodecError> {
        Ok(None)
    }
    fn guard_fingerprint(&self, params: &SessionParams) -> compat_fingerprint::Fingerprint {
        driver_spi::guard_fingerprint(self.0, &[], params)
    }
}

#[async_trait::async_trait]
impl Driver for Renamed {
    fn descriptor(&self) -> Descriptor {
        let mut d = self.inner.descriptor();
        if let Some(t) = self.driver_type {
            d.driver_type = t.to_owned();
        }
        d
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.inner.validate_config()
    }
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        self.inner.run(request, sink).await
    }
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        match &self.codec {
            Some(c) => Some(c),
            None => self.inner.session_codec(),
        }
    }
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.inner.config_fingerprinter()
    }
    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        self.inner.process_lifecycle()
    }
}

/// Everything an agent in this test is built from.
struct Setup {
    driver_type: Option<&'static str>,
    codec: Option<&'static str>,
    config_flag: Option<&'static str>,
    spec: ProviderSpec,
    configure: Box<dyn Fn(AgentBuilder) -> AgentBuilder>,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            driver_type: None,
            codec: None,
            config_flag: None,
            spec: ProviderSpec::semantic(1),
            configure: Box::new(|b| b),
        }
    }
}

fn build(setup: &Setup, store: Arc<dyn ThreadStore>, backend: &ReferenceBackend) -> Agent {
    let mut config = ReferenceConfig::new();
    if let Some(flag) = setup.config_flag {
        config = config.with_flag(flag);
    }
    let driver = Renamed {
        inner: ReferenceDriver::with_backend(backend.clone()).with_config(config),
        driver_type: setup.driver_type,
        codec: setup.codec.map(RenamedCodec),
    };
    let builder = Agent::builder(Arc::new(driver))
        .store(store)
        .run_service(RotatingProvider::new(setup.spec.clone()))
        .mcp_server(McpServer::stdio("host-tools", "host-tools-bin"))
        .model("model-1")
        .workspace("/work/a")
        .instructions("be brief")
        .identity("assistant")
        .skill("review", "1")
        .profile_resource("AGENTS.md", "rules v1");
    (setup.configure)(builder).build().unwrap()
}

/// Stores a Thread with the default setup, then resumes it with `changed` and returns the
/// error.
async fn drift(changed: Setup) -> ThreadError {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let first = build(&Setup::default(), file.open().await, &backend);
    first.thread("t").run("one").await.unwrap();
    first.close().await;
    let second = build(&changed, file.open().await, &backend);
    let before = backend.request_count();
    let err = second
        .thread("t")
        .resume_only()
        .run("two")
        .await
        .unwrap_err();
    assert_eq!(
        backend.request_count(),
        before,
        "rejected before the driver ran"
    );
    err
}

async fn assert_names(changed: Setup, component: &str) {
    let err = drift(changed).await;
    let inc = err
        .incompatibility()
        .unwrap_or_else(|| panic!("not incompatible: {err}"));
    assert!(
        inc.names(component) || inc.names_prefix(component),
        "{component} not named in: {err}"
    );
    assert!(err.to_string().contains(component), "{err}");
}

#[tokio::test]
async fn unchanged_configuration_resumes() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    build(&Setup::default(), file.open().await, &backend)
        .thread("t")
        .run("one")
        .await
        .unwrap();
    let again = Setup {
        spec: ProviderSpec::semantic(2),
        ..Setup::default()
    };
    build(&again, file.open().await, &backend)
        .thread("t")
        .resume_only()
        .run("two")
        .await
        .unwrap();
}

#[tokio::test]
async fn names_driver() {
    assert_names(
        Setup {
            driver_type: Some("other-driver"),
            ..Setup::default()
        },
        "driver",
    )
    .await;
}

#[tokio::test]
async fn names_codec() {
    assert_names(
        Setup {
            codec: Some("other-codec"),
            ..Setup::default()
        },
        "codec",
    )
    .await;
}

#[tokio::test]
async fn names_driver_config() {
    assert_names(
        Setup {
            config_flag: Some("--sandbox"),
            ..Setup::default()
        },
        "driver_config",
    )
    .await;
}

#[tokio::test]
async fn names_identity() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.identity("other")),
            ..Setup::default()
        },
        "identity",
    )
    .await;
}

#[tokio::test]
async fn names_model() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.model("model-2")),
            ..Setup::default()
        },
        "model",
    )
    .await;
}

#[tokio::test]
async fn names_workspace() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.workspace("/work/b")),
            ..Setup::default()
        },
        "workspace",
    )
    .await;
}

#[tokio::test]
async fn names_profile() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.profile_resource("AGENTS.md", "rules v2")),
            ..Setup::default()
        },
        "profile",
    )
    .await;
}

#[tokio::test]
async fn names_skills() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.skill("deploy", "1")),
            ..Setup::default()
        },
        "skills",
    )
    .await;
}

#[tokio::test]
async fn names_instructions() {
    assert_names(
        Setup {
            configure: Box::new(|b| b.instructions("be verbose")),
            ..Setup::default()
        },
        "instructions",
    )
    .await;
}

#[tokio::test]
async fn names_the_attachment_by_digest() {
    let changed = Setup {
        spec: ProviderSpec::semantic(2).with_fingerprint(semantic_fingerprint("1", "tenant-b")),
        ..Setup::default()
    };
    let err = drift(changed).await;
    let text = err.to_string();
    assert!(
        err.incompatibility()
            .unwrap()
            .names_prefix("attachment.semantic:"),
        "{text}"
    );
    assert!(!text.contains("com.example"), "no raw provider id: {text}");
    assert!(!text.contains("tok-gen"), "no token: {text}");
}

#[tokio::test]
async fn names_a_particular_mcp_server_by_digest() {
    let changed = Setup {
        configure: Box::new(|b| b.mcp_server(McpServer::stdio("extra-tools", "extra-bin"))),
        ..Setup::default()
    };
    let err = drift(changed).await;
    let inc = err.incompatibility().unwrap();
    assert!(inc.names_prefix("mcp:"), "{err}");
    assert!(
        !err.to_string().contains("extra"),
        "named by digest only: {err}"
    );
    assert_eq!(inc.changes().len(), 1, "only the new server: {err}");
}

/// Rewrites the stored record as if an older scheme had written it.
async fn downgrade_scheme(store: &Arc<dyn ThreadStore>) -> compat_fingerprint::Fingerprint {
    let mut record = store.resolve(&Query::key("t")).await.unwrap().unwrap();
    let current = record.compatibility.fingerprint;
    record.compatibility.scheme_version = SCHEME_VERSION - 1;
    record.compatibility.fingerprint = compat_fingerprint::Fingerprint::from_bytes([7; 32]);
    store.finalize(&FinalizeRequest::new(record)).await.unwrap();
    current
}

#[tokio::test]
async fn names_fingerprint_scheme_and_honours_an_explicit_migration() {
    let file = SqliteFile::new();
    let backend = ReferenceBackend::new();
    let first = build(&Setup::default(), file.open().await, &backend);
    first.thread("t").run("one").await.unwrap();
    let store = file.open().await;
    let current = downgrade_scheme(&store).await;

    let plain = build(&Setup::default(), file.open().await, &backend);
    let err = plain
        .thread("t")
        .resume_only()
        .run("two")
        .await
        .unwrap_err();
    let inc = err.incompatibility().unwrap();
    assert_eq!(
        inc.scheme_change(),
        Some((SCHEME_VERSION - 1, SCHEME_VERSION))
    );
    assert!(
        err.to_string().contains("fingerprint scheme changed"),
        "{err}"
    );

    let migration = SchemeMigration {
        from_scheme: SCHEME_VERSION - 1,
        from: compat_fingerprint::Fingerprint::from_bytes([7; 32]),
        to: current,
    };
    // The same configuration plus the migration record.
    let with_migration = Setup {
        spec: ProviderSpec::semantic(3),
        configure: Box::new(move |b| b.scheme_migration(migration)),
        ..Setup::default()
    };
    let agent = build(&with_migration, file.open().await, &backend);
    agent.thread("t").resume_only().run("two").await.unwrap();
    // The record is rewritten under the current scheme.
    let cp = agent.thread("t").checkpoint().await.unwrap().unwrap();
    assert_eq!(cp.scheme_version, SCHEME_VERSION);
    assert_eq!(cp.fingerprint, current);
}
