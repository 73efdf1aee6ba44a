//! Sessions: the context a request carries, the checkpoint state a driver returns, the
//! [`SessionCodec`] capability and the [`SessionGuard`] that decides whether a stored session
//! may continue under the current request.

use std::collections::BTreeMap;

use compat_fingerprint::{Fingerprint, Kind};

use crate::{Request, ResumeRejectReason};

/// How a request relates to a stored session.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionMode {
    /// Continue [`SessionContext::state`] if present, else start a new session. A
    /// [`ResumeRejected`](crate::DriverError::ResumeRejected) makes the core start fresh.
    #[default]
    ContinueOrStart,
    /// Continue [`SessionContext::state`]; never start a new session. A missing state is
    /// rejected with [`ResumeRejectReason::MissingState`].
    ContinueOnly,
    /// Start a new session that branches from [`SessionContext::state`]; the checkpoint
    /// must carry a resume id different from the parent's.
    Fork,
    /// No session: the driver returns no checkpoint.
    Stateless,
}

/// Which session a request starts, continues or forks.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SessionContext {
    /// The mode.
    pub mode: SessionMode,
    /// The stored state to continue or fork, normalized by the driver's codec.
    pub state: Option<SessionState>,
    /// For information only: the resume id this Thread used before, when the core starts a
    /// new session in its place (after drift or a rejected resume), or the parent's resume id
    /// on a fork. Drivers never resume from it; they resume from [`state`](Self::state).
    pub previous_id: Option<String>,
}

impl SessionContext {
    /// Start a new session ([`SessionMode::ContinueOrStart`] without state).
    pub fn start() -> Self {
        Self::default()
    }

    /// Continue `state`, or start fresh if the driver rejects it.
    pub fn continue_or_start(state: SessionState) -> Self {
        Self {
            mode: SessionMode::ContinueOrStart,
            state: Some(state),
            previous_id: None,
        }
    }

    /// Continue `state`, and fail if the driver rejects it.
    pub fn continue_only(state: SessionState) -> Self {
        Self {
            mode: SessionMode::ContinueOnly,
            state: Some(state),
            previous_id: None,
        }
    }

    /// Fork `parent` into a new session.
    pub fn fork(parent: SessionState) -> Self {
        Self {
            mode: SessionMode::Fork,
            previous_id: Some(parent.resume_id.clone()),
            state: Some(parent),
        }
    }

    /// No session.
    pub fn stateless() -> Self {
        Self {
            mode: SessionMode::Stateless,
            state: None,
            previous_id: None,
        }
    }

    /// Sets the informational previous id.
    pub fn with_previous_id(mut self, previous_id: impl Into<String>) -> Self {
        self.previous_id = Some(previous_id.into());
        self
    }
}

/// A driver's session state: what it puts in a checkpoint and receives back to resume.
///
/// Guard values (see [`SessionGuard`]) live in [`data`](Self::data). Nothing here may be a
/// secret: the core stores it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionState {
    /// The provider's session id, used to resume.
    pub resume_id: String,
    /// A human-readable id, if different from the resume id.
    pub display_id: Option<String>,
    /// Driver-defined, non-secret data (guard values, provider details).
    pub data: BTreeMap<String, String>,
}

impl SessionState {
    /// A state with this resume id and nothing else.
    pub fn new(resume_id: impl Into<String>) -> Self {
        Self {
            resume_id: resume_id.into(),
            display_id: None,
            data: BTreeMap::new(),
        }
    }

    /// Sets the display id.
    pub fn with_display_id(mut self, display_id: impl Into<String>) -> Self {
        self.display_id = Some(display_id.into());
        self
    }

    /// Adds one data entry.
    pub fn with_data(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.data.insert(key.into(), value.into());
        self
    }
}

