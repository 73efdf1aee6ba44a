//! Known secret values in text: found literally, percent-encoded (either hex case, `+` for a
//! space) or JSON-escaped, in any mix, and replaced with [`REDACTED`](crate::REDACTED).
//!
//! Invariants: overlapping or touching occurrences, of one secret or of several, are replaced
//! as one span, so no part of any secret survives; a replacement never cuts a UTF-8 character;
//! empty secrets are ignored; text without an occurrence is left alone (`None`).

use std::borrow::Cow;
use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use crate::REDACTED;

/// Known secret values, and their redaction in every form [`replace`] finds.
///
/// Empty values are ignored and duplicates kept once. `Debug` shows only how many values it
/// holds; it has no `Serialize`.
///
#[derive(Clone, Default)]
pub(crate) struct SecretSet {
    /// Longest first, then in byte order: the order does not change the result; it keeps
    /// `Debug` and equality of sets stable.
    secrets: Vec<SecretString>,
}

impl SecretSet {
    /// An empty set: redacts nothing.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds one value; an empty value or one already held is ignored.
    pub(crate) fn insert(&mut self, secret: SecretString) {
        let value = secret.expose_secret();
        if value.is_empty() {
            return;
        }
        let pos = self.secrets.partition_point(|s| {
            let s = s.expose_secret();
            (s.len(), std::cmp::Reverse(s)) > (value.len(), std::cmp::Reverse(value))
        });
        if self
            .secrets
            .get(pos)
            .is_some_and(|s| s.expose_secret() == value)
        {
            return;
        }
        self.secrets.insert(pos, secret);
    }

    /// `text` with every held value replaced by [`REDACTED`], in every form; borrowed when
    /// nothing matched.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match replace(text, self.secrets.iter().map(|s| s.expose_secret())) {
            Some(redacted) => Cow::Owned(redacted),
            None => Cow::Borrowed(text),
        }
    }

    /// The longest value, in bytes (0 when empty).
    pub(crate) fn longest(&self) -> usize {
        // Longest first.
        self.secrets.first().map_or(0, |s| s.expose_secret().len())
    }

    /// The values, as held.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SecretString> {
        self.secrets.iter()
    }

    /// The values, longest first.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().map(|s| s.expose_secret())
    }

    /// How many distinct values it holds.
    pub(crate) fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }
}

impl FromIterator<SecretString> for SecretSet {
    fn from_iter<I: IntoIterator<Item = SecretString>>(values: I) -> Self {
        let mut set = Self::new();
        for value in values {
            set.insert(value);
        }
        set
    }
}

impl Extend<SecretString> for SecretSet {
    fn extend<I: IntoIterator<Item = SecretString>>(&mut self, values: I) {
        for value in values {
            self.insert(value);
        }
    }
}

