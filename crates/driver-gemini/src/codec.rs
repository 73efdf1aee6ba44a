//! The Gemini session codec: a Gemini session id plus the [`SessionGuard`] values.

use driver_spi::{CodecError, GuardedCodec};

#[cfg(doc)]
use driver_spi::SessionGuard;

/// The codec name, part of every Gemini Thread's fingerprint.
pub const CODEC_NAME: &str = "gemini/v1";

fn validate(id: &str) -> Result<(), CodecError> {
    if driver_cli::is_safe_id(id) {
        Ok(())
    } else {
        Err(CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of the Gemini driver, named [`CODEC_NAME`].
///
/// The resume id is the UUID the driver chose for `--session-id` when the session started
/// (Gemini reports it back in `init`). The codec stores any id that is safe as one argv
/// element ([`driver_cli::is_safe_id`]); the driver resumes only UUIDs, because Gemini takes
/// `latest` and numbers for other sessions. The stored state holds the session id and the
/// [`SessionGuard`] values only: no secret, URL, port or env-var name.
///
/// ```
/// use driver_gemini::GEMINI_CODEC;
/// use driver_spi::{SessionCodec, SessionState};
///
/// let state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
/// let params = GEMINI_CODEC.to_params(Some(&state)).unwrap().unwrap();
/// assert_eq!(params.display_id, state.resume_id);
/// assert!(GEMINI_CODEC.to_params(Some(&SessionState::new("--resume"))).is_err());
/// ```
pub const GEMINI_CODEC: GuardedCodec = GuardedCodec::new(CODEC_NAME, validate);