/// The stored, codec-normalized form of a [`SessionState`]: what the core persists in a
/// Thread record and hands back through [`SessionCodec::from_params`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionParams {
    /// The provider's session id.
    pub resume_id: String,
    /// A human-readable id; codecs fill it (for example with the resume id) so it is never
    /// empty for a resumable state.
    pub display_id: String,
    /// Driver-defined, non-secret data, guard values included.
    pub data: BTreeMap<String, String>,
}

impl SessionParams {
    /// Params with these fields.
    pub fn new(
        resume_id: impl Into<String>,
        display_id: impl Into<String>,
        data: BTreeMap<String, String>,
    ) -> Self {
        Self {
            resume_id: resume_id.into(),
            display_id: display_id.into(),
            data,
        }
    }
}

/// Why a codec could not convert session state or params.
///
/// Messages name the problem, never the provider's identity strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The resume id is empty or only whitespace.
    #[error("session state has no resume id")]
    MissingResumeId,
    /// The resume id is malformed (too long, or has control characters).
    #[error("session resume id is malformed ({len} bytes)")]
    InvalidResumeId {
        /// Its length in bytes.
        len: usize,
    },
    /// A data entry the codec needs is missing or malformed.
    #[error("session data entry `{key}` is missing or malformed")]
    InvalidData {
        /// The codec-defined key.
        key: &'static str,
    },
}

/// The session-codec capability: converts between a driver's [`SessionState`] and the
/// [`SessionParams`] the core stores, and computes the resume guard fingerprint.
///
/// # Laws (checked by the conformance kit)
/// - [`name`](Self::name) is non-empty and stable; it is part of the Thread fingerprint.
/// - `to_params(None)` is `Ok(None)` and `from_params(None)` is `Ok(None)`; empty or malformed
///   input returns an error and never panics.
/// - Round trip is lossless: for params `p` produced by `to_params`,
///   `to_params(from_params(p))` equals `p`, and the resume id and every data entry of the
///   original state survive.
/// - [`guard_fingerprint`](Self::guard_fingerprint) is deterministic and changes when the
///   value of any key in [`guard_keys`](Self::guard_keys) changes (or disappears).
///
/// # The guard rule
/// The guard values a driver stores in a checkpoint must come from the **profile's
/// session-compatibility fingerprint** ([`ProfilePayload::session_compatibility`]), never the
/// exact one ([`ProfilePayload::exact`]). On resume the driver compares the stored guard with
/// the current request's ([`SessionGuard::check`]): a semantically compatible endpoint change
/// (new port, rotated token, new bearer env-var name under the same compatibility tuple)
/// leaves the session-compatibility fingerprint, hence the guard, unchanged, and is accepted;
/// a real change (different tools, scope, transport, host MCP server) changes it and is
/// rejected with [`ResumeRejectReason::GuardMismatch`]. [`SessionGuard`] implements the rule;
/// codecs should use it and [`guard_fingerprint`].
///
/// [`ProfilePayload::session_compatibility`]: crate::ProfilePayload::session_compatibility
/// [`ProfilePayload::exact`]: crate::ProfilePayload::exact
pub trait SessionCodec: Send + Sync {
    /// Stable codec name, for example `codex/v1`.
    fn name(&self) -> &str;

    /// The data keys whose values form the resume guard. Non-empty for a resume-capable
    /// driver; [`SessionGuard::KEYS`] for drivers that use [`SessionGuard`].
    fn guard_keys(&self) -> &[&'static str];

    /// Normalizes a driver's state into storable params; `None` gives `Ok(None)`.
    fn to_params(&self, state: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError>;

    /// Rebuilds a state from stored params; `None` gives `Ok(None)`.
    #[allow(
        clippy::wrong_self_convention,
        reason = "the codec converts params; `from_params` pairs with `to_params`"
    )]
    fn from_params(
        &self,
        params: Option<&SessionParams>,
    ) -> Result<Option<SessionState>, CodecError>;

