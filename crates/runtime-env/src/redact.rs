//! Redaction of tokens in text bound for logs, events and support output.
//!
//! [`redact`] replaces, with [`REDACTED`]:
//!
//! * the credential after `Bearer` or `Basic` (any case, then spaces or tabs);
//! * API keys by their shape: `sk-…` (OpenAI, Anthropic; at least 10 characters after `sk-`),
//!   GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_` tokens, and Google `AIza…` keys;
//! * the value of a sensitive field, in JSON (`"access_token": "…"`), key=value
//!   (`refresh_token=…&`) or header (`x-api-key: …`) form. The fields are `access_token`,
//!   `refresh_token`, `id_token` (also camelCase, e.g. `accessToken`), `x-api-key`, `api_key`,
//!   `api-key`, `apikey`, `client_secret`, and the generic `token`, `password`, `passwd` and
//!   `secret`, in any case, wherever they start a word (so `max_token=5` is redacted too:
//!   over-redacting is the safe mistake).
//!
//! [`Redactor::with_secrets`] also replaces every occurrence of known secret values (for
//! example the secrets injected into a runtime), before the patterns run.
//!
//! The scanner is hand-written: one pass over the bytes, a cheap first-byte test at each
//! position, and no allocation when nothing matches (the result borrows the input). It keeps
//! no dependency on a regex engine, and it cannot be broken by escaping mistakes in patterns.

use std::borrow::Cow;
use std::fmt;

use secrecy::{ExposeSecret, SecretString};

/// The replacement text.
pub const REDACTED: &str = "[REDACTED]";

/// Secret values shorter than this are ignored by [`Redactor`]: they cannot be told apart
/// from ordinary text.
pub const MIN_SECRET_LEN: usize = 4;

/// Redacts token patterns in `text`; see the [module documentation](self).
///
/// ```
/// use runtime_env::redact;
///
/// assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer [REDACTED]");
/// assert_eq!(redact(r#"{"refresh_token":"r1"}"#), r#"{"refresh_token":"[REDACTED]"}"#);
/// assert!(matches!(redact("nothing here"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_patterns(text)
}

/// A redactor that knows secret values as well as the token patterns.
///
/// `Debug` shows only how many secrets it holds.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<SecretString>,
}

impl Redactor {
    /// A redactor with the patterns only (same as [`redact`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor that also replaces each of `secrets` wherever it occurs.
    ///
    /// ```
    /// use runtime_env::Redactor;
    /// use secrecy::SecretString;
    ///
    /// let r = Redactor::with_secrets([SecretString::from("hunter2-pw")]);
    /// assert_eq!(r.redact("password is hunter2-pw"), "password is [REDACTED]");
    /// ```
    pub fn with_secrets<I: IntoIterator<Item = SecretString>>(secrets: I) -> Self {
        let mut r = Self::new();
        for s in secrets {
            r.add_secret(s);
        }
        r
    }

    /// Adds one secret value (ignored when shorter than [`MIN_SECRET_LEN`] bytes).
    pub fn add_secret(&mut self, secret: SecretString) {
        if secret.expose_secret().len() < MIN_SECRET_LEN {
            return;
        }
        let pos = self
            .secrets
            .partition_point(|s| s.expose_secret().len() >= secret.expose_secret().len());
        self.secrets.insert(pos, secret);
    }

