//! The token patterns: one hand-written pass over the bytes that finds credentials by their
//! shape or by the field that holds them. The rules are documented on [`crate::redact`]; their
//! matchers are in [`rules`]. [`Scanner`] yields the spans to replace, and, for a stream whose
//! text may go on, the first position the text so far cannot decide ([`Open`]).

use std::borrow::Cow;

use crate::REDACTED;

mod rules;

use rules::{
    Input, Tri, is_boundary, line_end, match_header, match_key, match_pem, match_prefixed,
    match_scheme, match_userinfo, quoted_end,
};

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

/// How far back a scan looks before the position it decides ([`is_boundary`] reads two
/// bytes, the header and URL rules one).
pub(crate) const LOOK_BEHIND: usize = 2;

/// A matched span to replace with [`REDACTED`], and where scanning resumes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    /// The first byte to replace.
    pub(crate) start: usize,
    /// The byte after the last one to replace.
    pub(crate) end: usize,
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

/// What ends an open construct: the stream redactor, once it has released such a construct
/// redacted at its bound, drops what follows up to this.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Until {
    /// `-----END` (a PEM body).
    PemEnd,
    /// The closing quote of a quoted value (a `"` value honours backslash escapes).
    Quote(u8),
    /// A line break, literal or JSON-escaped, or the quote the header line sits in.
    LineEnd(Option<u8>),
    /// The end of an unquoted value (whitespace, `&`, `,`, `;`, a quote, a closing bracket).
    BareEnd,
    /// The first byte not in a token's alphabet.
    TokenEnd(fn(u8) -> bool),
    /// The end of a URL authority.
    AuthorityEnd,
}

impl Until {
    /// Where the construct ends in `bytes` (it started before them): `Ok(at)`, or `Err(keep)`
    /// when `bytes` do not end it yet and only `bytes[keep..]` may still be part of the end.
    pub(crate) fn find(self, bytes: &[u8]) -> Result<usize, usize> {
        let first = |stop: fn(u8) -> bool| bytes.iter().position(|&b| stop(b)).ok_or(bytes.len());
        match self {
            Self::PemEnd => {
                find(bytes, PEM_END).ok_or(bytes.len().saturating_sub(PEM_END.len() - 1))
            }
            Self::Quote(quote) => {
                let k = quoted_end(bytes, 0, quote);
                match bytes.get(k) {
                    Some(_) => Ok(k),
                    // A trailing backslash escapes what comes next: keep it.
                    None if quote == b'"' => Err(trailing_escape(bytes)),
                    None => Err(bytes.len()),
                }
            }
            Self::LineEnd(quote) => {
                let k = line_end(bytes, 0, quote);
                if k < bytes.len() {
                    Ok(k)
                } else if bytes.last() == Some(&b'\\') {
                    Err(trailing_escape(bytes))
                } else {
                    Err(bytes.len())
                }
            }
            Self::BareEnd => first(ends_bare_value),
            Self::TokenEnd(body) => bytes.iter().position(|&b| !body(b)).ok_or(bytes.len()),
            Self::AuthorityEnd => first(ends_authority),
        }
    }
}

/// Where an odd run of backslashes at the end of `bytes` leaves its last, unpaired one.
fn trailing_escape(bytes: &[u8]) -> usize {
    let run = bytes.iter().rev().take_while(|&&b| b == b'\\').count();
    if run % 2 == 1 {
        bytes.len() - 1
    } else {
        bytes.len()
    }
}

/// A construct whose decision needs text the scan has not seen yet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Open {
    /// Where the rule that cannot decide starts (the scan stops there; nothing from here on
    /// is decided).
    pub(crate) at: usize,
    /// Where its secret part starts (`at` when there is none yet).
    pub(crate) from: usize,
    /// What would end it.
    pub(crate) until: Until,
    /// Whether text from [`from`](Self::from) on may be secret: a value running to the end
    /// (a match that more text can only lengthen) or a URL authority without its end. When
    /// false, the rule is still waiting for its keyword, separator or value, and the text from
    /// `at` on is keyword, separators and blanks.
    pub(crate) value: bool,
}

/// One rule's answer at one position.
enum Step {
    No,
    Hit(Hit),
    More(Open),
}

/// A rule family's matcher at one position.
type Matcher = fn(Input<'_>, usize) -> Step;

/// The matchers of each family, in the order they are tried at a position.
const MATCHERS: [(u8, Matcher); 5] = [
    (HEADER, match_header),
    (SCHEME, match_scheme),
    (PREFIX, match_prefixed),
    (KEY, match_key),
    (PEM, match_pem),
];

/// What a [`Scanner`] yields.
pub(crate) enum Found {
    /// A span to replace.
    Hit(Hit),
    /// The first position the text cannot decide yet; the scan ends with it.
    Open(Open),
}

/// The token patterns' pass over a text, as spans: the one scanner behind [`redact_patterns`]
/// and the stream redactor.
///
/// It visits positions from `from` on (the bytes before `from` are look-behind only) and yields
/// each span to replace, in order. Unless the text is complete (`eof`), it stops at the first
/// position whose rule reads to the end of the text and yields it as [`Found::Open`]: every
/// span before it is final, whatever follows.
pub(crate) struct Scanner<'a> {
    input: Input<'a>,
    i: usize,
    done: bool,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(bytes: &'a [u8], from: usize, eof: bool) -> Self {
        Self {
            input: Input { bytes, eof },
            i: from,
            done: false,
        }
    }
}

impl Iterator for Scanner<'_> {
    type Item = Found;

    fn next(&mut self) -> Option<Found> {
        let input = self.input;
        let bytes = input.bytes;
        while !self.done && self.i < bytes.len() {
            let i = self.i;
            let b = bytes[i];
            let families = CANDIDATE[usize::from(b)];
            let step = if b == b':' {
                match_userinfo(input, i)
            } else if families == 0 || !is_boundary(bytes, i) {
                Step::No
            } else {
                match input.candidate_pair(i) {
                    Tri::No => Step::No,
                    Tri::More => input.more(i, i, Until::BareEnd),
                    Tri::Yes => MATCHERS
                        .iter()
                        .filter(|(family, _)| families & family != 0)
                        .map(|(_, rule)| rule(input, i))
                        .find(|step| !matches!(step, Step::No))
                        .unwrap_or(Step::No),
                }
            };
            match step {
                Step::No => self.i += 1,
                Step::Hit(hit) => {
                    self.i = hit.resume;
                    if hit.replace {
                        return Some(Found::Hit(hit));
                    }
                }
                Step::More(open) => {
                    self.done = true;
                    return Some(Found::Open(open));
                }
            }
        }
        None
    }
}

pub(crate) fn redact_patterns(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    for found in Scanner::new(text.as_bytes(), 0, true) {
        // With the whole text, nothing is open.
        let Found::Hit(hit) = found else { break };
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        // Every span boundary sits next to an ASCII byte, so it is a char boundary.
        o.push_str(&text[copied..hit.start]);
        o.push_str(REDACTED);
        copied = hit.end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
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
