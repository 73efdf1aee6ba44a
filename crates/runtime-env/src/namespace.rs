//! Credential namespaces and session ids: validated names with an injective directory encoding.
//!
//! The rules are documented on the public item they govern (see the crate root).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest accepted `kind` part of a namespace, in bytes.
pub const MAX_KIND_LEN: usize = 32;
/// Longest accepted `id` part of a namespace, in bytes.
pub const MAX_ID_LEN: usize = 96;
/// Longest accepted namespace, in bytes (`kind`, `:` and `id`).
pub const MAX_NAMESPACE_LEN: usize = MAX_KIND_LEN + 1 + MAX_ID_LEN;
/// Longest accepted session id, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 64;

/// What kind of name failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    Namespace,
    SessionId,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Subject::Namespace => "credential namespace",
            Subject::SessionId => "session id",
        })
    }
}

/// Why a name was rejected. Private so variants can change without breaking callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
enum Reason {
    Empty,
    TooLong { len: usize, max: usize },
    DotSegment,
    Nul { offset: usize },
    Control { offset: usize },
    Separator { offset: usize },
    NonAscii { offset: usize },
    BadKindStart,
    KindTooLong { len: usize },
    EmptyId,
    LeadingDot,
    InvalidChar { offset: usize },
}

/// A credential namespace or session id was rejected.
///
/// The message names the rule that failed and a byte offset, never the rejected text itself
/// (it may carry a tenant identifier).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {subject}: {}", describe(.reason))]
pub struct InvalidName {
    subject: Subject,
    reason: Reason,
}

impl InvalidName {
    fn new(subject: Subject, reason: Reason) -> Self {
        Self { subject, reason }
    }
}

fn describe(reason: &Reason) -> String {
    match reason {
        Reason::Empty => "empty".to_owned(),
        Reason::TooLong { len, max } => format!("{len} bytes long, at most {max} allowed"),
        Reason::DotSegment => "`.` and `..` are not names".to_owned(),
        Reason::Nul { offset } => format!("NUL byte at offset {offset}"),
        Reason::Control { offset } => format!("control character at offset {offset}"),
        Reason::Separator { offset } => format!("path separator at offset {offset}"),
        Reason::NonAscii { offset } => format!("non-ASCII character at offset {offset}"),
        Reason::BadKindStart => "the kind must start with a lower-case ASCII letter".to_owned(),
        Reason::KindTooLong { len } => {
            format!("the kind is {len} bytes long, at most {MAX_KIND_LEN} allowed")
        }
        Reason::EmptyId => "the id after `:` is empty".to_owned(),
        Reason::LeadingDot => "the id must not start with `.`".to_owned(),
        Reason::InvalidChar { offset } => {
            format!("character at offset {offset} is outside the allowed set")
        }
    }
}

/// Checks shared by every name: emptiness, length, dot segments and forbidden bytes.
fn check_common(subject: Subject, s: &str, max: usize) -> Result<(), InvalidName> {
    let err = |reason| Err(InvalidName::new(subject, reason));
    if s.is_empty() {
        return err(Reason::Empty);
    }
    if s.len() > max {
        return err(Reason::TooLong { len: s.len(), max });
    }
    if s == "." || s == ".." {
        return err(Reason::DotSegment);
    }
    for (offset, b) in s.bytes().enumerate() {
        let reason = match b {
            0 => Reason::Nul { offset },
            b'/' | b'\\' => Reason::Separator { offset },
            b if b.is_ascii_control() => Reason::Control { offset },
            b if !b.is_ascii() => Reason::NonAscii { offset },
            _ => continue,
        };
        return err(reason);
    }
    Ok(())
}

fn is_kind_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'+' | b'-')
}

fn is_session_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Writes `s` with each upper-case ASCII letter `X` as `^x`.
fn push_case_encoded(out: &mut String, s: &str) {
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('^');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
}