impl fmt::Debug for SecretSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretSet")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// `text` with every occurrence of each secret replaced by [`REDACTED`], or `None` when
/// there is none. Occurrences may be literal, percent-encoded (either hex case, `+` for a
/// space) or JSON-escaped, in any mix. Overlapping or touching occurrences, of one secret
/// or of several, are replaced as one span, so no part of any secret survives.
pub(crate) fn replace<'s>(text: &str, secrets: impl Iterator<Item = &'s str>) -> Option<String> {
    let bytes = text.as_bytes();
    let decoded = escaped_bytes(bytes);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for secret in secrets {
        let s = secret.as_bytes();
        if s.is_empty() {
            continue;
        }
        // The escape-aware scan only when some escape in the text stands for a byte of
        // this secret; otherwise every occurrence is literal (the fast, common case).
        if s.iter().any(|&b| decoded[usize::from(b)]) {
            find_encoded(bytes, s, &mut spans);
        } else {
            find_literal(text, secret, &mut spans);
        }
    }
    if spans.is_empty() {
        return None;
    }
    for span in &mut spans {
        *span = (floor_boundary(text, span.0), ceil_boundary(text, span.1));
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut current: Option<(usize, usize)> = None;
    for (a, b) in spans {
        match &mut current {
            Some(cur) if a <= cur.1 => cur.1 = cur.1.max(b),
            _ => {
                if let Some((ca, cb)) = current.replace((a, b)) {
                    out.push_str(&text[copied..ca]);
                    out.push_str(REDACTED);
                    copied = cb;
                }
            }
        }
    }
    if let Some((ca, cb)) = current {
        out.push_str(&text[copied..ca]);
        out.push_str(REDACTED);
        copied = cb;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Which bytes the escapes in `text` stand for.
fn escaped_bytes(text: &[u8]) -> [bool; 256] {
    let mut decoded = [false; 256];
    for (t, &b) in text.iter().enumerate() {
        if matches!(b, b'%' | b'\\' | b'+')
            && let Some(unit) = decode(text, t)
        {
            for &d in &unit.bytes[..unit.len] {
                decoded[usize::from(d)] = true;
            }
        }
    }
    decoded
}

/// Every literal occurrence, overlapping ones included.
fn find_literal(text: &str, secret: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(pos) = text.get(from..).and_then(|t| t.find(secret)) {
        let start = from + pos;
        spans.push((start, start + secret.len()));
        from = ceil_boundary(text, start + 1);
    }
}

/// Every occurrence in any mix of literal bytes and escapes.
fn find_encoded(text: &[u8], s: &[u8], spans: &mut Vec<(usize, usize)>) {
    for (i, &b) in text.iter().enumerate() {
        if b != s[0] && !matches!(b, b'%' | b'\\' | b'+') {
            continue;
        }
        if let Some(end) = match_at(text, i, s, false).or_else(|| match_at(text, i, s, true)) {
            spans.push((i, end));
        }
    }
}

/// Where a match of `s` starting at `t` ends. At each step a literal byte or an escape
/// may match; `prefer_escape` says which to try first (a secret may itself contain `%`
/// or `\`).
fn match_at(text: &[u8], mut t: usize, s: &[u8], prefer_escape: bool) -> Option<usize> {
    let mut j = 0;
    while j < s.len() {
        let literal = text.get(t) == Some(&s[j]);
        if literal && !prefer_escape {
            t += 1;
            j += 1;
            continue;
        }
        if let Some(unit) = decode(text, t)
            && s[j..].starts_with(&unit.bytes[..unit.len])
        {
            t += unit.width;
            j += unit.len;
            continue;
        }
        if !literal {
            return None;
        }
        t += 1;
        j += 1;
    }
    Some(t)
}

/// The bytes one escape stands for.
struct Unit {
    bytes: [u8; 4],
    len: usize,
    /// How many bytes of text the escape takes.
    width: usize,
}

impl Unit {
    fn byte(b: u8, width: usize) -> Self {
        Self {
            bytes: [b, 0, 0, 0],
            len: 1,
            width,
        }
    }
}

/// The escape at `t`: `%XX`, `+` (a space in form encoding), or a JSON escape.
fn decode(text: &[u8], t: usize) -> Option<Unit> {
    match *text.get(t)? {
        b'%' => {
            let v = hex(text.get(t + 1..t + 3)?)?;
            Some(Unit::byte(u8::try_from(v).ok()?, 3))
        }
        b'+' => Some(Unit::byte(b' ', 1)),
        b'\\' => {
            let b = match *text.get(t + 1)? {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => return decode_unicode(text, t),
                _ => return None,
            };
            Some(Unit::byte(b, 2))
        }
        _ => None,
    }
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, as UTF-8.
fn decode_unicode(text: &[u8], t: usize) -> Option<Unit> {
    let hi = hex(text.get(t + 2..t + 6)?)?;
    let (code, width) = if (0xD800..0xDC00).contains(&hi) {
        if text.get(t + 6..t + 8)? != b"\\u" {
            return None;
        }
        let lo = hex(text.get(t + 8..t + 12)?)?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12)
    } else {
        (hi, 6)
    };
    let c = char::from_u32(code)?;
    let mut bytes = [0; 4];
    let len = c.encode_utf8(&mut bytes).len();
    Some(Unit { bytes, len, width })
}

fn hex(digits: &[u8]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i.min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_finds_its_values_in_every_form() {
        let set: SecretSet = [SecretString::from("tok/en")].into_iter().collect();
        assert_eq!(set.redact("a tok/en b"), "a [REDACTED] b");
        assert_eq!(set.redact("?t=tok%2Fen"), "?t=[REDACTED]");
        assert_eq!(set.redact(r#"{"t":"tok\/en"}"#), r#"{"t":"[REDACTED]"}"#);
        assert!(matches!(set.redact("clean"), Cow::Borrowed(_)));
    }
}
