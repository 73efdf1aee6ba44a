//! Sessions as every CLI driver handles them: the one [`SessionPlan`] of an invocation, and
//! the one session codec shape (`session_codec`, used by [`Identity::new`](crate::Identity::new)).
//!
//! Every pinned CLI resumes a session by its id, and takes any other string for a session
//! *name* or title, silently starting a new session when no session has that name. So a
//! stored id must be a UUID before it reaches argv, and the guard is checked before anything
//! is spawned.

use driver_spi::{
    CodecError, DriverError, GuardedCodec, Request, ResumeRejectReason, SessionCodec, SessionGuard,
    SessionMode, SessionState, Unsupported,
};

/// What one invocation does with sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionPlan<'a> {
    /// A new, persisted session: under this host-chosen id (`--session-id`), or, with `None`,
    /// under the id the CLI reports.
    Start(Option<&'a str>),
    /// A new session whose id is not kept.
    Stateless,
    /// Continue this stored session.
    Resume(&'a str),
    /// Branch a new session from this stored one.
    Fork(&'a str),
}

impl<'a> SessionPlan<'a> {
    /// The plan of `request` for the driver `identity` (its codec); a new session gets
    /// `new_id` (`None` when the CLI chooses the id).
    ///
    /// A stored state must be accepted by the codec, be a UUID (unless the identity takes
    /// [any safe id](crate::Identity::with_opaque_ids)), and pass the request's
    /// [`SessionGuard`]; this is checked before anything is spawned.
    ///
    /// # Errors
    /// [`DriverError::ResumeRejected`] with `MissingState`, `InvalidState` or `GuardMismatch`,
    /// and [`Unsupported::Resume`] for an unknown mode.
    pub fn of(
        request: &'a Request,
        identity: &crate::Identity,
        new_id: Option<&'a str>,
    ) -> Result<Self, DriverError> {
        let session = &request.session;
        let stored_id = |state| stored_id(request, identity, state);
        Ok(match session.mode {
            SessionMode::Stateless => Self::Stateless,
            SessionMode::ContinueOrStart if session.state.is_none() => Self::Start(new_id),
            SessionMode::ContinueOrStart | SessionMode::ContinueOnly => {
                Self::Resume(stored_id(session.state.as_ref())?)
            }
            SessionMode::Fork => Self::Fork(stored_id(session.state.as_ref())?),
            _ => return Err(Unsupported::Resume.into()),
        })
    }

    /// Whether the invocation continues a stored session (resume or fork).
    pub(crate) fn is_resuming(self) -> bool {
        matches!(self, Self::Resume(_) | Self::Fork(_))
    }

    /// The id the CLI must report for this plan: the host-chosen id of a new session, or the
    /// resumed one. A fork and a CLI-chosen id have none.
    pub(crate) fn expected_id(self) -> Option<&'a str> {
        match self {
            Self::Start(id) => id,
            Self::Resume(id) => Some(id),
            Self::Stateless | Self::Fork(_) => None,
        }
    }

    /// The flags of the CLIs that take a host-chosen id: `--session-id <id>`, `--resume <id>`,
    /// `--resume <id> --fork-session`, or `stateless_flag` (which differs between them).
    pub fn session_id_flags(self, stateless_flag: Option<&str>) -> Vec<String> {
        match self {
            Self::Start(Some(id)) => vec!["--session-id".to_owned(), id.to_owned()],
            Self::Start(None) => Vec::new(),
            Self::Stateless => stateless_flag.map(str::to_owned).into_iter().collect(),
            Self::Resume(id) => vec!["--resume".to_owned(), id.to_owned()],
            Self::Fork(id) => vec![
                "--resume".to_owned(),
                id.to_owned(),
                "--fork-session".to_owned(),
            ],
        }
    }
}

fn stored_id<'r>(
    request: &Request,
    identity: &crate::Identity,
    state: Option<&'r SessionState>,
) -> Result<&'r str, DriverError> {
    let state = state.ok_or(ResumeRejectReason::MissingState)?;
    let shaped = identity.opaque_ids || crate::is_uuid(&state.resume_id);
    if identity.codec.to_params(Some(state)).is_err() || !shaped {
        return Err(ResumeRejectReason::InvalidState.into());
    }
    SessionGuard::for_request(request).check(state)?;
    Ok(state.resume_id.as_str())
}

fn validate_id(id: &str) -> Result<(), CodecError> {
    if crate::is_safe_id(id) {
        Ok(())
    } else {
        Err(CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of a CLI driver, named `name` ([`Identity::new`](crate::Identity::new)).
pub(crate) const fn session_codec(name: &'static str) -> GuardedCodec {
    GuardedCodec::new(name, validate_id)
}
