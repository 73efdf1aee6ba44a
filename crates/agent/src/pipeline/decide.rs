//! Step 4: the Thread's leases, the stored record, and the decision — resume, start, fork or
//! refuse — made before the driver runs; and the codec that moves session state between the
//! driver's form and the store's.

use std::sync::Arc;

use compat_fingerprint::{Breakdown, ComponentChange, Fingerprint, ShortDigest};
use driver_spi::{FailureKind, ResumeRejectReason, SessionCodec, SessionParams};
use thread_store::{Lease, Query, StoreError, ThreadRecord, ThreadStore};

use crate::compat::SCHEME_VERSION;
use crate::thread::{Mode, Thread};
use crate::{Incompatibility, ThreadError};

/// What step 4 decided.
pub(super) enum Plan {
    Start {
        archive: Option<ThreadRecord>,
        changes: Option<Vec<ComponentChange>>,
    },
    Resume {
        record: ThreadRecord,
        /// The record has no owner and the agent has a namespace: the resume must not start
        /// over, and a successful one claims the record for the agent's namespace.
        claim: bool,
    },
    Fork {
        parent: ThreadRecord,
    },
}

impl Plan {
    /// The plan's name in logs.
    pub(super) fn label(&self) -> &'static str {
        match self {
            Plan::Start { changes: None, .. } => "start",
            Plan::Start { .. } => "restart",
            Plan::Resume { claim: false, .. } => "resume",
            Plan::Resume { claim: true, .. } => "claim",
            Plan::Fork { .. } => "fork",
        }
    }
}

/// Best effort: an unreleased lease expires after its TTL anyway.
pub(super) async fn release_all(store: &Arc<dyn ThreadStore>, leases: &[Lease]) {
    for lease in leases {
        let _ = store.release_lease(lease).await;
    }
}

/// A store error, named by the Thread key it concerns.
pub(super) fn store_error(error: StoreError, key: &str) -> ThreadError {
    match error {
        StoreError::Busy { .. } => ThreadError::Busy {
            key: key.to_owned(),
        },
        StoreError::LeaseLost { .. } => ThreadError::LeaseLost {
            key: key.to_owned(),
        },
        StoreError::AlreadyExists { .. } => ThreadError::AlreadyExists {
            key: key.to_owned(),
        },
        other => ThreadError::Store(other),
    }
}

/// Whether `record` may be resumed by a run whose identity is `fingerprint`.
pub(super) fn check_compatibility(
    thread: &Thread,
    record: &ThreadRecord,
    breakdown: &Breakdown,
    fingerprint: Fingerprint,
) -> Result<(), Incompatibility> {
    let stored = &record.compatibility;
    if stored.scheme_version != SCHEME_VERSION {
        let migrated = thread.agent.inner.migrations.iter().any(|m| {
            m.from_scheme == stored.scheme_version
                && m.from == stored.fingerprint
                && m.to == fingerprint
        });
        return if migrated {
            Ok(())
        } else {
            Err(Incompatibility::scheme(
                stored.scheme_version,
                SCHEME_VERSION,
            ))
        };
    }
    if stored.fingerprint == fingerprint {
        return Ok(());
    }
    Err(Incompatibility::components(
        stored.components.diff(breakdown),
    ))
}

/// Whose a stored record is, from the agent's point of view.
enum Ownership {
    /// The agent's namespace owns it, or neither has one (an unscoped agent on a record
    /// without an owner: as before ownership existed).
    Own,
    /// Another namespace owns it (or the agent is unscoped and the record has an owner).
    Foreign(ShortDigest),
    /// The record has no owner and the agent has a namespace: it may only be resumed,
    /// which claims it.
    Unclaimed,
}

/// The one ownership rule, applied before any plan: see `docs/threads.md`, "Ownership".
fn ownership(agent: Option<&str>, record: &ThreadRecord) -> Ownership {
    match (record.namespace.as_deref(), agent) {
        (Some(owner), Some(ns)) if owner == ns => Ownership::Own,
        (Some(owner), _) => Ownership::Foreign(ShortDigest::of_str(owner)),
        (None, None) => Ownership::Own,
        (None, Some(_)) => Ownership::Unclaimed,
    }
}

/// Why a run may not claim a record without an owner: the reasons of
/// [`ThreadError::Unclaimed`].
pub(super) mod unclaimed {
    /// The driver rejected the resume of the stored session.
    pub(crate) const REJECTED: &str = "its provider session did not resume in this namespace";
    /// Continue-or-start would archive it and start over: the configuration drifted.
    pub(crate) const INCOMPATIBLE: &str =
        "it is incompatible with the current configuration, and only a resume may claim it";
    /// Continue-or-start would archive it and start over: there is nothing to resume.
    pub(crate) const NO_CHECKPOINT: &str =
        "it holds no checkpoint to resume, and only a resume may claim it";
    /// Reading a checkpoint needs an owner.
    pub(crate) const READ: &str =
        "its checkpoint is read only by its owner; resume the Thread first, which claims it";
    /// A fork parent must be owned.
    pub(crate) const FORK_PARENT: &str =
        "a fork needs a parent its namespace owns; resume the parent first, which claims it";
}

/// Whether `thread`'s agent may read `record` (its checkpoint): only a record it owns, by the
/// same rule as a run.
pub(crate) fn check_readable(thread: &Thread, record: &ThreadRecord) -> Result<(), ThreadError> {
    match ownership(thread.agent.inner.namespace.as_deref(), record) {
        Ownership::Own => Ok(()),
        Ownership::Foreign(owner) => Err(ThreadError::Foreign {
            key: thread.key.clone(),
            owner,
        }),
        Ownership::Unclaimed => Err(ThreadError::Unclaimed {
            key: thread.key.clone(),
            reason: unclaimed::READ,
        }),
    }
}

