//! The token patterns: one hand-written pass over the bytes that finds credentials by their
//! shape or by the field that holds them. The rules are documented on [`crate::redact`].

use std::borrow::Cow;

use crate::REDACTED;

/// Field names whose values are redacted (matched ASCII-case-insensitively), and whether the
/// field counts only in `key=value` form (query parameters such as `?key=` and `?sig=`).
const SENSITIVE_KEYS: &[(&[u8], bool)] = &[
    (b"access_token", false),
    (b"accesstoken", false),
    (b"refresh_token", false),
    (b"refreshtoken", false),
    (b"id_token", false),
    (b"idtoken", false),
    (b"x-api-key", false),
    (b"api_key", false),
    (b"api-key", false),
    (b"apikey", false),
    (b"client_secret", false),
    (b"clientsecret", false),
    (b"private_key", false),
    (b"privatekey", false),
    (b"secret_access_key", false),
    (b"secret_key", false),
    (b"secretkey", false),
    (b"auth", false),
    (b"passphrase", false),
    (b"pgpassword", false),
    (b"pwd", false),
    (b"token", false),
    (b"password", false),
    (b"passwd", false),
    (b"secret", false),
    (b"key", true),
    (b"sig", true),
    (b"signature", true),
];

/// Authorization schemes whose credential is redacted wherever they appear.
const SCHEMES: &[&[u8]] = &[b"bearer", b"basic"];

/// Headers whose value is redacted, and how.
const HEADERS: &[(&[u8], HeaderValue)] = &[
    (b"authorization", HeaderValue::AfterScheme),
    (b"cookie", HeaderValue::Whole),
];

/// What of a header's value is redacted.
#[derive(Clone, Copy)]
enum HeaderValue {
    /// Everything after a known scheme ([`AUTH_SCHEMES`]); everything for another scheme.
    AfterScheme,
    /// The whole value.
    Whole,
}

/// Authorization schemes left readable in front of a redacted credential.
const AUTH_SCHEMES: &[&[u8]] = &[
    b"bearer",
    b"basic",
    b"token",
    b"digest",
    b"negotiate",
    b"ntlm",
    b"dpop",
    b"hoba",
    b"mutual",
    b"vapid",
    b"gnap",
    b"privatetoken",
    b"scram-sha-1",
    b"scram-sha-256",
    b"aws4-hmac-sha256",
    b"apikey",
    b"sso-key",
];

