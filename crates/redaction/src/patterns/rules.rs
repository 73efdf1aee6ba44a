//! The token rules, one matcher per family: each says, at one position, whether its rule
//! matches, does not, or cannot tell before more text arrives (a stream's end).

use super::{
    AUTH_SCHEMES, HEADERS, HeaderValue, Hit, Open, PAIRS, PEM_BEGIN, PEM_DASHES, PEM_END,
    PEM_PRIVATE, PREFIXED, SCHEMES, SENSITIVE_KEYS, Step, Until, ends_authority, ends_bare_value,
    find, is_blank, is_token68_byte, skip_blanks,
};
use crate::REDACTED;

/// The text a scan reads, and whether it is all of it.
#[derive(Clone, Copy)]
pub(super) struct Input<'a> {
    pub(super) bytes: &'a [u8],
    /// `true`: the text ends here (whole-text redaction). `false`: more may follow (a stream),
    /// so a rule that reads to the end is undecided ([`Step::More`]) instead of ending there.
    pub(super) eof: bool,
}

/// Three-way answers: matched, did not, or cannot tell before more text arrives.
pub(super) enum Tri {
    Yes,
    No,
    More,
}

impl Input<'_> {
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether `needle` starts at `i` (in any ASCII case when `any_case`).
    pub(super) fn starts(&self, i: usize, needle: &[u8], any_case: bool) -> Tri {
        let rest = self.bytes.get(i..).unwrap_or_default();
        let n = needle.len().min(rest.len());
        let same = if any_case {
            rest[..n].eq_ignore_ascii_case(&needle[..n])
        } else {
            rest[..n] == needle[..n]
        };
        match (same, n == needle.len()) {
            (true, true) => Tri::Yes,
            (true, false) if !self.eof => Tri::More,
            _ => Tri::No,
        }
    }

    /// Whether some rule starts with the two bytes at `i`.
    pub(super) fn candidate_pair(&self, i: usize) -> Tri {
        match self.bytes.get(i + 1) {
            None if self.eof => Tri::No,
            None => Tri::More,
            Some(&b) => {
                let bit = usize::from(self.bytes[i]) << 8 | usize::from(b);
                if PAIRS[bit / 64] & (1 << (bit % 64)) != 0 {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
        }
    }

    /// Whether `bytes[start..]` begins with [`REDACTED`] followed by the end of the value (as
    /// `ends` tells), so that redacting is idempotent.
    pub(super) fn is_redacted_value(&self, start: usize, ends: impl Fn(u8) -> bool) -> Tri {
        match self.starts(start, REDACTED.as_bytes(), false) {
            Tri::Yes => match self.bytes.get(start + REDACTED.len()) {
                None if self.eof => Tri::Yes,
                None => Tri::More,
                Some(&b) if ends(b) => Tri::Yes,
                Some(_) => Tri::No,
            },
            other => other,
        }
    }

    /// A value that reaches `end`: undecided when it runs to the end of a stream's text.
    pub(super) fn value(
        &self,
        at: usize,
        start: usize,
        end: usize,
        until: Until,
    ) -> Result<(), Step> {
        if !self.eof && end >= self.len() {
            Err(Step::More(Open {
                at,
                from: start,
                until,
                value: true,
            }))
        } else {
            Ok(())
        }
    }

    /// A decision at `at` that needs more text than there is (see [`Open`]).
    pub(super) fn more(&self, at: usize, from: usize, until: Until) -> Step {
        Step::More(Open {
            at,
            from,
            until,
            value: false,
        })
    }
}

/// Whether a word may start at `i`: at the start, after a non-alphanumeric byte, or after a
/// JSON-escaped line break or tab (`\n`, `\r`, `\t` inside a JSON string).
pub(super) fn is_boundary(bytes: &[u8], i: usize) -> bool {
    i == 0
        || !bytes[i - 1].is_ascii_alphanumeric()
        || (i >= 2 && bytes[i - 2] == b'\\' && matches!(bytes[i - 1], b'n' | b'r' | b't'))
}

/// Where a quoted value that starts at `start` ends (at its closing `quote`, or the end of
/// the text). In a double-quoted value an escaped byte does not end it.
pub(super) fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut k = start;
    while k < bytes.len() && bytes[k] != quote {
        k += if bytes[k] == b'\\' && quote == b'"' {
            2
        } else {
            1
        };
    }
    k.min(bytes.len())
}

