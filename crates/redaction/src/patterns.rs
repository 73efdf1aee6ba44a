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

/// The text a scan reads, and whether it is all of it.
#[derive(Clone, Copy)]
struct Input<'a> {
    bytes: &'a [u8],
    /// `true`: the text ends here (whole-text redaction). `false`: more may follow (a stream),
    /// so a rule that reads to the end is undecided ([`Step::More`]) instead of ending there.
    eof: bool,
}

/// Three-way answers: matched, did not, or cannot tell before more text arrives.
enum Tri {
    Yes,
    No,
    More,
}

impl Input<'_> {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether `needle` starts at `i` (in any ASCII case when `any_case`).
    fn starts(&self, i: usize, needle: &[u8], any_case: bool) -> Tri {
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
    fn candidate_pair(&self, i: usize) -> Tri {
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
    fn is_redacted_value(&self, start: usize, ends: impl Fn(u8) -> bool) -> Tri {
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
    fn value(&self, at: usize, start: usize, end: usize, until: Until) -> Result<(), Step> {
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
    fn more(&self, at: usize, from: usize, until: Until) -> Step {
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
fn is_boundary(bytes: &[u8], i: usize) -> bool {
    i == 0
        || !bytes[i - 1].is_ascii_alphanumeric()
        || (i >= 2 && bytes[i - 2] == b'\\' && matches!(bytes[i - 1], b'n' | b'r' | b't'))
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
    /// Whether it is a value running to the end (a match that more text can only lengthen),
    /// rather than a rule still waiting for its keyword, separator or value.
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
fn match_header(input: Input<'_>, i: usize) -> Step {
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
fn match_scheme(input: Input<'_>, i: usize) -> Step {
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
fn match_prefixed(input: Input<'_>, i: usize) -> Step {
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
fn match_pem(input: Input<'_>, i: usize) -> Step {
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
fn match_userinfo(input: Input<'_>, i: usize) -> Step {
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
        // The last `@` of the authority decides, and more of it may follow.
        return input.more(i, authority, Until::AuthorityEnd);
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
fn match_key(input: Input<'_>, i: usize) -> Step {
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