/// A validated credential namespace: which principal's runtime state is mounted.
///
/// The grammar and the directory encoding:
///
/// # Grammar
///
/// A [`CredentialNamespace`] is `kind` or `kind:id`:
///
/// * `kind` is 1 to 32 bytes of `[a-z0-9_-]`, starting with `[a-z]` (`default`, `user`, `ci`).
/// * `id` is 1 to 96 bytes of `[A-Za-z0-9._@+-]` and does not start with `.`
///   (`user:alice@example.com`, `ci:build-4711`).
///
/// A [`SessionId`] is 1 to 64 bytes of `[A-Za-z0-9._-]`, not starting with `.` (a UUID fits).
///
/// Anything else is rejected with [`InvalidName`]; nothing is sanitized. In particular the empty
/// string, `.`, `..`, `a/../b`, `/` and `\`, NUL, control characters, non-ASCII text and
/// over-long input are all errors.
///
/// # Directory names
///
/// [`CredentialNamespace::dir_name`] maps a namespace to one path component:
/// `kind` stays as it is, `kind:id` becomes `kind.` followed by the id with every upper-case
/// ASCII letter `X` written as `^x`. The encoding is injective (the first `.` separates kind and
/// id because a kind has no `.`, and `^` never occurs in an id), its output contains no upper-case
/// letter (so it stays injective on case-insensitive file systems), never starts with `.`, and is
/// at most 225 bytes long, below the usual 255-byte `NAME_MAX`. Session ids use the same letter
/// encoding.
///
/// ```
/// use runtime_env::CredentialNamespace;
///
/// let ns: CredentialNamespace = "user:Alice".parse()?;
/// assert_eq!(ns.kind(), "user");
/// assert_eq!(ns.id(), Some("Alice"));
/// assert_eq!(ns.dir_name(), "user.^alice");
/// assert!("user:a/../b".parse::<CredentialNamespace>().is_err());
/// # Ok::<(), runtime_env::InvalidName>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CredentialNamespace {
    raw: String,
    colon: Option<usize>,
}

impl CredentialNamespace {
    /// Validates `s` against the namespace grammar.
    ///
    /// # Errors
    ///
    /// [`InvalidName`] when `s` breaks any rule of the grammar.
    pub fn new(s: &str) -> Result<Self, InvalidName> {
        let subject = Subject::Namespace;
        check_common(subject, s, MAX_NAMESPACE_LEN)?;
        let colon = s.find(':');
        let (kind, id) = match colon {
            Some(i) => (&s[..i], Some((i + 1, &s[i + 1..]))),
            None => (s, None),
        };
        let err = |reason| Err(InvalidName::new(subject, reason));
        match kind.bytes().next() {
            Some(b) if b.is_ascii_lowercase() => {}
            _ => return err(Reason::BadKindStart),
        }
        if kind.len() > MAX_KIND_LEN {
            return err(Reason::KindTooLong { len: kind.len() });
        }
        if let Some(offset) = kind.bytes().position(|b| !is_kind_byte(b)) {
            return err(Reason::InvalidChar { offset });
        }
        if let Some((start, id)) = id {
            if id.is_empty() {
                return err(Reason::EmptyId);
            }
            if id.len() > MAX_ID_LEN {
                return err(Reason::TooLong {
                    len: s.len(),
                    max: kind.len() + 1 + MAX_ID_LEN,
                });
            }
            if id.starts_with('.') {
                return err(Reason::LeadingDot);
            }
            if let Some(offset) = id.bytes().position(|b| !is_id_byte(b)) {
                return err(Reason::InvalidChar {
                    offset: start + offset,
                });
            }
        }
        Ok(Self {
            raw: s.to_owned(),
            colon,
        })
    }

    /// The namespace used by single-tenant hosts: `default`.
    pub fn default_namespace() -> Self {
        Self {
            raw: "default".to_owned(),
            colon: None,
        }
    }

    /// The namespace as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The `kind` part (`user` in `user:alice`).
    pub fn kind(&self) -> &str {
        match self.colon {
            Some(i) => &self.raw[..i],
            None => &self.raw,
        }
    }

    /// The `id` part (`alice` in `user:alice`), if any.
    pub fn id(&self) -> Option<&str> {
        self.colon.map(|i| &self.raw[i + 1..])
    }

    /// The single path component this namespace maps to (injective, see the module docs).
    pub fn dir_name(&self) -> String {
        let mut out = String::with_capacity(self.raw.len() * 2);
        out.push_str(self.kind());
        if let Some(id) = self.id() {
            out.push('.');
            push_case_encoded(&mut out, id);
        }
        out
    }
}

impl Default for CredentialNamespace {
    fn default() -> Self {
        Self::default_namespace()
    }
}