/// Where an unquoted header value that starts at `start` ends: at a line break (literal or
/// JSON-escaped), or at `quote` when the whole header line sits inside quotes.
pub(super) fn line_end(bytes: &[u8], start: usize, quote: Option<u8>) -> usize {
    let mut k = start;
    while k < bytes.len() {
        let b = bytes[k];
        if b == b'\r' || b == b'\n' || Some(b) == quote {
            break;
        }
        if b == b'\\' {
            if matches!(bytes.get(k + 1), Some(b'r' | b'n')) {
                break;
            }
            k += 1;
        }
        k += 1;
    }
    k.min(bytes.len())
}

/// The first of `words` that starts at `i` (in any ASCII case when `any_case`): `Err` with
/// the step to return when none does or the text ends before one can be told.
fn first_word<'w, T>(
    input: Input<'_>,
    i: usize,
    words: &'w [T],
    word: impl Fn(&T) -> &'w [u8],
    any_case: bool,
) -> Result<&'w T, Step> {
    for w in words {
        match input.starts(i, word(w), any_case) {
            Tri::Yes => return Ok(w),
            Tri::More => return Err(input.more(i, i, Until::BareEnd)),
            Tri::No => {}
        }
    }
    Err(Step::No)
}

/// `Authorization: <scheme> <credentials>`, `Cookie: …`, also as JSON or quoted fields.
pub(super) fn match_header(input: Input<'_>, i: usize) -> Step {
    let bytes = input.bytes;
    let &(name, kind) = match first_word(input, i, HEADERS, |h| h.0, true) {
        Ok(header) => header,
        Err(step) => return step,
    };
    let more = || input.more(i, i, Until::LineEnd(None));
    let mut j = i + name.len();
    // The name must end here (not `Cookie-Policy`, `cookies`).
    match bytes.get(j) {
        Some(&b) if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' => return Step::No,
        None if !input.eof => return more(),
        _ => {}
    }
    // `"Authorization": "…"` (a quoted field name) or `'Authorization: …'` (a quoted line).
    let mut line_quote = None;
    if let Some(&q @ (b'"' | b'\'')) = i.checked_sub(1).and_then(|p| bytes.get(p)) {
        if bytes.get(j) == Some(&q) {
            j += 1;
        } else {
            line_quote = Some(q);
        }
    }
    j = skip_blanks(bytes, j);
    if j == bytes.len() && !input.eof {
        return more();
    }
    if bytes.get(j) != Some(&b':') {
        return Step::No;
    }
    j = skip_blanks(bytes, j + 1);
    if j == bytes.len() && !input.eof {
        return more();
    }
    let (start, end, until) = match bytes.get(j) {
        Some(&q @ (b'"' | b'\'')) => (j + 1, quoted_end(bytes, j + 1, q), Until::Quote(q)),
        _ => (
            j,
            line_end(bytes, j, line_quote),
            Until::LineEnd(line_quote),
        ),
    };
    let value = &bytes[start..end];
    let from = match kind {
        HeaderValue::Whole => start,
        HeaderValue::AfterScheme => {
            let word = value
                .iter()
                .position(|&b| is_blank(b))
                .unwrap_or(value.len());
            let credential = skip_blanks(value, word);
            let known = AUTH_SCHEMES
                .iter()
                .any(|s| value[..word].eq_ignore_ascii_case(s));
            if known && credential < value.len() {
                start + credential
            } else {
                start
            }
        }
    };
    if let Err(open) = input.value(i, from, end, until) {
        return open;
    }
    if value.is_empty() {
        return Step::No;
    }
    if value == REDACTED.as_bytes() || &bytes[from..end] == REDACTED.as_bytes() {
        return Step::Hit(Hit::skip(end));
    }
    Step::Hit(Hit::new(from, end))
}

