//! The one [`Redactor`]: known secret values in every form, then the token patterns.

use std::borrow::Cow;
use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use crate::known::SecretSet;
use crate::patterns::redact_patterns;

/// The replacement text.
pub const REDACTED: &str = "[REDACTED]";

/// Secret values shorter than this are ignored by [`Redactor`]: they cannot be told apart
/// from ordinary text.
pub const MIN_SECRET_LEN: usize = 4;

/// Redacts token patterns in `text`:
///
/// [`redact`] replaces, with [`REDACTED`]:
///
/// * in an `Authorization` or `Proxy-Authorization` header (`Authorization: …`, or as a JSON
///   or quoted field), everything after a known scheme (`Bearer`, `Basic`, `Token`, `Digest`,
///   `Negotiate`, `NTLM`, `AWS4-HMAC-SHA256`, …) up to the end of the line or of the quoted
///   value; the whole value when the scheme is unknown;
/// * the whole value of a `Cookie` or `Set-Cookie` header;
/// * elsewhere, the credential after `Bearer` or `Basic` (any case, then spaces or tabs);
/// * the password of a URL's userinfo (`https://user:[REDACTED]@host`,
///   `postgresql://app:[REDACTED]@db`), or the whole userinfo when it has no password
///   (`https://[REDACTED]@github.com`);
/// * tokens by their shape: bare JWTs (`eyJ…`), `sk-…` (OpenAI, Anthropic), GitHub
///   `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_`, Google `AIza…`, AWS `AKIA…`/`ASIA…`
///   key ids, Slack `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-`/`xoxe-`/`xapp-`, GitLab
///   `glpat-`/`gldt-`/`glrt-`, Stripe `sk_live_`/`sk_test_`/`rk_live_`/`rk_test_`, npm `npm_`
///   and Hugging Face `hf_` tokens;
/// * the body of a PEM private key block (`-----BEGIN … PRIVATE KEY-----`);
/// * the value of a sensitive field, in JSON (`"access_token": "…"`), key=value
///   (`refresh_token=…&`) or header (`x-api-key: …`) form. The fields are `access_token`,
///   `refresh_token`, `id_token` (also camelCase, e.g. `accessToken`), `x-api-key`, `api_key`,
///   `api-key`, `apikey`, `client_secret`, `private_key`, `secret_access_key`, `secret_key`,
///   `auth`, `passphrase`, `pgpassword`, `pwd`, and the generic `token`, `password`, `passwd`
///   and `secret`; the query-style `key`, `sig` and `signature` only in `key=value` form. Case
///   is ignored, and a field matches wherever it starts a word (so `max_token=5` and
///   `AWS_SECRET_ACCESS_KEY=…` are redacted: over-redacting is the safe mistake).
///
/// [`Redactor::with_secrets`] also replaces every occurrence of known secret values (for
/// example the secrets injected into a runtime), before the patterns run. A known secret is
/// found literally and in its percent-encoded (`%40`, `%2f`, `+` for a space) and JSON-escaped
/// (`\"`, `\/`, `\u00e9`, surrogate pairs) forms, in any mix; where occurrences of several
/// secrets overlap or touch, their union is replaced, so no part of either survives.
///
/// The scanner is hand-written: one pass over the bytes, a cheap first-byte test at each
/// position (a table built from the rule lists), and no allocation when nothing matches (the
/// result borrows the input). It keeps no dependency on a regex engine, and it cannot be
/// broken by escaping mistakes in patterns.
///
/// ```
/// use redaction::redact;
///
/// assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer [REDACTED]");
/// assert_eq!(redact(r#"{"refresh_token":"r1"}"#), r#"{"refresh_token":"[REDACTED]"}"#);
/// assert_eq!(redact("postgresql://app:pw@db/app"), "postgresql://app:[REDACTED]@db/app");
/// assert!(matches!(redact("nothing here"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_patterns(text)
}