impl fmt::Display for CredentialNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for CredentialNamespace {
    type Err = InvalidName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for CredentialNamespace {
    type Error = InvalidName;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(&s)
    }
}

impl TryFrom<&str> for CredentialNamespace {
    type Error = InvalidName;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<CredentialNamespace> for String {
    fn from(ns: CredentialNamespace) -> Self {
        ns.raw
    }
}

/// A validated id of an ephemeral session (1 to 64 bytes of `[A-Za-z0-9._-]`, no leading `.`).
///
/// ```
/// use runtime_env::SessionId;
///
/// assert!(SessionId::new("9f1c2b7e-1d2a-4c3b-8e4f-5a6b7c8d9e0f").is_ok());
/// assert!(SessionId::new("../../x").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// Validates `s` against the session-id grammar.
    ///
    /// # Errors
    ///
    /// [`InvalidName`] when `s` breaks any rule of the grammar.
    pub fn new(s: &str) -> Result<Self, InvalidName> {
        let subject = Subject::SessionId;
        check_common(subject, s, MAX_SESSION_ID_LEN)?;
        if s.starts_with('.') {
            return Err(InvalidName::new(subject, Reason::LeadingDot));
        }
        if let Some(offset) = s.bytes().position(|b| !is_session_byte(b)) {
            return Err(InvalidName::new(subject, Reason::InvalidChar { offset }));
        }
        Ok(Self(s.to_owned()))
    }