/// `Bearer <token68>` / `Basic <token68>`.
pub(super) fn match_scheme(input: Input<'_>, i: usize) -> Step {
    let bytes = input.bytes;
    let scheme = match first_word(input, i, SCHEMES, |s| s, true) {
        Ok(scheme) => scheme,
        Err(step) => return step,
    };
    let mut j = i + scheme.len();
    let ws_start = j;
    j = skip_blanks(bytes, j);
    if j == bytes.len() && !input.eof {
        return input.more(i, i, Until::TokenEnd(is_token68_byte));
    }
    if j == ws_start {
        return Step::No;
    }
    let start = j;
    while j < bytes.len() && is_token68_byte(bytes[j]) {
        j += 1;
    }
    if let Err(open) = input.value(i, start, j, Until::TokenEnd(is_token68_byte)) {
        return open;
    }
    if j > start {
        Step::Hit(Hit::new(start, j))
    } else {
        Step::No
    }
}

/// Keys and tokens recognised by their prefix (`sk-…`, `ghp_…`, `AKIA…`, `eyJ…`, …). The
/// token must end at a word boundary.
pub(super) fn match_prefixed(input: Input<'_>, i: usize) -> Step {
    let bytes = input.bytes;
    for &(prefix, min, body) in PREFIXED {
        if prefix[0] != bytes[i] {
            continue;
        }
        match input.starts(i, prefix, false) {
            Tri::No => continue,
            Tri::More => return input.more(i, i, Until::TokenEnd(body)),
            Tri::Yes => {}
        }
        let mut j = i + prefix.len();
        while j < bytes.len() && body(bytes[j]) {
            j += 1;
        }
        if let Err(open) = input.value(i, i, j, Until::TokenEnd(body)) {
            return open;
        }
        let ends_word = bytes.get(j).is_none_or(|b| !b.is_ascii_alphanumeric());
        if j - (i + prefix.len()) >= min && ends_word {
            return Step::Hit(Hit::new(i, j));
        }
    }
    Step::No
}

/// The longest PEM label looked at (`ENCRYPTED PRIVATE KEY` is 21 bytes).
const PEM_LABEL_MAX: usize = 64;

/// The body of `-----BEGIN … PRIVATE KEY-----` up to `-----END` (or the end of the text).
pub(super) fn match_pem(input: Input<'_>, i: usize) -> Step {
    let bytes = input.bytes;
    match input.starts(i, PEM_BEGIN, false) {
        Tri::Yes => {}
        Tri::No => return Step::No,
        Tri::More => return input.more(i, i, Until::PemEnd),
    }
    let label_start = i + PEM_BEGIN.len();
    // The label's closing dashes, looked for no further than a label can reach.
    let window = (label_start + PEM_LABEL_MAX + PEM_DASHES.len()).min(bytes.len());
    let Some(label_len) = find(&bytes[label_start..window], PEM_DASHES) else {
        let cut_short = window == bytes.len() && !bytes[label_start..].contains(&b'\n');
        return if cut_short && !input.eof {
            input.more(i, i, Until::PemEnd)
        } else {
            Step::No
        };
    };
    let label = &bytes[label_start..label_start + label_len];
    if label_len > PEM_LABEL_MAX || !label.ends_with(PEM_PRIVATE) || label.contains(&b'\n') {
        return Step::No;
    }
    let start = label_start + label_len + PEM_DASHES.len();
    let end = find(&bytes[start..], PEM_END).map_or(bytes.len(), |p| start + p);
    if let Err(open) = input.value(i, start, end, Until::PemEnd) {
        return open;
    }
    let body = &bytes[start..end];
    if body.is_empty() {
        return Step::No;
    }
    if body == REDACTED.as_bytes() {
        return Step::Hit(Hit::skip(end));
    }
    Step::Hit(Hit::new(start, end))
}

