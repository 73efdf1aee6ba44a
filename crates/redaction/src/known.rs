//! Known secret values in text: found literally, percent-encoded (either hex case, `+` for a
//! space) or JSON-escaped, in any mix, and replaced with [`REDACTED`].
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

    /// Every occurrence of every held value in `text`, and (unless `eof`) where the text
    /// ends inside a possible one: see [`find`].
    pub(crate) fn find(&self, text: &str, eof: bool) -> Occurrences {
        find(text, self.values(), eof)
    }

    /// The most bytes of text one occurrence of a held value can take, in any form (0 when
    /// empty).
    pub(crate) fn reach(&self) -> usize {
        // Longest first.
        self.secrets
            .first()
            .map_or(0, |s| s.expose_secret().len() * WIDEST_ESCAPE)
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

/// How many bytes of text one byte of a secret takes at most in a form [`find`] knows: six,
/// as `\u00XX` (a surrogate pair takes twelve for four bytes, `%XX` three for one).
pub(crate) const WIDEST_ESCAPE: usize = 6;

/// The occurrences [`find`] saw in a text.
#[derive(Debug, Default)]
pub(crate) struct Occurrences {
    /// Sorted, disjoint spans to replace: overlapping or touching occurrences are merged, and
    /// each span is widened to character boundaries.
    pub(crate) spans: Vec<(usize, usize)>,
    /// The earliest start of an occurrence the text ended in the middle of (the rest of the
    /// text is a proper prefix of some encoded form of a secret); always `None` at the end of
    /// the text.
    pub(crate) open: Option<usize>,
}

/// `text` with every occurrence of each secret replaced by [`REDACTED`], or `None` when
/// there is none. Occurrences may be literal, percent-encoded (either hex case, `+` for a
/// space) or JSON-escaped, in any mix. Overlapping or touching occurrences, of one secret
/// or of several, are replaced as one span, so no part of any secret survives.
pub(crate) fn replace<'s>(text: &str, secrets: impl Iterator<Item = &'s str>) -> Option<String> {
    let found = find(text, secrets, true);
    if found.spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    apply(text, &found.spans, &mut out);
    Some(out)
}

/// Appends `text` to `out` with each of `spans` (sorted, disjoint, on character boundaries)
/// replaced by [`REDACTED`].
pub(crate) fn apply(text: &str, spans: &[(usize, usize)], out: &mut String) {
    let mut copied = 0;
    for &(a, b) in spans {
        out.push_str(&text[copied..a]);
        out.push_str(REDACTED);
        copied = b;
    }
    out.push_str(&text[copied..]);
}

/// Every occurrence of each secret in `text`, and, unless `eof` says the text is complete,
/// where an occurrence may have begun that the text ends too early to decide.
///
/// With `eof`, this is what whole-text redaction replaces. Without it, an occurrence that
/// starts before [`Occurrences::open`] is decided by the bytes present: more text can only
/// add occurrences that start at or after `open` (or after the end).
pub(crate) fn find<'s>(
    text: &str,
    secrets: impl Iterator<Item = &'s str>,
    eof: bool,
) -> Occurrences {
    let bytes = text.as_bytes();
    let decoded = escaped_bytes(bytes);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    for secret in secrets {
        let s = secret.as_bytes();
        if s.is_empty() {
            continue;
        }
        // The escape-aware scan only when some escape in the text stands for a byte of
        // this secret; otherwise every complete occurrence is literal (the fast, common
        // case), and only the end of the text can still turn into an escaped one.
        if s.iter().any(|&b| decoded[usize::from(b)]) {
            find_encoded(bytes, s, 0, eof, &mut spans, &mut open);
        } else if eof {
            find_literal(text, secret, &mut spans);
        } else {
            // Literal occurrences up to the tail; in the tail (all of a short text) the
            // escape-aware scan finds the rest and where the text ends inside one.
            let tail = bytes.len().saturating_sub(s.len() * WIDEST_ESCAPE);
            if tail > 0 {
                // Only occurrences that start before the tail fit in here.
                let before = ceil_boundary(text, tail + s.len() - 1);
                find_literal(&text[..before], secret, &mut spans);
            }
            find_encoded(bytes, s, tail, eof, &mut spans, &mut open);
        }
    }
    Occurrences {
        spans: merge(text, spans),
        open,
    }
}