/// A token prefix (case-sensitive), the minimum body length after it, and the body charset.
type PrefixRule = (&'static [u8], usize, fn(u8) -> bool);

/// Token shapes recognised by their prefix.
const PREFIXED: &[PrefixRule] = &[
    (b"sk-", 10, is_key_byte),
    (b"sk_live_", 20, is_alnum),
    (b"sk_test_", 20, is_alnum),
    (b"rk_live_", 20, is_alnum),
    (b"rk_test_", 20, is_alnum),
    (b"github_pat_", 20, is_key_byte),
    (b"ghp_", 20, is_alnum),
    (b"gho_", 20, is_alnum),
    (b"ghu_", 20, is_alnum),
    (b"ghs_", 20, is_alnum),
    (b"ghr_", 20, is_alnum),
    (b"glpat-", 20, is_key_byte),
    (b"gldt-", 20, is_key_byte),
    (b"glrt-", 20, is_key_byte),
    (b"AIza", 30, is_key_byte),
    (b"AKIA", 16, is_upper_or_digit),
    (b"ASIA", 16, is_upper_or_digit),
    (b"xoxb-", 10, is_key_byte),
    (b"xoxp-", 10, is_key_byte),
    (b"xoxa-", 10, is_key_byte),
    (b"xoxr-", 10, is_key_byte),
    (b"xoxs-", 10, is_key_byte),
    (b"xoxe-", 10, is_key_byte),
    (b"xapp-", 10, is_key_byte),
    (b"npm_", 36, is_alnum),
    (b"hf_", 30, is_alnum),
    // A JWT (or JWS/JWE): base64url JSON `{"…`, then more dot-separated parts.
    (b"eyJ", 10, is_jwt_byte),
];

/// The header line of a PEM block; redacted when its label ends with `PRIVATE KEY`.
const PEM_BEGIN: &[u8] = b"-----BEGIN ";
const PEM_DASHES: &[u8] = b"-----";
const PEM_END: &[u8] = b"-----END";
const PEM_PRIVATE: &[u8] = b"PRIVATE KEY";

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_upper_or_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_jwt_byte(b: u8) -> bool {
    is_key_byte(b) || b == b'.' || b == b'='
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

/// Where a URL's authority (`user:pass@host:port`) ends.
fn ends_authority(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\'
        )
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn starts_with_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.len() >= needle.len() && haystack[..needle.len()].eq_ignore_ascii_case(needle)
}

fn skip_blanks(bytes: &[u8], mut j: usize) -> usize {
    while j < bytes.len() && is_blank(bytes[j]) {
        j += 1;
    }
    j
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Rule families, as bits of [`CANDIDATE`].
const HEADER: u8 = 1;
const SCHEME: u8 = 2;
const PREFIX: u8 = 4;
const KEY: u8 = 8;
const PEM: u8 = 16;

/// For each byte, the rule families that may start with it; built from the rule lists, so a
/// new rule cannot be forgotten here. Zero for most bytes: the cheap first test.
static CANDIDATE: [u8; 256] = candidate_table();

/// The second test: a bit per pair of first two bytes that some rule starts with.
static PAIRS: [u64; 1024] = pair_table();

const RULE_COUNT: usize = SENSITIVE_KEYS.len() + SCHEMES.len() + HEADERS.len() + PREFIXED.len() + 1;

/// Every rule's leading word, whether it matches in any ASCII case, and its family.
static RULES: [(&[u8], bool, u8); RULE_COUNT] = all_rules();

const fn all_rules() -> [(&'static [u8], bool, u8); RULE_COUNT] {
    let mut out: [(&'static [u8], bool, u8); RULE_COUNT] = [(PEM_BEGIN, false, PEM); RULE_COUNT];
    let mut n = 0;
    let mut i = 0;
    while i < SENSITIVE_KEYS.len() {
        out[n] = (SENSITIVE_KEYS[i].0, true, KEY);
        n += 1;
        i += 1;
    }
    i = 0;
    while i < SCHEMES.len() {
        out[n] = (SCHEMES[i], true, SCHEME);
        n += 1;
        i += 1;
    }
    i = 0;
    while i < HEADERS.len() {
        out[n] = (HEADERS[i].0, true, HEADER);
        n += 1;
        i += 1;
    }
    i = 0;
    while i < PREFIXED.len() {
        out[n] = (PREFIXED[i].0, false, PREFIX);
        n += 1;
        i += 1;
    }
    // The last entry stays the PEM rule.
    out
}

const fn candidate_table() -> [u8; 256] {
    let mut t = [0; 256];
    let mut i = 0;
    while i < RULE_COUNT {
        let (word, any_case, family) = RULES[i];
        let b = word[0];
        if any_case {
            t[b.to_ascii_lowercase() as usize] |= family;
            t[b.to_ascii_uppercase() as usize] |= family;
        } else {
            t[b as usize] |= family;
        }
        i += 1;
    }
    t
}

const fn pair_table() -> [u64; 1024] {
    let mut t = [0; 1024];
    let mut i = 0;
    while i < RULE_COUNT {
        let (word, any_case, _) = RULES[i];
        let (a, b) = (word[0], word[1]);
        if any_case {
            let (al, au) = (a.to_ascii_lowercase(), a.to_ascii_uppercase());
            let (bl, bu) = (b.to_ascii_lowercase(), b.to_ascii_uppercase());
            set_pair(&mut t, al, bl);
            set_pair(&mut t, al, bu);
            set_pair(&mut t, au, bl);
            set_pair(&mut t, au, bu);
        } else {
            set_pair(&mut t, a, b);
        }
        i += 1;
    }
    t
}

const fn set_pair(t: &mut [u64; 1024], a: u8, b: u8) {
    let bit = (a as usize) << 8 | b as usize;
    t[bit / 64] |= 1 << (bit % 64);
}

/// Whether some rule starts with the two bytes at `i`.
fn is_candidate_pair(bytes: &[u8], i: usize) -> bool {
    bytes.get(i + 1).is_some_and(|&b| {
        let bit = usize::from(bytes[i]) << 8 | usize::from(b);
        PAIRS[bit / 64] & (1 << (bit % 64)) != 0
    })
}

/// Whether a word may start at `i`: at the start, after a non-alphanumeric byte, or after a
/// JSON-escaped line break or tab (`\n`, `\r`, `\t` inside a JSON string).
fn is_boundary(bytes: &[u8], i: usize) -> bool {
    i == 0
        || !bytes[i - 1].is_ascii_alphanumeric()
        || (i >= 2 && bytes[i - 2] == b'\\' && matches!(bytes[i - 1], b'n' | b'r' | b't'))
}

/// Whether `bytes[start..]` begins with [`REDACTED`] followed by the end of the value (as
/// `ends` tells), so that redacting is idempotent.
fn is_redacted_value(bytes: &[u8], start: usize, ends: impl Fn(u8) -> bool) -> bool {
    bytes[start..].starts_with(REDACTED.as_bytes())
        && bytes.get(start + REDACTED.len()).is_none_or(|&b| ends(b))
}

/// A matched span to replace with [`REDACTED`], and where scanning resumes.
struct Hit {
    start: usize,
    end: usize,
    resume: usize,
    /// False when the span is already redacted: it is skipped, not replaced again (so the
    /// other rules do not see it either, as on the first pass).
    replace: bool,
}

impl Hit {
    fn new(start: usize, end: usize) -> Self {
        Self {
            start,
            end,
            resume: end,
            replace: true,
        }
    }

    /// An already redacted value, skipped up to `end`.
    fn skip(end: usize) -> Self {
        Self {
            start: end,
            end,
            resume: end,
            replace: false,
        }
    }
}

pub(crate) fn redact_patterns(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let families = CANDIDATE[usize::from(b)];
        let hit = if b == b':' {
            match_userinfo(bytes, i)
        } else if families == 0 || !is_candidate_pair(bytes, i) || !is_boundary(bytes, i) {
            None
        } else {
            let on = |family: u8| families & family != 0;
            None.or_else(|| on(HEADER).then(|| match_header(bytes, i)).flatten())
                .or_else(|| on(SCHEME).then(|| match_scheme(bytes, i)).flatten())
                .or_else(|| on(PREFIX).then(|| match_prefixed(bytes, i)).flatten())
                .or_else(|| on(KEY).then(|| match_key(bytes, i)).flatten())
                .or_else(|| on(PEM).then(|| match_pem(bytes, i)).flatten())
        };
        match hit {
            Some(hit) if !hit.replace => i = hit.resume,
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

/// Where a quoted value that starts at `start` ends (at its closing `quote`, or the end of
/// the text). In a double-quoted value an escaped byte does not end it.
fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
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
fn line_end(bytes: &[u8], start: usize, quote: Option<u8>) -> usize {
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

/// `Authorization: <scheme> <credentials>`, `Cookie: …`, also as JSON or quoted fields.
fn match_header(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    let &(name, kind) = HEADERS
        .iter()
        .find(|(name, _)| starts_with_ignore_case(rest, name))?;
    let mut j = i + name.len();
    // The name must end here (not `Cookie-Policy`, `cookies`).
    if bytes
        .get(j)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
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
    if bytes.get(j) != Some(&b':') {
        return None;
    }
    j = skip_blanks(bytes, j + 1);
    let (start, end) = match bytes.get(j) {
        Some(&q @ (b'"' | b'\'')) => (j + 1, quoted_end(bytes, j + 1, q)),
        _ => (j, line_end(bytes, j, line_quote)),
    };
    let value = &bytes[start..end];
    if value.is_empty() {
        return None;
    }
    if value == REDACTED.as_bytes() {
        return Some(Hit::skip(end));
    }
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
                if &value[credential..] == REDACTED.as_bytes() {
                    return Some(Hit::skip(end));
                }
                start + credential
            } else {
                start
            }
        }
    };
    Some(Hit::new(from, end))
}

/// `Bearer <token68>` / `Basic <token68>`.
fn match_scheme(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    let scheme = SCHEMES.iter().find(|s| starts_with_ignore_case(rest, s))?;
    let mut j = i + scheme.len();
    let ws_start = j;
    while j < bytes.len() && is_blank(bytes[j]) {
        j += 1;
    }
    if j == ws_start {
        return None;
    }
    let start = j;
    while j < bytes.len() && is_token68_byte(bytes[j]) {
        j += 1;
    }
    (j > start).then_some(Hit::new(start, j))
}

/// Keys and tokens recognised by their prefix (`sk-…`, `ghp_…`, `AKIA…`, `eyJ…`, …). The
/// token must end at a word boundary.
fn match_prefixed(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    for &(prefix, min, body) in PREFIXED {
        if prefix[0] != rest[0] || !rest.starts_with(prefix) {
            continue;
        }
        let mut j = i + prefix.len();
        while j < bytes.len() && body(bytes[j]) {
            j += 1;
        }
        let ends_word = bytes.get(j).is_none_or(|b| !b.is_ascii_alphanumeric());
        if j - (i + prefix.len()) >= min && ends_word {
            return Some(Hit::new(i, j));
        }
    }
    None
}

/// The body of `-----BEGIN … PRIVATE KEY-----` up to `-----END` (or the end of the text).
fn match_pem(bytes: &[u8], i: usize) -> Option<Hit> {
    if !bytes[i..].starts_with(PEM_BEGIN) {
        return None;
    }
    let label_start = i + PEM_BEGIN.len();
    let label_len = find(&bytes[label_start..], PEM_DASHES)?;
    let label = &bytes[label_start..label_start + label_len];
    if label_len > 64 || !label.ends_with(PEM_PRIVATE) || label.contains(&b'\n') {
        return None;
    }
    let start = label_start + label_len + PEM_DASHES.len();
    let end = find(&bytes[start..], PEM_END).map_or(bytes.len(), |p| start + p);
    let body = &bytes[start..end];
    if body.is_empty() {
        return None;
    }
    if body == REDACTED.as_bytes() {
        return Some(Hit::skip(end));
    }
    Some(Hit::new(start, end))
}

/// The password of `scheme://user:password@host` (the whole userinfo when it has no
/// password), found at the `:` of `://`.
fn match_userinfo(bytes: &[u8], i: usize) -> Option<Hit> {
    if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() || !bytes[i + 1..].starts_with(b"//") {
        return None;
    }
    let authority = i + 3;
    let mut k = authority;
    let mut at = None;
    while k < bytes.len() && !ends_authority(bytes[k]) {
        if bytes[k] == b'@' {
            at = Some(k);
        }
        k += 1;
    }
    let at = at?;
    let start = bytes[authority..at]
        .iter()
        .position(|&b| b == b':')
        .map_or(authority, |c| authority + c + 1);
    if start == at {
        return None;
    }
    if &bytes[start..at] == REDACTED.as_bytes() {
        return Some(Hit::skip(at));
    }
    Some(Hit::new(start, at))
}

/// `key: value`, `key=value`, `"key": "value"`, `'key': 'value'`.
fn match_key(bytes: &[u8], i: usize) -> Option<Hit> {
    let rest = &bytes[i..];
    let first = rest[0].to_ascii_lowercase();
    SENSITIVE_KEYS
        .iter()
        .filter(|(key, _)| key[0] == first && starts_with_ignore_case(rest, key))
        .find_map(|&(key, eq_only)| match_value(bytes, i + key.len(), eq_only))
}

/// The value after a key that ends at `j`.
fn match_value(bytes: &[u8], mut j: usize, eq_only: bool) -> Option<Hit> {
    // The key must end here: an optional closing quote, blanks, then `:` or `=`.
    if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
        j += 1;
    }
    j = skip_blanks(bytes, j);
    match bytes.get(j) {
        Some(b'=') => {}
        Some(b':') if !eq_only => {}
        _ => return None,
    }
    j = skip_blanks(bytes, j + 1);
    let quote = *bytes.get(j)?;
    if quote == b'{' {
        // A JSON object (`"auth": {…}`): its own fields are checked one by one.
        return None;
    }
    let (start, end) = if quote == b'"' || quote == b'\'' {
        let start = j + 1;
        if is_redacted_value(bytes, start, |b| b == quote) {
            // Already redacted: keeps `redact` idempotent.
            return None;
        }
        (start, quoted_end(bytes, start, quote))
    } else {
        if is_redacted_value(bytes, j, ends_bare_value) {
            return None;
        }
        // A value that starts with the marker but goes on is redacted whole.
        let mut k = j;
        if bytes[j..].starts_with(REDACTED.as_bytes()) {
            k += REDACTED.len();
        }
        while k < bytes.len() && !ends_bare_value(bytes[k]) {
            k += 1;
        }
        let value = &bytes[j..k];
        if matches!(value, b"null" | b"true" | b"false") {
            return None;
        }
        (j, k)
    };
    (end > start).then_some(Hit::new(start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Redactor, redact};
    use secrecy::SecretString;

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
    fn objects_are_not_values() {
        assert_eq!(
            redact(r#"{"auth": {"type": "oauth", "token": "t1"}}"#),
            r#"{"auth": {"type": "oauth", "token": "[REDACTED]"}}"#
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