/// The workspace's one redactor: the secret values it knows, found in every form (literal,
/// percent-encoded, JSON-escaped, overlapping), then the token patterns of [`redact()`].
///
/// Drivers build one from a request (`driver_spi::Request::redactor`), the core from a run's
/// attachments, `runtime-env` from a namespace's injected secrets; they are the same type
/// (`driver_spi::Redactor` and `runtime_env::Redactor` re-export it). For text that arrives in
/// pieces, wrap it in a [`StreamRedactor`](crate::StreamRedactor).
///
/// `Debug` shows only how many secrets it holds; it has no `Serialize`.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: SecretSet,
}

impl Redactor {
    /// A redactor with the patterns only (same as [`redact()`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor that also replaces each of `secrets` wherever it occurs, also
    /// percent-encoded or JSON-escaped.
    ///
    /// ```
    /// use redaction::Redactor;
    /// use secrecy::SecretString;
    ///
    /// let r = Redactor::with_secrets([SecretString::from("hunter2/pw")]);
    /// assert_eq!(r.redact("password is hunter2/pw"), "password is [REDACTED]");
    /// assert_eq!(r.redact("?p=hunter2%2Fpw&x=1"), "?p=[REDACTED]&x=1");
    /// assert_eq!(r.redact(r#"{"p":"hunter2\/pw"}"#), r#"{"p":"[REDACTED]"}"#);
    /// ```
    pub fn with_secrets<I: IntoIterator<Item = SecretString>>(secrets: I) -> Self {
        let mut r = Self::new();
        for s in secrets {
            r.add_secret(s);
        }
        r
    }

    /// Adds one secret value (ignored when shorter than [`MIN_SECRET_LEN`] bytes: a shorter
    /// value would blank out ordinary text).
    pub fn add_secret(&mut self, secret: SecretString) {
        if secret.expose_secret().len() >= MIN_SECRET_LEN {
            self.secrets.insert(secret);
        }
    }

    /// Redacts known secrets (in every form, overlaps merged), then token patterns.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.secrets.redact(text) {
            Cow::Borrowed(text) => redact_patterns(text),
            Cow::Owned(text) => Cow::Owned(redact_patterns(&text).into_owned()),
        }
    }
}

impl Redactor {
    /// Whether `text` holds one of the known secret values, in any form the redactor finds
    /// (patterns are not consulted): the check canary tests and recorders need.
    ///
    /// ```
    /// use redaction::Redactor;
    /// use secrecy::SecretString;
    ///
    /// let r = Redactor::with_secrets([SecretString::from("tok/en")]);
    /// assert!(r.finds_secret("?t=tok%2Fen"));
    /// assert!(!r.finds_secret("Authorization: Bearer other"));
    /// ```
    pub fn finds_secret(&self, text: &str) -> bool {
        matches!(self.secrets.redact(text), Cow::Owned(_))
    }

    /// Adds every secret value `other` knows (the patterns are the same for every redactor).
    ///
    /// ```
    /// use redaction::Redactor;
    /// use secrecy::SecretString;
    ///
    /// let mut env = Redactor::with_secrets([SecretString::from("env-secret")]);
    /// env.merge(&Redactor::with_secrets([SecretString::from("request-secret")]));
    /// assert_eq!(env.redact("env-secret request-secret"), "[REDACTED] [REDACTED]");
    /// ```
    pub fn merge(&mut self, other: &Redactor) {
        self.secrets.extend(other.secrets.iter().cloned());
    }

    /// How many distinct secret values it knows.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Whether it knows no secret value (it still applies the patterns).
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The known values, for the stream redactor.
    pub(crate) fn secrets(&self) -> &SecretSet {
        &self.secrets
    }
}

impl FromIterator<SecretString> for Redactor {
    fn from_iter<I: IntoIterator<Item = SecretString>>(secrets: I) -> Self {
        Self::with_secrets(secrets)
    }
}

impl Extend<SecretString> for Redactor {
    fn extend<I: IntoIterator<Item = SecretString>>(&mut self, secrets: I) {
        for secret in secrets {
            self.add_secret(secret);
        }
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}
