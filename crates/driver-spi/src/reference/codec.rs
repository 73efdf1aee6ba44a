//! The reference driver's session codec: normalizes checkpoints and guards them with
//! [`SessionGuard`](crate::SessionGuard) (the profile's session-compatibility fingerprint and
//! the workspace).

use compat_fingerprint::Fingerprint;

use crate::{CodecError, GuardedCodec, SessionCodec, SessionParams, SessionState};

/// Longest accepted resume id, in bytes.
const MAX_RESUME_ID: usize = 256;

fn validate_resume_id(id: &str) -> Result<(), CodecError> {
    if id.len() > MAX_RESUME_ID || id.chars().any(char::is_control) {
        return Err(CodecError::InvalidResumeId { len: id.len() });
    }
    Ok(())
}

const CODEC: GuardedCodec = GuardedCodec::new(ReferenceCodec::NAME, validate_resume_id);

/// The [`SessionCodec`] of the [`ReferenceDriver`](super::ReferenceDriver), named
/// `reference/v1`: a [`GuardedCodec`] whose resume ids must be non-blank, at most 256 bytes and
/// free of control characters. The display id defaults to the resume id. The guard keys are
/// [`SessionGuard::KEYS`](crate::SessionGuard::KEYS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReferenceCodec;

impl ReferenceCodec {
    /// The codec name.
    pub const NAME: &'static str = "reference/v1";
}

impl SessionCodec for ReferenceCodec {
    fn name(&self) -> &str {
        CODEC.name()
    }

    fn guard_keys(&self) -> &[&'static str] {
        CODEC.guard_keys()
    }

    fn to_params(&self, state: Option<&SessionState>) -> Result<Option<SessionParams>, CodecError> {
        CODEC.to_params(state)
    }

    fn from_params(
        &self,
        params: Option<&SessionParams>,
    ) -> Result<Option<SessionState>, CodecError> {
        CODEC.from_params(params)
    }

    fn guard_fingerprint(&self, params: &SessionParams) -> Fingerprint {
        CODEC.guard_fingerprint(params)
    }
}