    /// The fingerprint of the guard values in `params`. Never panics, also on empty params.
    fn guard_fingerprint(&self, params: &SessionParams) -> Fingerprint;
}

const GUARD: Kind = Kind::new("agent-sdk 2026-11-30 driver-spi session-guard v1");

/// The guard fingerprint of `params` for a codec named `codec_name` guarding `keys`: a
/// domain-separated hash of the codec name and, for every key, its value or its absence.
///
/// Deterministic, order-free in `keys`, and different whenever one guarded value changes or
/// disappears.
pub fn guard_fingerprint(codec_name: &str, keys: &[&str], params: &SessionParams) -> Fingerprint {
    Fingerprint::of(GUARD, |e| {
        e.record(|r| {
            r.field(1, |e| e.str(codec_name));
            r.field(2, |e| {
                e.map(
                    keys.iter().map(|k| (*k, params.data.get(*k))),
                    |e, k| e.str(k),
                    |e, v| e.option(v, |e, v| e.str(v)),
                )
            });
        })
    })
}

/// The resume guard of one request: the values a checkpoint records and a resumed turn must
/// match.
///
/// Built by [`SessionGuard::for_request`] from the profile's **session-compatibility**
/// fingerprint and the workspace, which is the rule every codec must follow (see
/// [`SessionCodec`]). A driver writes it into each checkpoint ([`SessionGuard::write_to`]) and
/// checks the stored one before it resumes ([`SessionGuard::check`]).
///
/// ```
/// use compat_fingerprint::{Fingerprint, Kind};
/// use driver_spi::{ProfilePayload, Request, ResumeRejectReason, SessionGuard, SessionState};
/// use run_service::RunId;
///
/// const K: Kind = Kind::new("example 2026-11-30 profile v1");
/// let fp = |s: &str| Fingerprint::of(K, |e| e.str(s));
/// let turn1 = Request::new(RunId::new("r1"), "hi", ProfilePayload::new(fp("port-4101"), fp("ui-v1")));
/// let mut state = SessionState::new("session-1");
/// SessionGuard::for_request(&turn1).write_to(&mut state);
///
/// // New port: the exact fingerprint changes, the session-compatibility one does not.
/// let turn2 = Request::new(RunId::new("r2"), "hi", ProfilePayload::new(fp("port-4202"), fp("ui-v1")));
/// assert_eq!(SessionGuard::for_request(&turn2).check(&state), Ok(()));
///
/// // A real semantic change is rejected.
/// let turn3 = Request::new(RunId::new("r3"), "hi", ProfilePayload::new(fp("port-4202"), fp("ui-v2")));
/// assert_eq!(SessionGuard::for_request(&turn3).check(&state), Err(ResumeRejectReason::GuardMismatch));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionGuard {
    profile: String,
    workspace: String,
}

impl SessionGuard {
    /// Data key of the profile's session-compatibility fingerprint.
    pub const PROFILE_KEY: &'static str = "guard.profile_session_fingerprint";
    /// Data key of the workspace (empty when the request has none).
    pub const WORKSPACE_KEY: &'static str = "guard.workspace";
    /// Every key the guard writes, for [`SessionCodec::guard_keys`].
    pub const KEYS: &'static [&'static str] = &[Self::PROFILE_KEY, Self::WORKSPACE_KEY];

    /// The guard of a request: its profile's session-compatibility fingerprint and workspace.
    pub fn for_request(request: &Request) -> Self {
        Self::new(
            request.profile.session_compatibility,
            request.workspace.as_deref(),
        )
    }

    /// A guard from explicit values. Pass a **session-compatibility** fingerprint; passing
    /// the exact one breaks resume across endpoint rotation.
    pub fn new(session_compatibility: Fingerprint, workspace: Option<&str>) -> Self {
        Self {
            profile: session_compatibility.to_string(),
            workspace: workspace.unwrap_or_default().to_owned(),
        }
    }

    /// Records the guard values in a checkpoint state.
    pub fn write_to(&self, state: &mut SessionState) {
        state
            .data
            .insert(Self::PROFILE_KEY.to_owned(), self.profile.clone());
        state
            .data
            .insert(Self::WORKSPACE_KEY.to_owned(), self.workspace.clone());
    }

    /// Accepts a stored state whose guard values equal this guard's;
    /// [`ResumeRejectReason::GuardMismatch`] otherwise, also when a value is missing
    /// (fail closed).
    pub fn check(&self, stored: &SessionState) -> Result<(), ResumeRejectReason> {
        let matches =
            |key: &str, want: &str| stored.data.get(key).map(String::as_str) == Some(want);
        if matches(Self::PROFILE_KEY, &self.profile)
            && matches(Self::WORKSPACE_KEY, &self.workspace)
        {
            Ok(())
        } else {
            Err(ResumeRejectReason::GuardMismatch)
        }
    }
}

