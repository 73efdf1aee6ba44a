//! A clean run whose checkpoint cannot be stored says so: a typed reason in the result, and a
//! warning event before the terminal one.

use std::sync::Arc;

use agent::{Agent, NotPersisted, ThreadEventKind};
use driver_spi::reference::{ReferenceBackend, ReferenceDriver};
use driver_spi::{
    ConfigError, ConfigFingerprinter, Descriptor, Driver, DriverError, EventSink, Request,
    Response, SessionCodec,
};
use run_service::async_trait;
use thread_store::memory::MemoryStore;

/// What the wrapper does to the reference driver's checkpoint.
#[derive(Debug, Clone, Copy)]
enum Checkpoint {
    Keep,
    Drop,
    Invalidate,
}

/// The reference driver, with its checkpoint dropped or marked invalid.
struct Stripping {
    inner: ReferenceDriver,
    checkpoint: Checkpoint,
}

#[async_trait]
impl Driver for Stripping {
    fn descriptor(&self) -> Descriptor {
        self.inner.descriptor()
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        self.inner.validate_config()
    }
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError> {
        let mut response = self.inner.run(request, sink).await?;
        match self.checkpoint {
            Checkpoint::Keep => {}
            Checkpoint::Drop => response.checkpoint = None,
            Checkpoint::Invalidate => {
                if let Some(checkpoint) = &mut response.checkpoint {
                    checkpoint.valid = false;
                }
            }
        }
        Ok(response)
    }
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        self.inner.session_codec()
    }
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        self.inner.config_fingerprinter()
    }
}

fn agent(checkpoint: Checkpoint) -> Agent {
    let driver = Stripping {
        inner: ReferenceDriver::with_backend(ReferenceBackend::new()),
        checkpoint,
    };
    Agent::builder(Arc::new(driver))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_run_without_a_storable_checkpoint_says_why_and_warns() {
    for (checkpoint, why) in [
        (Checkpoint::Drop, NotPersisted::NoCheckpoint),
        (Checkpoint::Invalidate, NotPersisted::InvalidCheckpoint),
    ] {
        let agent = agent(checkpoint);
        let result = agent.thread("t").run("hello").await.unwrap();
        assert_eq!(result.record_id, None);
        assert_eq!(result.not_persisted, Some(why));
        let kinds: Vec<&ThreadEventKind> = result.events.iter().map(|e| &e.kind).collect();
        let warning = kinds
            .iter()
            .position(|k| matches!(k, ThreadEventKind::Warning { code, .. } if code == NotPersisted::CODE))
            .expect("a warning event");
        assert_eq!(kinds.last(), Some(&&ThreadEventKind::RunFinished));
        assert_eq!(
            warning,
            kinds.len() - 2,
            "the warning comes right before the end"
        );
        assert!(agent.thread("t").checkpoint().await.unwrap().is_none());
        agent.close().await;
    }
    // A stored checkpoint: no reason, no warning.
    let agent = agent(Checkpoint::Keep);
    let result = agent.thread("t").run("hello").await.unwrap();
    assert!(result.record_id.is_some());
    assert_eq!(result.not_persisted, None);
    assert!(
        !result
            .events
            .iter()
            .any(|e| matches!(e.kind, ThreadEventKind::Warning { .. }))
    );
    agent.close().await;
}
