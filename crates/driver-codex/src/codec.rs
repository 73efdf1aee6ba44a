//! The Codex session codec: a Codex thread id plus the [`SessionGuard`] values.

use driver_spi::{CodecError, GuardedCodec};

#[cfg(doc)]
use driver_spi::SessionGuard;

/// The codec name, part of every Codex Thread's fingerprint.
pub const CODEC_NAME: &str = "codex/v1";

fn validate(id: &str) -> Result<(), CodecError> {
    if driver_cli::is_safe_id(id) {
        Ok(())
    } else {
        Err(CodecError::InvalidResumeId { len: id.len() })
    }
}

/// The session codec of the Codex driver, named [`CODEC_NAME`].
///
/// The resume id is the Codex thread id from `thread.started`. The codec stores any id that
/// is safe as one argv element ([`driver_cli::is_safe_id`]); the driver resumes only UUIDs,
/// because Codex takes anything else for a thread *name*. The display id
/// defaults to the resume id. The stored state holds the thread id and the [`SessionGuard`]
/// values only: no secret, no URL, port or env-var name.
///
/// ```
/// use driver_codex::CODEX_CODEC;
/// use driver_spi::{SessionCodec, SessionState};
///
/// let state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
/// let params = CODEX_CODEC.to_params(Some(&state)).unwrap().unwrap();
/// assert_eq!(params.display_id, state.resume_id);
/// assert!(CODEX_CODEC.to_params(Some(&SessionState::new("--last"))).is_err());
/// ```
pub const CODEX_CODEC: GuardedCodec = GuardedCodec::new(CODEC_NAME, validate);