/// The password of `scheme://user:password@host` (the whole userinfo when it has no
/// password), found at the `:` of `://`.
pub(super) fn match_userinfo(input: Input<'_>, i: usize) -> Step {
    let bytes = input.bytes;
    if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() {
        return Step::No;
    }
    let authority = i + 3;
    match input.starts(i + 1, b"//", false) {
        Tri::Yes => {}
        Tri::No => return Step::No,
        Tri::More => return input.more(i, authority.min(bytes.len()), Until::AuthorityEnd),
    }
    let mut k = authority;
    let mut at = None;
    while k < bytes.len() && !ends_authority(bytes[k]) {
        if bytes[k] == b'@' {
            at = Some(k);
        }
        k += 1;
    }
    if k == bytes.len() && !input.eof {
        // The last `@` of the authority decides, and more of it may follow: the authority so
        // far may hold a password, so it counts as a value.
        return Step::More(Open {
            at: i,
            from: authority,
            until: Until::AuthorityEnd,
            value: true,
        });
    }
    let Some(at) = at else {
        return Step::No;
    };
    let start = bytes[authority..at]
        .iter()
        .position(|&b| b == b':')
        .map_or(authority, |c| authority + c + 1);
    if start == at {
        return Step::No;
    }
    if &bytes[start..at] == REDACTED.as_bytes() {
        return Step::Hit(Hit::skip(at));
    }
    Step::Hit(Hit::new(start, at))
}

/// `key: value`, `key=value`, `"key": "value"`, `'key': 'value'`.
pub(super) fn match_key(input: Input<'_>, i: usize) -> Step {
    let first = input.bytes[i].to_ascii_lowercase();
    for &(key, eq_only) in SENSITIVE_KEYS {
        if key[0] != first {
            continue;
        }
        match input.starts(i, key, true) {
            Tri::No => continue,
            Tri::More => return input.more(i, i, Until::BareEnd),
            Tri::Yes => {}
        }
        match match_value(input, i, i + key.len(), eq_only) {
            Step::No => {}
            step => return step,
        }
    }
    Step::No
}

/// The value after a key that starts at `at` and ends at `j`.
fn match_value(input: Input<'_>, at: usize, mut j: usize, eq_only: bool) -> Step {
    let bytes = input.bytes;
    let more = || input.more(at, at, Until::BareEnd);
    // The key must end here: an optional closing quote, blanks, then `:` or `=`.
    if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
        j += 1;
    }
    j = skip_blanks(bytes, j);
    match bytes.get(j) {
        Some(b'=') => {}
        Some(b':') if !eq_only => {}
        None if !input.eof => return more(),
        _ => return Step::No,
    }
    j = skip_blanks(bytes, j + 1);
    let Some(&quote) = bytes.get(j) else {
        return if input.eof { Step::No } else { more() };
    };
    if quote == b'{' {
        // A JSON object (`"auth": {…}`): its own fields are checked one by one.
        return Step::No;
    }
    let (start, end) = if quote == b'"' || quote == b'\'' {
        let start = j + 1;
        match input.is_redacted_value(start, |b| b == quote) {
            // Already redacted: keeps `redact` idempotent.
            Tri::Yes => return Step::No,
            Tri::More => return more(),
            Tri::No => {}
        }
        let end = quoted_end(bytes, start, quote);
        if let Err(open) = input.value(at, start, end, Until::Quote(quote)) {
            return open;
        }
        (start, end)
    } else {
        match input.is_redacted_value(j, ends_bare_value) {
            Tri::Yes => return Step::No,
            Tri::More => return more(),
            Tri::No => {}
        }
        // A value that starts with the marker but goes on is redacted whole.
        let mut k = j;
        if bytes[j..].starts_with(REDACTED.as_bytes()) {
            k += REDACTED.len();
        }
        while k < bytes.len() && !ends_bare_value(bytes[k]) {
            k += 1;
        }
        if let Err(open) = input.value(at, j, k, Until::BareEnd) {
            return open;
        }
        let value = &bytes[j..k];
        if matches!(value, b"null" | b"true" | b"false") {
            return Step::No;
        }
        (j, k)
    };
    if end > start {
        Step::Hit(Hit::new(start, end))
    } else {
        Step::No
    }
}