/// Step 4's decision, from the stored records of the key (and the fork parent).
pub(super) async fn decide(
    thread: &Thread,
    store: &Arc<dyn ThreadStore>,
    breakdown: &Breakdown,
    fingerprint: Fingerprint,
) -> Result<Plan, ThreadError> {
    let key = &thread.key;
    let namespace = thread.agent.inner.namespace.as_deref();
    let resolve = |k: &str| {
        let query = Query::key(k.to_owned());
        async move { store.resolve(&query).await }
    };
    if let Some(parent_key) = &thread.fork_from {
        if resolve(key).await.map_err(ThreadError::Store)?.is_some() {
            return Err(ThreadError::AlreadyExists { key: key.clone() });
        }
        let parent = resolve(parent_key)
            .await
            .map_err(ThreadError::Store)?
            .ok_or_else(|| ThreadError::NotFound {
                key: parent_key.clone(),
            })?;
        match ownership(namespace, &parent) {
            Ownership::Own => {}
            Ownership::Foreign(owner) => {
                return Err(ThreadError::Foreign {
                    key: parent_key.clone(),
                    owner,
                });
            }
            Ownership::Unclaimed => {
                return Err(ThreadError::Unclaimed {
                    key: parent_key.clone(),
                    reason: unclaimed::FORK_PARENT,
                });
            }
        }
        check_compatibility(thread, &parent, breakdown, fingerprint).map_err(
            |incompatibility| ThreadError::Incompatible {
                key: parent_key.clone(),
                incompatibility,
            },
        )?;
        if parent.state.resume_id.trim().is_empty() {
            return Err(ThreadError::CheckpointMissing {
                key: parent_key.clone(),
            });
        }
        return Ok(Plan::Fork { parent });
    }
    let resume_only = thread.mode == Mode::ResumeOnly;
    let Some(record) = resolve(key).await.map_err(ThreadError::Store)? else {
        return if resume_only {
            Err(ThreadError::NotFound { key: key.clone() })
        } else {
            Ok(Plan::Start {
                archive: None,
                changes: None,
            })
        };
    };
    let claim = match ownership(namespace, &record) {
        Ownership::Own => false,
        Ownership::Foreign(owner) => {
            return Err(ThreadError::Foreign {
                key: key.clone(),
                owner,
            });
        }
        Ownership::Unclaimed => true,
    };
    let compatible = check_compatibility(thread, &record, breakdown, fingerprint);
    // Without an owner, only a resume may happen: where continue-or-start would start over,
    // the run is refused instead (resume-only refuses as it always does).
    if claim && !resume_only {
        let reason = match &compatible {
            Err(_) => Some(unclaimed::INCOMPATIBLE),
            Ok(()) if record.state.resume_id.trim().is_empty() => Some(unclaimed::NO_CHECKPOINT),
            Ok(()) => None,
        };
        if let Some(reason) = reason {
            return Err(ThreadError::Unclaimed {
                key: key.clone(),
                reason,
            });
        }
    }
    match compatible {
        Ok(()) if record.state.resume_id.trim().is_empty() => {
            if resume_only {
                Err(ThreadError::CheckpointMissing { key: key.clone() })
            } else {
                Ok(Plan::Start {
                    archive: Some(record),
                    changes: None,
                })
            }
        }
        Ok(()) => Ok(Plan::Resume { record, claim }),
        Err(incompatibility) if resume_only => Err(ThreadError::Incompatible {
            key: key.clone(),
            incompatibility,
        }),
        Err(incompatibility) => Ok(Plan::Start {
            archive: Some(record),
            changes: Some(incompatibility.changes().to_vec()),
        }),
    }
}

/// The driver's session codec; Threads are refused up front without one.
pub(super) fn codec(thread: &Thread) -> Result<&dyn SessionCodec, ThreadError> {
    thread
        .agent
        .inner
        .driver
        .session_codec()
        .ok_or(ThreadError::Unsupported(driver_spi::Unsupported::Resume))
}

/// A stored state, decoded through the driver's codec from its normalized params. A state the
/// codec cannot decode is refused before the driver runs.
pub(super) fn decode_state(
    thread: &Thread,
    stored: &thread_store::SessionState,
) -> Result<driver_spi::SessionState, ThreadError> {
    let params = SessionParams::new(
        stored.resume_id.clone(),
        stored.display_id.clone().unwrap_or_default(),
        stored.data.clone(),
    );
    match codec(thread)?.from_params(Some(&params)) {
        Ok(Some(state)) => Ok(state),
        Ok(None) | Err(_) => Err(ThreadError::ResumeRejected {
            reason: ResumeRejectReason::InvalidState,
        }),
    }
}

/// A checkpoint in the codec-normalized form the store keeps.
pub(super) fn encode_state(
    thread: &Thread,
    state: &driver_spi::SessionState,
) -> Result<thread_store::SessionState, ThreadError> {
    match codec(thread)?.to_params(Some(state)) {
        Ok(Some(params)) => Ok(thread_store::SessionState {
            resume_id: params.resume_id,
            display_id: (!params.display_id.is_empty()).then_some(params.display_id),
            data: params.data,
        }),
        Ok(None) | Err(_) => Err(ThreadError::Driver {
            kind: FailureKind::Protocol,
            message: "the session codec could not encode the checkpoint".to_owned(),
            retryable: None,
        }),
    }
}
