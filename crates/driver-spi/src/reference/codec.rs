//! The reference driver's session codec: normalizes checkpoints and guards them with
//! [`SessionGuard`] (the profile's session-compatibility fingerprint and the workspace).

use compat_fingerprint::Fingerprint;

use crate::{
    CodecError, SessionCodec, SessionGuard, SessionParams, SessionState, guard_fingerprint,
};

/// Longest accepted resume id, in bytes.
const MAX_RESUME_ID: usize = 256;

/// The [`SessionCodec`] of the [`ReferenceDriver`](super::ReferenceDriver), named
/// `reference/v1`.
///
/// A resume id must be non-blank, at most 256 bytes and free of control characters. The
/// display id defaults to the resume id. The guard keys are [`SessionGuard::KEYS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReferenceCodec;

impl ReferenceCodec {
    /// The codec name.
    pub const NAME: &'static str = "reference/v1";
}

fn validate_resume_id(id: &str) -> Result<(), CodecError> {
    if id.trim().is_empty() {
        return Err(CodecError::MissingResumeId);
    }
    if id.len() > MAX_RESUME_ID || id.chars().any(char::is_control) {
        return Err(CodecError::InvalidResumeId { len: id.len() });
    }
    Ok(())
}

impl SessionCodec for ReferenceCodec {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn guard_keys(&self) -> &[&'static str] {
        SessionGuard::KEYS
    }

    fn to_params(&self, state: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError> {
        let Some(state) = state else {
            return Ok(None);
        };
        validate_resume_id(&state.resume_id)?;
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
        validate_resume_id(&params.resume_id)?;
        let mut state = SessionState::new(params.resume_id.clone());
        if !params.display_id.trim().is_empty() {
            state.display_id = Some(params.display_id.clone());
        }
        state.data = params.data.clone();
        Ok(Some(state))
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> Fingerprint {
        guard_fingerprint(Self::NAME, SessionGuard::KEYS, params)
    }
}
