//! The [`Driver`] trait: one invocation request in, one run of an agent runtime out.

use std::sync::Arc;

use crate::{
    ConfigError, ConfigFingerprinter, Descriptor, DriverError, EventSink, Prewarmed,
    ProcessLifecycle, Request, Response, SessionCodec, Unsupported,
};

/// A driver turns one [`Request`] into one run of an agent runtime (the Codex, Claude Code,
/// Cursor or CodeBuddy CLI, or anything else), streaming [`DriverEvent`](crate::DriverEvent)s
/// into a sink and returning a [`Response`].
///
/// Object-safe: the core holds an `Arc<dyn Driver>`.
///
/// # Contract
/// - [`descriptor`](Self::descriptor) is non-empty, deterministic and truthful (see
///   [`Capabilities`](crate::Capabilities)).
/// - [`run`](Self::run) applies the **current** request on every turn, resumed or not (see
///   [`Request`]), emits events in the order documented on
///   [`DriverEvent`](crate::DriverEvent), and never assigns sequence numbers or timestamps.
/// - A stored session that cannot continue is reported as
///   [`DriverError::ResumeRejected`], before any event is emitted where possible.
/// - A valid checkpoint needs a clean outcome and a resume id (see [`Response`]).
/// - Cancellation is dropping the `run` future: the driver stops its provider (for example
///   with kill-on-drop child processes) and emits nothing more.
/// - Nothing a driver returns, emits or logs contains a secret value.
///
/// Optional capabilities are declared by returning `Some` from
/// [`session_codec`](Self::session_codec), [`config_fingerprinter`](Self::config_fingerprinter)
/// and [`process_lifecycle`](Self::process_lifecycle); the defaults return `None`. A driver
/// bound to a credential namespace says which from
/// [`credential_namespace`](Self::credential_namespace).
#[async_trait::async_trait]
pub trait Driver: Send + Sync {
    /// The driver's identity and capabilities.
    fn descriptor(&self) -> Descriptor;

    /// Validates the config the driver was built with.
    fn validate_config(&self) -> Result<(), ConfigError>;

    /// Runs one invocation.
    async fn run(
        &self,
        request: Request,
        sink: Arc<dyn EventSink>,
    ) -> Result<Response, DriverError>;

    /// The session codec, for a driver that can resume sessions.
    fn session_codec(&self) -> Option<&dyn SessionCodec> {
        None
    }

    /// The config fingerprinter, for a driver that can resume sessions.
    fn config_fingerprinter(&self) -> Option<&dyn ConfigFingerprinter> {
        None
    }

    /// The process lifecycle, for a driver that keeps runtime processes alive.
    fn process_lifecycle(&self) -> Option<&dyn ProcessLifecycle> {
        None
    }

    /// Starts the runtime process the next [`run`](Self::run) of `request` needs and opens
    /// (or resumes) its session without a prompt, so that run finds it ready, for a driver
    /// that declares [`prewarm`](crate::Capabilities::prewarm). `request` is the concrete
    /// request that run will send; its prompt is ignored.
    ///
    /// # Contract
    /// - Everything the run would refuse before it launches is refused here with the same
    ///   error, before any process starts.
    /// - A resume's process is found by its session, as every resident turn's is; a request
    ///   with no stored session to continue gets a [`PrewarmTicket`](crate::PrewarmTicket)
    ///   in [`Prewarmed::ticket`], which the next run carries
    ///   ([`Request::with_prewarmed`]). Either way the process serves that run only when the
    ///   run's exact [`ProcessSignature`](crate::ProcessSignature) is the pre-warm's: a
    ///   rotation in between recycles it before the prompt.
    /// - Nothing is delivered and nothing is persisted beyond what opening a session writes
    ///   in the runtime's own state; a process never used is evicted like any idle one.
    ///
    /// # Errors
    /// [`Unsupported::Prewarm`] by default (and from a driver that does not declare it), and
    /// every error a run returns before it delivers its prompt.
    async fn prewarm(&self, request: Request) -> Result<Prewarmed, DriverError> {
        let _ = request;
        Err(Unsupported::Prewarm.into())
    }

    /// The credential namespace whose runtime state this driver runs in (`user:alice`, the
    /// grammar of `runtime_env::CredentialNamespace`), for a driver bound to one: the
    /// namespace that owns the Threads an agent on this driver writes, and the only one
    /// whose Threads it may run. `None` (the default) for a driver bound to none; a layer
    /// that wraps a driver passes the wrapped driver's through.
    fn credential_namespace(&self) -> Option<&str> {
        None
    }
}