/// A [`SessionCodec`] for the common case: a provider session id plus the [`SessionGuard`]
/// values, with a driver-specific rule for what a valid id looks like.
///
/// Drivers wrap a `const` one in their own named codec type. The codec copies the state's
/// data as is (guard values and any non-secret driver data), fills the display id with the
/// resume id when it is blank, and validates the resume id in both directions with `validate`
/// (an empty or blank id is always [`CodecError::MissingResumeId`]).
///
/// ```
/// use driver_spi::{CodecError, GuardedCodec, SessionCodec, SessionState};
///
/// fn ascii_id(id: &str) -> Result<(), CodecError> {
///     if id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
///         Ok(())
///     } else {
///         Err(CodecError::InvalidResumeId { len: id.len() })
///     }
/// }
/// const CODEC: GuardedCodec = GuardedCodec::new("example/v1", ascii_id);
///
/// let params = CODEC.to_params(Some(&SessionState::new("abc-1"))).unwrap().unwrap();
/// assert_eq!(params.display_id, "abc-1");
/// assert_eq!(CODEC.to_params(Some(&SessionState::new(" "))), Err(CodecError::MissingResumeId));
/// assert!(CODEC.to_params(Some(&SessionState::new("a b"))).is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct GuardedCodec {
    name: &'static str,
    validate: fn(&str) -> Result<(), CodecError>,
}

impl GuardedCodec {
    /// A codec named `name` (stable: it is part of the Thread fingerprint) whose resume ids
    /// must pass `validate`.
    pub const fn new(name: &'static str, validate: fn(&str) -> Result<(), CodecError>) -> Self {
        Self { name, validate }
    }

    fn check(&self, id: &str) -> Result<(), CodecError> {
        if id.trim().is_empty() {
            return Err(CodecError::MissingResumeId);
        }
        (self.validate)(id)
    }
}

impl SessionCodec for GuardedCodec {
    fn name(&self) -> &str {
        self.name
    }

    fn guard_keys(&self) -> &[&'static str] {
        SessionGuard::KEYS
    }

    fn to_params(&self, state: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError> {
        let Some(state) = state else {
            return Ok(None);
        };
        self.check(&state.resume_id)?;
        let display_id = state
            .display_id
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .unwrap_or(&state.resume_id);
        Ok(Some(SessionParams::new(
            state.resume_id.clone(),
            display_id,
            state.data.clone(),
        )))
    }

    fn from_params(
        &self,
        params: Option<&SessionParams>,
    ) -> Result<Option<SessionState>, CodecError> {
        let Some(params) = params else {
            return Ok(None);
        };
        self.check(&params.resume_id)?;
        let mut state = SessionState::new(params.resume_id.clone());
        if !params.display_id.trim().is_empty() {
            state.display_id = Some(params.display_id.clone());
        }
        state.data = params.data.clone();
        Ok(Some(state))
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> Fingerprint {
        guard_fingerprint(self.name, SessionGuard::KEYS, params)
    }
}
