//! The per-agent bearer credential: a random token, the random env-var name that carries it,
//! and a constant-time check of a presented `Authorization` header.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

/// Prefix of the env-var name that carries the token; 16 random hex digits follow.
pub const TOKEN_ENV_PREFIX: &str = "AGENT_TOOLS_TOKEN_";

/// Random bytes in a token (rendered as 64 hex digits).
const TOKEN_BYTES: usize = 32;

/// Why a credential could not be minted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the operating system's random source failed")]
pub(crate) struct RandomUnavailable;

pub(crate) fn random_hex(bytes: usize) -> Result<String, RandomUnavailable> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|_| RandomUnavailable)?;
    let mut out = String::with_capacity(bytes * 2);
    for b in buf {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The bearer credential of one agent's tool server.
pub(crate) struct Credential {
    env_var: String,
    token: SecretString,
    /// blake3 of the token: presented tokens are hashed and compared with `blake3::Hash`'s
    /// constant-time equality, so neither content nor length leaks through timing.
    digest: blake3::Hash,
    /// Random key of the digest that names a Thread's slot, so a slot path reveals neither
    /// the thread key nor a digest that links it across agents.
    slot_key: [u8; 32],
}

impl Credential {
    pub(crate) fn mint() -> Result<Self, RandomUnavailable> {
        let env_var = format!("{TOKEN_ENV_PREFIX}{}", random_hex(8)?.to_uppercase());
        let token = random_hex(TOKEN_BYTES)?;
        let digest = blake3::hash(token.as_bytes());
        let mut slot_key = [0u8; 32];
        getrandom::fill(&mut slot_key).map_err(|_| RandomUnavailable)?;
        Ok(Self {
            env_var,
            token: SecretString::from(token),
            digest,
            slot_key,
        })
    }

    /// The slot (32 hex digits) of the Thread `thread`: the same for every run of the Thread
    /// served by this credential's server, unrelated across servers.
    pub(crate) fn thread_slot(&self, thread: &str) -> String {
        let hash = blake3::keyed_hash(&self.slot_key, thread.as_bytes());
        hash.to_hex()[..32].to_owned()
    }

    pub(crate) fn env_var(&self) -> &str {
        &self.env_var
    }

    pub(crate) fn token(&self) -> &SecretString {
        &self.token
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`. The scheme is
    /// case-insensitive (RFC 9110); the token is compared in constant time.
    pub(crate) fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some((scheme, token)) = split_bearer(value) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return false;
        }
        blake3::hash(token) == self.digest
    }

    #[cfg(test)]
    pub(crate) fn expose_for_test(&self) -> &str {
        self.token.expose_secret()
    }
}

fn split_bearer(value: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some((scheme, token))
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("env_var", &self.env_var)
            .field("token", &"[REDACTED]")
            .finish()
    }
}

/// Exposes the token for the one place that needs it: the secret env binding handed to a run.
pub(crate) fn expose(token: &SecretString) -> &str {
    token.expose_secret()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn minted_credentials_are_random_and_well_formed() {
        let a = Credential::mint().unwrap();
        let b = Credential::mint().unwrap();
        assert_ne!(a.env_var(), b.env_var());
        assert_ne!(a.expose_for_test(), b.expose_for_test());
        assert_eq!(a.expose_for_test().len(), 64);
        let suffix = a.env_var().strip_prefix(TOKEN_ENV_PREFIX).unwrap();
        assert_eq!(suffix.len(), 16);
        // A valid POSIX env-var name: upper-case letters, digits and `_`, not starting with a digit.
        assert!(
            a.env_var()
                .bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        );
        assert!(!format!("{a:?}").contains(a.expose_for_test()));
    }

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let c = Credential::mint().unwrap();
        let token = c.expose_for_test().to_owned();
        assert!(c.accepts(Some(format!("Bearer {token}").as_bytes())));
        assert!(c.accepts(Some(format!("bearer {token}").as_bytes())));
        assert!(!c.accepts(None));
        assert!(!c.accepts(Some(b"")));
        assert!(!c.accepts(Some(token.as_bytes())));
        assert!(!c.accepts(Some(format!("Basic {token}").as_bytes())));
        assert!(!c.accepts(Some(format!("Bearer {token}x").as_bytes())));
        assert!(!c.accepts(Some(format!("Bearer {}", &token[1..]).as_bytes())));
        assert!(!c.accepts(Some(b"Bearer ")));
    }
}