/// `spans` widened to character boundaries, sorted, and merged where they overlap or touch.
fn merge(text: &str, mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    for span in &mut spans {
        *span = (floor_boundary(text, span.0), ceil_boundary(text, span.1));
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match merged.last_mut() {
            Some(cur) if a <= cur.1 => cur.1 = cur.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Which bytes the escapes in `text` stand for.
fn escaped_bytes(text: &[u8]) -> [bool; 256] {
    let mut decoded = [false; 256];
    for (t, &b) in text.iter().enumerate() {
        if matches!(b, b'%' | b'\\' | b'+')
            && let Decoded::Unit(unit) = decode(text, t)
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

/// Every occurrence that starts at or after `from`, in any mix of literal bytes and
/// escapes; the first undecided start goes to `open`.
fn find_encoded(
    text: &[u8],
    s: &[u8],
    from: usize,
    eof: bool,
    spans: &mut Vec<(usize, usize)>,
    open: &mut Option<usize>,
) {
    for (i, &b) in text.iter().enumerate().skip(from) {
        if b != s[0] && !matches!(b, b'%' | b'\\' | b'+') {
            continue;
        }
        let found = match match_at(text, i, s, false, eof) {
            Match::No => match_at(text, i, s, true, eof),
            other => other,
        };
        match found {
            Match::End(end) => spans.push((i, end)),
            Match::More => {
                if open.is_none_or(|o| i < o) {
                    *open = Some(i);
                }
                // Every later start is held back anyway.
                return;
            }
            Match::No => {}
        }
    }
}

/// What [`match_at`] found.
enum Match {
    /// An occurrence, ending there.
    End(usize),
    /// None.
    No,
    /// The text ends before it is decided.
    More,
}

/// Whether an occurrence of `s` starts at `t`, and where it ends. At each step a literal
/// byte or an escape may match; `prefer_escape` says which to try first (a secret may itself
/// contain `%` or `\`). Without `eof`, running out of text (or into a cut escape) is
/// [`Match::More`]; with it, the text simply ends.
fn match_at(text: &[u8], mut t: usize, s: &[u8], prefer_escape: bool, eof: bool) -> Match {
    let mut j = 0;
    while j < s.len() {
        let Some(&byte) = text.get(t) else {
            return if eof { Match::No } else { Match::More };
        };
        let literal = byte == s[j];
        if literal && !prefer_escape {
            t += 1;
            j += 1;
            continue;
        }
        match decode(text, t) {
            Decoded::Unit(unit) if s[j..].starts_with(&unit.bytes[..unit.len]) => {
                t += unit.width;
                j += unit.len;
                continue;
            }
            Decoded::Cut if !eof => return Match::More,
            _ => {}
        }
        if !literal {
            return Match::No;
        }
        t += 1;
        j += 1;
    }
    Match::End(t)
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

/// What starts at a position of the text.
enum Decoded {
    /// A whole escape.
    Unit(Unit),
    /// No escape.
    No,
    /// The start of an escape that the text ends in (`%4`, `\`, `\u00`, a high surrogate
    /// without its pair yet): more text may complete it.
    Cut,
}

/// The escape at `t`: `%XX`, `+` (a space in form encoding), or a JSON escape.
fn decode(text: &[u8], t: usize) -> Decoded {
    let Some(&first) = text.get(t) else {
        return Decoded::No;
    };
    match first {
        b'%' => match text.get(t + 1..t + 3) {
            None => Decoded::Cut,
            Some(digits) => match hex(digits).and_then(|v| u8::try_from(v).ok()) {
                Some(b) => Decoded::Unit(Unit::byte(b, 3)),
                None => Decoded::No,
            },
        },
        b'+' => Decoded::Unit(Unit::byte(b' ', 1)),
        b'\\' => {
            let Some(&second) = text.get(t + 1) else {
                return Decoded::Cut;
            };
            let b = match second {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => return decode_unicode(text, t),
                _ => return Decoded::No,
            };
            Decoded::Unit(Unit::byte(b, 2))
        }
        _ => Decoded::No,
    }
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, as UTF-8.
fn decode_unicode(text: &[u8], t: usize) -> Decoded {
    let Some(digits) = text.get(t + 2..t + 6) else {
        return Decoded::Cut;
    };
    let Some(hi) = hex(digits) else {
        return Decoded::No;
    };
    let (code, width) = if (0xD800..0xDC00).contains(&hi) {
        let Some(next) = text.get(t + 6..t + 12) else {
            return Decoded::Cut;
        };
        if &next[..2] != b"\\u" {
            return Decoded::No;
        }
        let Some(lo) = hex(&next[2..]) else {
            return Decoded::No;
        };
        if !(0xDC00..0xE000).contains(&lo) {
            return Decoded::No;
        }
        (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12)
    } else {
        (hi, 6)
    };
    let Some(c) = char::from_u32(code) else {
        return Decoded::No;
    };
    let mut bytes = [0; 4];
    let len = c.encode_utf8(&mut bytes).len();
    Decoded::Unit(Unit { bytes, len, width })
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
