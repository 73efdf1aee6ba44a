//! What a finished run returns.

use compat_fingerprint::ComponentChange;
use driver_spi::{ExitStatus, Usage};
use run_service::RunId;
use thread_store::RecordId;

use crate::ThreadEvent;

/// How the run related to the stored conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionOutcome {
    /// Nothing was stored under the key: a new conversation started.
    Started,
    /// The stored conversation continued.
    Resumed,
    /// The stored conversation was incompatible (these components changed) and the Thread
    /// is continue-or-start: a new conversation started and the old record was archived.
    Restarted {
        /// What changed.
        changes: Vec<ComponentChange>,
    },
    /// The driver rejected the stored session (unknown or expired): a new one started.
    RestartedAfterRejection,
    /// A new conversation branched from the parent Thread.
    Forked {
        /// The parent's record.
        parent: RecordId,
    },
}

/// Why a clean run stored no checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotPersisted {
    /// The driver returned no checkpoint (for example a stateless run).
    NoCheckpoint,
    /// The driver returned a checkpoint that may not be stored: marked invalid, or without
    /// a resume id.
    InvalidCheckpoint,
}

impl NotPersisted {
    /// The [`Warning`](crate::ThreadEventKind::Warning) code of a run that stored nothing.
    pub const CODE: &'static str = "checkpoint_not_persisted";
}

impl std::fmt::Display for NotPersisted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NoCheckpoint => "the driver returned no checkpoint; nothing was stored",
            Self::InvalidCheckpoint => {
                "the driver's checkpoint may not be stored (invalid or without a resume id)"
            }
        })
    }
}

/// A finished run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunResult {
    /// The run's id.
    pub run_id: RunId,
    /// The final output text, redacted.
    pub output: String,
    /// How the provider run ended.
    pub exit: ExitStatus,
    /// Token usage, if reported.
    pub usage: Option<Usage>,
    /// Resume, start, restart or fork.
    pub session: SessionOutcome,
    /// The record the checkpoint was stored in; `None` when nothing was stored, and then
    /// [`not_persisted`](Self::not_persisted) says why.
    pub record_id: Option<RecordId>,
    /// Why a clean run stored nothing (the next run of the Thread cannot resume this one);
    /// `None` when the checkpoint was stored. The run's events carry a
    /// [`Warning`](crate::ThreadEventKind::Warning) with [`NotPersisted::CODE`] as well.
    pub not_persisted: Option<NotPersisted>,
    /// The final answer as data: every string and every object key, each on its own, passed
    /// through the run's redactor (the one [`output`](Self::output) passes, so a known secret
    /// the model echoed is [`REDACTED`](runtime_env::REDACTED) here as there), then checked
    /// against the run's output schema
    /// ([`Thread::with_output_schema`](crate::Thread::with_output_schema)): what was checked
    /// is what is here. `None` for a run without a schema.
    pub structured: Option<serde_json::Value>,
    /// The run's events (for [`Thread::run`](crate::Thread::run): all of them; for a stream:
    /// the ones not read before [`RunStream::result`](crate::RunStream::result)).
    pub events: Vec<ThreadEvent>,
}
