//! The dry run of a Thread's compatibility decision: [`Thread::explain`](crate::Thread::explain).

use compat_fingerprint::{ComponentChange, Fingerprint};
use thread_store::RecordId;

/// What a run of a Thread would do now, as [`Thread::explain`](crate::Thread::explain)
/// decided it through the run's own decision path.
///
/// A run that would be refused before the driver runs is not an `Explanation`: `explain`
/// returns the very [`ThreadError`](crate::ThreadError) the run would (for example
/// `Incompatible`, whose [`Incompatibility`](crate::Incompatibility) names the drifted
/// components, `NotFound`, `CheckpointMissing`, or `Foreign` for a Thread another credential
/// namespace owns).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Explanation {
    /// What the run would do with the stored conversation.
    pub verdict: Verdict,
    /// The compatibility fingerprint of the current configuration: what the run would store.
    pub fingerprint: Fingerprint,
}

/// What a run would do with the stored conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Resume the stored conversation of this record.
    Resume {
        /// The record whose checkpoint the run would resume.
        record: RecordId,
    },
    /// Resume the stored conversation of this record, which has no owning namespace yet
    /// (it was stored before ownership was recorded): the agent's namespace claims it if its
    /// provider resumes the session, and the run fails with
    /// [`ThreadError::Unclaimed`](crate::ThreadError::Unclaimed) otherwise (it never starts
    /// over).
    Claim {
        /// The record whose checkpoint the run would resume and claim.
        record: RecordId,
    },
    /// Start a new conversation (only without `resume_only`).
    Start {
        /// The stored record the run would archive, when there is one: incompatible (see
        /// `changes`) or without a checkpoint.
        replaces: Option<RecordId>,
        /// The components that drifted from `replaces`; empty when nothing is stored or the
        /// stored record is compatible but has no checkpoint.
        changes: Vec<ComponentChange>,
    },
    /// Fork the conversation of this parent record into the new key.
    Fork {
        /// The parent's record.
        parent: RecordId,
    },
}
