//! Redaction: the one place this workspace removes secrets from text bound for events, logs,
//! errors, reports and support output.
//!
//! - [`Redactor`] knows secret values (a run's injected tokens, a namespace's model key) and
//!   finds each literally, percent-encoded (`%2F`, `+` for a space) or JSON-escaped (`\/`,
//!   `\u00e9`, surrogate pairs), in any mix; then it applies the token patterns of
//!   [`redact()`] (authorization headers, bearer credentials, URL passwords, key shapes such
//!   as `sk-…` and `ghp_…`, PEM private keys, sensitive fields such as `access_token`).
//! - [`StreamRedactor`] does the same for text that arrives in pieces: however the text is
//!   split (and [paused](StreamRedactor::pause), as a run's text is at a tool call), the joined
//!   output is the whole text redacted. It holds back only what the text so far cannot
//!   decide, with work linear in the streamed bytes and bounded memory.
//!
//! `driver_spi::Redactor` and `runtime_env::Redactor` are re-exports of [`Redactor`]: a driver
//! author, a host and the core use one type with one strength.
//!
//! ```
//! use redaction::{Redactor, redact};
//! use secrecy::SecretString;
//!
//! assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer [REDACTED]");
//! let r = Redactor::with_secrets([SecretString::from("opaque/canary")]);
//! assert_eq!(r.redact("got opaque%2Fcanary back"), "got [REDACTED] back");
//! ```
//!
//! # Invariants
//! - Overlapping or touching occurrences of known secrets are replaced as one span, so no part
//!   of any secret survives; a replacement never cuts a UTF-8 character.
//! - Text with nothing to redact is returned borrowed, without allocating.
//! - Secret values are [`secrecy::SecretString`]s: `Debug` shows only how many there are, and
//!   nothing here serializes one.
//!
//! # What it deliberately does not do
//! - It cannot recognise a secret re-encoded in a form it does not know (base64, hex,
//!   reversed, split by inserted characters): only the forms above are redacted.
//! - Known values shorter than [`MIN_SECRET_LEN`] bytes are ignored (they would blank out
//!   ordinary text).
//! - Patterns over-redact rather than under-redact: `max_token=5` loses its value; in a
//!   stream, a construct still undecided after [`MAX_PENDING`] bytes (a PEM block with no
//!   END, an unterminated header line or quoted value) is released redacted up to its end.
//!
//! Stability: pre-1.0; the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod known;
mod patterns;
mod redactor;
mod stream;

pub use redactor::{MIN_SECRET_LEN, REDACTED, Redactor, redact};
pub use stream::{MAX_PENDING, StreamRedactor};