    /// Redacts known secrets, then token patterns.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut current: Cow<'a, str> = Cow::Borrowed(text);
        for secret in &self.secrets {
            let s = secret.expose_secret();
            if current.contains(s) {
                current = Cow::Owned(current.replace(s, REDACTED));
            }
        }
        match current {
            Cow::Borrowed(t) => redact_patterns(t),
            Cow::Owned(t) => Cow::Owned(redact_patterns(&t).into_owned()),
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

/// Field names whose values are redacted (matched ASCII-case-insensitively).
const SENSITIVE_KEYS: &[&[u8]] = &[
    b"access_token",
    b"accesstoken",
    b"refresh_token",
    b"refreshtoken",
    b"id_token",
    b"idtoken",
    b"x-api-key",
    b"api_key",
    b"api-key",
    b"apikey",
    b"client_secret",
    b"clientsecret",
    b"token",
    b"password",
    b"passwd",
    b"secret",
];

/// Authorization schemes whose credential is redacted.
const SCHEMES: &[&[u8]] = &[b"bearer", b"basic"];

/// A token prefix (case-sensitive), the minimum body length after it, and the body charset.
type PrefixRule = (&'static [u8], usize, fn(u8) -> bool);

/// Token shapes recognised by their prefix.
const PREFIXED: &[PrefixRule] = &[
    (b"sk-", 10, is_key_byte),
    (b"github_pat_", 20, is_key_byte),
    (b"ghp_", 20, is_alnum),
    (b"gho_", 20, is_alnum),
    (b"ghu_", 20, is_alnum),
    (b"ghs_", 20, is_alnum),
    (b"ghr_", 20, is_alnum),
    (b"AIza", 30, is_key_byte),
];

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// RFC 7235 token68 characters.
fn is_token68_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Where a bare (unquoted) value ends.
fn ends_bare_value(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'&' | b',' | b';' | b'"' | b'\'' | b')' | b'}' | b']' | b'<' | b'>'
        )
}

fn starts_with_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.len() >= needle.len() && haystack[..needle.len()].eq_ignore_ascii_case(needle)
}

/// Could a pattern start at a byte with this value? (A cheap filter before the real tests.)
fn is_candidate_start(b: u8) -> bool {
    matches!(
        b.to_ascii_lowercase(),
        b'a' | b'b' | b'c' | b'g' | b'i' | b'p' | b'r' | b's' | b't' | b'x'
    )
}

/// A matched span to replace with [`REDACTED`], and where scanning resumes.
struct Hit {
    start: usize,
    end: usize,
    resume: usize,
}

fn redact_patterns(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if !boundary || !is_candidate_start(b) {
            i += 1;
            continue;
        }
        let hit = match_scheme(bytes, i)
            .or_else(|| match_prefixed(bytes, i))
            .or_else(|| match_key(bytes, i));
        match hit {
            Some(hit) => {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                // Every span boundary sits next to an ASCII byte, so it is a char boundary.
                o.push_str(&text[copied..hit.start]);
                o.push_str(REDACTED);
                copied = hit.end;
                i = hit.resume;
            }
            None => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// `Bearer <token68>` / `Basic <token68>`.
fn match_scheme(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    let scheme = SCHEMES.iter().find(|s| starts_with_ignore_case(rest, s))?;
    let mut j = i + scheme.len();
    let ws_start = j;
    while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
        j += 1;
    }
    if j == ws_start {
        return None;
    }
    let start = j;
    while j < bytes.len() && is_token68_byte(bytes[j]) {
        j += 1;
    }
    (j > start).then_some(Hit {
        start,
        end: j,
        resume: j,
    })
}

/// `sk-…`, GitHub and Google keys.
fn match_prefixed(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    for &(prefix, min, body) in PREFIXED {
        if !rest.starts_with(prefix) {
            continue;
        }
        let mut j = i + prefix.len();
        while j < bytes.len() && body(bytes[j]) {
            j += 1;
        }
        if j - (i + prefix.len()) >= min {
            return Some(Hit {
                start: i,
                end: j,
                resume: j,
            });
        }
    }
    None
}

/// `key: value`, `key=value`, `"key": "value"`, `'key': 'value'`.
fn match_key(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    let key = SENSITIVE_KEYS
        .iter()
        .find(|k| starts_with_ignore_case(rest, k))?;
    let mut j = i + key.len();
    // The key must end here: an optional closing quote, blanks, then `:` or `=`.
    if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
        j += 1;
    }
    while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
        j += 1;
    }
    if j >= bytes.len() || !(bytes[j] == b':' || bytes[j] == b'=') {
        return None;
    }
    j += 1;
    while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
        j += 1;
    }
    let quote = *bytes.get(j)?;
    let value_start = if quote == b'"' || quote == b'\'' {
        j + 1
    } else {
        j
    };
    if bytes[value_start..].starts_with(REDACTED.as_bytes()) {
        // Already redacted: keeps `redact` idempotent.
        return None;
    }
    if quote == b'"' || quote == b'\'' {
        let start = j + 1;
        let mut k = start;
        while k < bytes.len() && bytes[k] != quote {
            // JSON escapes: skip the escaped byte (an escaped quote does not end the string).
            k += if bytes[k] == b'\\' && quote == b'"' {
                2
            } else {
                1
            };
        }
        let end = k.min(bytes.len());
        if end == start {
            return None;
        }
        Some(Hit {
            start,
            end,
            resume: end,
        })
    } else {
        let start = j;
        let mut k = j;
        while k < bytes.len() && !ends_bare_value(bytes[k]) {
            k += 1;
        }
        let value = &bytes[start..k];
        if value.is_empty() || matches!(value, b"null" | b"true" | b"false") {
            return None;
        }
        Some(Hit {
            start,
            end: k,
            resume: k,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_credential_fields_are_redacted() {
        assert_eq!(redact("token=tok-123&x=1"), "token=[REDACTED]&x=1");
        assert_eq!(redact("password: hunter2"), "password: [REDACTED]");
        assert_eq!(redact(r#"{"secret":"s3"}"#), r#"{"secret":"[REDACTED]"}"#);
        assert_eq!(redact("no token here"), "no token here");
    }

    #[test]
    fn unterminated_json_string_is_redacted_to_the_end() {
        assert_eq!(
            redact(r#"{"access_token":"abc"#),
            r#"{"access_token":"[REDACTED]"#
        );
        // A trailing backslash must not push the scan past the end.
        assert_eq!(redact(r#""id_token":"abc\"#), r#""id_token":"[REDACTED]"#);
    }

    #[test]
    fn escaped_quotes_stay_inside_the_value() {
        assert_eq!(
            redact(r#"{"refresh_token":"a\"b","x":1}"#),
            r#"{"refresh_token":"[REDACTED]","x":1}"#
        );
    }

    #[test]
    fn no_allocation_without_match() {
        assert!(matches!(
            redact("plain text, tokens: none; sk-short basic"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn short_secrets_are_ignored_and_longest_wins() {
        let r = Redactor::with_secrets([
            SecretString::from("ab"),
            SecretString::from("abcd"),
            SecretString::from("abcdefgh"),
        ]);
        assert_eq!(
            r.redact("x abcdefgh y abcd z ab"),
            "x [REDACTED] y [REDACTED] z ab"
        );
        assert_eq!(format!("{r:?}"), "Redactor { secrets: 2 }");
    }
}