    /// A fresh id: 32 lower-case hex digits from the std hasher's random keys, the clock, the
    /// process id and a counter.
    ///
    /// Unique enough to name a directory (creation fails rather than reuse an existing one);
    /// not meant to be unguessable, and it need not be: session directories are 0700.
    pub fn generate() -> Self {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut words = [0u64; 2];
        for (i, word) in words.iter_mut().enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(nanos);
            h.write_u32(std::process::id());
            h.write_u64(count);
            h.write_usize(i);
            *word = h.finish();
        }
        Self(format!("{:016x}{:016x}", words[0], words[1]))
    }

    /// The id as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The single path component this id maps to (injective, no upper-case letters).
    pub fn dir_name(&self) -> String {
        let mut out = String::with_capacity(self.0.len() * 2);
        push_case_encoded(&mut out, &self.0);
        out
    }

    /// Inverse of [`SessionId::dir_name`], used by the sweep to recognise session directories.
    pub(crate) fn from_dir_name(name: &str) -> Option<Self> {
        let mut raw = String::with_capacity(name.len());
        let mut chars = name.chars();
        while let Some(c) = chars.next() {
            match c {
                '^' => match chars.next() {
                    Some(l) if l.is_ascii_lowercase() => raw.push(l.to_ascii_uppercase()),
                    _ => return None,
                },
                c if c.is_ascii_uppercase() => return None,
                c => raw.push(c),
            }
        }
        let id = Self::new(&raw).ok()?;
        (id.dir_name() == name).then_some(id)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SessionId {
    type Err = InvalidName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for SessionId {
    type Error = InvalidName;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(&s)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns_reason(s: &str) -> Reason {
        match CredentialNamespace::new(s) {
            Ok(_) => panic!("accepted {s:?}"),
            Err(e) => {
                assert_eq!(e.subject, Subject::Namespace);
                e.reason
            }
        }
    }

    #[test]
    fn accepts_documented_examples() {
        for s in [
            "default",
            "user:alice",
            "ci:job-42",
            "user:a.b@c+d",
            "k_1-x:ID",
        ] {
            let ns = CredentialNamespace::new(s).expect("valid");
            assert_eq!(ns.as_str(), s);
        }
        let ns = CredentialNamespace::new("user:alice").expect("valid");
        assert_eq!((ns.kind(), ns.id()), ("user", Some("alice")));
        assert_eq!(ns.dir_name(), "user.alice");
        assert_eq!(CredentialNamespace::default().dir_name(), "default");
    }

    #[test]
    fn rejects_each_rule_with_its_reason() {
        assert_eq!(ns_reason(""), Reason::Empty);
        assert_eq!(ns_reason("."), Reason::DotSegment);
        assert_eq!(ns_reason(".."), Reason::DotSegment);
        assert_eq!(ns_reason("a/../b"), Reason::Separator { offset: 1 });
        assert_eq!(ns_reason("user:a\\b"), Reason::Separator { offset: 6 });
        assert_eq!(ns_reason("user:a\0b"), Reason::Nul { offset: 6 });
        assert_eq!(ns_reason("user:a\nb"), Reason::Control { offset: 6 });
        assert_eq!(ns_reason("user:a\u{7f}"), Reason::Control { offset: 6 });
        assert_eq!(ns_reason("user:用户"), Reason::NonAscii { offset: 5 });
        assert_eq!(ns_reason("User:x"), Reason::BadKindStart);
        assert_eq!(ns_reason(":x"), Reason::BadKindStart);
        assert_eq!(ns_reason("user:"), Reason::EmptyId);
        assert_eq!(ns_reason("user:.x"), Reason::LeadingDot);
        assert_eq!(ns_reason("user:.."), Reason::LeadingDot);
        assert_eq!(ns_reason("user:a:b"), Reason::InvalidChar { offset: 6 });
        assert_eq!(ns_reason("us er"), Reason::InvalidChar { offset: 2 });
        let long_kind = "k".repeat(MAX_KIND_LEN + 1);
        assert_eq!(
            ns_reason(&long_kind),
            Reason::KindTooLong {
                len: MAX_KIND_LEN + 1
            }
        );
        let too_long = format!("user:{}", "x".repeat(MAX_ID_LEN + 1));
        assert!(matches!(ns_reason(&too_long), Reason::TooLong { .. }));
        let way_too_long = "a".repeat(10_000);
        assert!(matches!(
            ns_reason(&way_too_long),
            Reason::TooLong { len: 10_000, .. }
        ));
    }

    #[test]
    fn longest_names_fit_name_max() {
        let ns = CredentialNamespace::new(&format!(
            "{}:{}",
            "k".repeat(MAX_KIND_LEN),
            "X".repeat(MAX_ID_LEN)
        ))
        .expect("valid");
        assert_eq!(ns.dir_name().len(), 225);
        let sid = SessionId::new(&"A".repeat(MAX_SESSION_ID_LEN)).expect("valid");
        assert_eq!(sid.dir_name().len(), 128);
    }

    #[test]
    fn case_is_encoded_not_folded() {
        let upper = CredentialNamespace::new("user:Alice").expect("valid");
        let lower = CredentialNamespace::new("user:alice").expect("valid");
        assert_ne!(upper.dir_name(), lower.dir_name());
        assert_eq!(upper.dir_name(), upper.dir_name().to_ascii_lowercase());
    }

    #[test]
    fn error_message_does_not_echo_input() {
        let err = CredentialNamespace::new("user:tenant-secret/x").expect_err("invalid");
        let msg = err.to_string();
        assert!(!msg.contains("tenant-secret"), "{msg}");
        assert!(msg.contains("credential namespace"), "{msg}");
    }

    #[test]
    fn session_ids() {
        for bad in ["", ".", "..", "../../x", ".hidden", "a/b", "a\0", "a b"] {
            assert!(SessionId::new(bad).is_err(), "{bad:?}");
        }
        assert!(SessionId::new(&"a".repeat(MAX_SESSION_ID_LEN + 1)).is_err());
        let id = SessionId::new("Run-1.x_y").expect("valid");
        assert_eq!(id.dir_name(), "^run-1.x_y");
        assert_eq!(SessionId::from_dir_name(&id.dir_name()), Some(id));
        assert_eq!(SessionId::from_dir_name("Run"), None);
        assert_eq!(SessionId::from_dir_name("^"), None);
        assert_eq!(SessionId::from_dir_name(".x"), None);
    }

    #[test]
    fn generated_session_ids_are_valid_and_distinct() {
        let a = SessionId::generate();
        let b = SessionId::generate();
        assert_ne!(a, b);
        assert_eq!(SessionId::new(a.as_str()).as_ref(), Ok(&a));
        assert_eq!(a.as_str().len(), 32);
    }

    #[test]
    fn serde_round_trip_validates() {
        let ns: CredentialNamespace = serde_json::from_str("\"ci:job\"").expect("valid");
        assert_eq!(serde_json::to_string(&ns).expect("serialize"), "\"ci:job\"");
        assert!(serde_json::from_str::<CredentialNamespace>("\"..\"").is_err());
        assert!(serde_json::from_str::<SessionId>("\"a/b\"").is_err());
    }
}
