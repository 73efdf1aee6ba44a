//! Redaction of streamed text: a secret split across pieces is redacted whole, in every form
//! the [`Redactor`] knows, with work linear in the streamed bytes and the held-back text
//! bounded. What it guarantees is documented on [`StreamRedactor`]; this is how.
//!
//! # Two stages, as in [`Redactor::redact`]
//! A driver streams text and tool-call arguments in small pieces. Redacting each piece on its
//! own lets a known secret through when it is split (`a1b2c3d4` + `e5f6…`), and a pattern
//! such as `Bearer <token>` when its keyword and value arrive apart. The stream redactor holds
//! back the end of the stream that the text so far cannot decide, in two stages that mirror
//! whole-text redaction (known values first, then the token patterns over the result):
//!
//! 1. **Known values** ([`Raw`]). One scan ([`SecretSet::find`]) finds every occurrence in the
//!    held raw text, and where the text ends inside a possible one: the earliest suffix that
//!    is a proper prefix of some literal, percent-encoded or JSON-escaped form of a known
//!    secret (a cut escape such as `%2` or `\u00` counts). That suffix is held, and so is a run
//!    of occurrences that reaches it or the end (touching occurrences merge into one marker).
//!    Everything before is final and goes to stage two with its occurrences replaced. For
//!    ordinary text the hold is a few bytes at most, not the length of the longest secret.
//! 2. **Patterns** ([`Marked`]). The token scanner ([`Scanner`], the one behind
//!    [`redact()`](crate::redact)) walks that text and stops at the first position whose rule
//!    reads to the end of the text: a keyword still waiting for its separator or value
//!    (`Bearer`, `"token": `, `-----BEGIN RSA PRIV`), a value running to the end
//!    (`Bearer abc…`, a quoted value without its closing quote, a PEM body without
//!    `-----END`), a URL authority without its end. Everything before that position is
//!    released with the spans found replaced; the rest is held. The scan sees the last
//!    [`LOOK_BEHIND`] bytes released, so every rule decides exactly as on the whole text.
//!
//! Why not the old rules (hold the length of the longest secret, hold three words, then step
//! back a word at a time until redacting the two sides apart equals redacting them together):
//! an encoded secret is longer than the secret, a pattern's keyword and value may be more than
//! three words apart (`-----BEGIN ENCRYPTED PRIVATE KEY-----`), and the step-back redacted the
//! whole buffer twice per word, which an unterminated PEM block turned cubic. Asking each
//! matcher "did you run out of text?" is exact and needs one scan per decision.
//!
//! # Work
//! Each scan reads the held text once, plus per known secret a window of at most six times its
//! length at the end, plus a bounded look-ahead per pattern position (a PEM label is looked
//! for within 64 bytes). A stage scans again only when its held text has at least doubled since
//! its last scan, so a stream pushed one byte at a time is not rescanned per byte: each byte is
//! scanned a bounded number of times and the work is linear in the streamed bytes
//! (`streaming_work_is_linear_in_the_streamed_bytes` counts the bytes scanned). The price is
//! latency, never safety: a push may hold a little more than it must. `pause` and `finish`
//! always scan.
//!
//! # The bound
//! When an undecided construct holds more than [`MAX_PENDING`] bytes after a scan, stage two
//! releases the text before it and the construct **redacted**, and drops its continuation up
//! to its terminator ([`Until`]: `-----END`, the closing quote, the line break, the end of the
//! token or of the URL authority) or to the end of the stream. Over-redaction is the safe
//! mistake, and whole-text redaction also redacts an unterminated PEM block to the end. A
//! keyword still waiting for its value behind endless runs of blanks (`token`, blanks, `=`,
//! blanks) is the exception, since nothing in it is secret: it goes out as it is, and the
//! keyword with its blank runs cut to [`BLANK_RUN_MAX`] (at most [`KEYWORD_MAX`] bytes) becomes
//! the look-behind that decides the value that may follow; no rule can tell such a run from a
//! longer one. In stage one only a run
//! of touching occurrences can grow without end: past the bound it is released as one marker
//! and the rest of the run is dropped, which is exactly what whole-text redaction gives.

use crate::known::SecretSet;
use crate::patterns::{Found, LOOK_BEHIND, Scanner, Until};
use crate::{REDACTED, Redactor};

/// The most text one undecided construct (an unterminated PEM block, header line, quoted
/// value or token, a run of touching occurrences of a secret) may hold back after a scan
/// before it is released redacted; see [`StreamRedactor`].
pub const MAX_PENDING: usize = 64 * 1024;

/// The longest keyword (with its separators and shortened blank runs) kept to decide the
/// value after endless runs of blanks.
const KEYWORD_MAX: usize = 1024;

/// Redacts one stream of text that arrives in pieces (a run's assistant text, one tool
/// call's arguments) so that a secret or a pattern split across pieces is redacted whole.
///
/// Each [`push`](Self::push) returns the redacted text that can go out now and holds back the
/// end that could still be part of a secret or a pattern; [`finish`](Self::finish) returns
/// the rest.
///
/// ```
/// use redaction::{Redactor, StreamRedactor};
/// use secrecy::SecretString;
///
/// let mut stream = StreamRedactor::new(Redactor::with_secrets([SecretString::from("tok-12345")]));
/// let mut out = String::new();
/// for piece in ["the key is tok-", "12345 and ", "that is all"] {
///     out.push_str(&stream.push(piece));
/// }
/// out.push_str(&stream.finish());
/// assert_eq!(out, "the key is [REDACTED] and that is all");
/// ```
///
/// # Guarantees
/// - **Split anywhere.** However the stream is cut into pieces (single bytes, pieces larger
///   than [`MAX_PENDING`]) and wherever it is [paused](Self::pause), the concatenation of
///   everything returned is what [`Redactor::redact`] gives for the whole stream: every known
///   secret in every form the redactor knows (literal, percent-encoded, JSON-escaped, in any
///   mix) and every token pattern is redacted whole, and text with nothing to redact comes
///   out byte for byte. The one exception is the bound below, which redacts more.
/// - **Linear work.** Each byte is scanned a bounded number of times, so the work is linear in
///   the streamed bytes (times the number and length of the known secrets), whatever the
///   input and however it is split.
/// - **Bounded memory.** Between pushes [`pending_len`](Self::pending_len) stays below
///   `4 × MAX_PENDING`, plus twice the widest encoded form of the longest known secret (six
///   bytes of text per byte).
///
/// # The bound, and what it costs
/// A construct that stays undecided for more than [`MAX_PENDING`] bytes (a PEM block with no
/// `-----END`, a header line with no line break, a quoted value with no closing quote, an
/// endless token or URL authority) is released **redacted** at that point, and what follows
/// is dropped up to its terminator, or to the end of the stream. For a PEM block, a header
/// line, a quoted value or a token that is what whole-text redaction gives too; but a URL
/// authority loses its host as well (and one without `@`, which whole-text redaction keeps, is
/// redacted), and so does a word that starts like a token but turns out not to be one
/// (`AKIA…` running into lowercase): over-redaction is the safe mistake. Which of these
/// happens depends on where the stream was cut. A keyword waiting for its value behind
/// endless blanks is released as it is (the keyword is remembered to decide the value that
/// follows), and an endless run of touching occurrences of a secret becomes one marker, as in
/// whole-text redaction.
///
/// # Streams that pause
/// A run's assistant text may be interrupted by tool calls and then go on. At such a switch,
/// call [`pause`](Self::pause) instead of [`finish`](Self::finish): it releases what the text
/// so far decides and keeps the undecided end (a possible start of a secret, a keyword still
/// waiting for its value) for the text that follows, so a secret printed in two halves around
/// a tool call is still one occurrence. The held end goes out with later pieces, after the
/// interleaved events; the stream's own pieces stay in order.
///
/// # Limits
/// It knows what the [`Redactor`] knows: a secret re-encoded in a form it does not know
/// (base64, hex, split by inserted characters) is not recognised, and patterns over-redact
/// rather than under-redact.
pub struct StreamRedactor {
    redactor: Redactor,
    raw: Raw,
    marked: Marked,
    /// Bytes read by scans: the work measure of the tests.
    #[cfg(test)]
    scanned: usize,
}

/// Stage one: raw text, held until no known secret can straddle the cut.
#[derive(Default)]
struct Raw {
    text: String,
    /// `text[..redacted]` is part of a run of occurrences already released as one marker at
    /// the bound; it is kept only to see the run go on.
    redacted: usize,
    /// `text.len()` after the last scan.
    kept: usize,
}

/// Stage two: text with the known secrets replaced, held until no pattern can straddle the
/// cut.
#[derive(Default)]
struct Marked {
    text: String,
    /// `text.len()` after the last scan.
    kept: usize,
    /// What the scanner sees before `text`: the last bytes released, or, after an endless run
    /// of blanks, the keyword that waits for its value and one blank.
    behind: Vec<u8>,
    /// Where the scan starts in `behind`.
    behind_from: usize,
    /// A construct released redacted at the bound: text up to its end is dropped.
    dropping: Option<Until>,
}

impl std::fmt::Debug for StreamRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRedactor")
            .field("secrets", &self.redactor.len())
            .field("pending", &self.pending_len())
            .finish()
    }
}

impl StreamRedactor {
    /// A stream redactor that redacts with `redactor`.
    pub fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            raw: Raw::default(),
            marked: Marked::default(),
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// The redactor it redacts with, for whole texts beside the stream.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// How many bytes are held back now: below `4 ×` [`MAX_PENDING`] between pushes, plus
    /// twice the widest encoded form of the longest known secret.
    pub fn pending_len(&self) -> usize {
        self.raw.text.len() + self.marked.text.len()
    }

    /// Adds the next piece of the stream; returns the redacted text that can go out now
    /// (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        self.raw.text.push_str(delta);
        let mut out = String::new();
        if self.raw.due() {
            self.known_step(false);
        }
        if self.marked.due() {
            self.pattern_step(false, &mut out);
        }
        out
    }

    /// The stream is interrupted (another stream's pieces or other events come next, and this
    /// one may go on later): returns everything the text so far decides, redacted, and keeps
    /// the undecided end (a possible start of a secret, a keyword without its value) for the
    /// next [`push`](Self::push). Deliver the returned text before the interrupting events and
    /// what later pushes return after them.
    ///
    /// ```
    /// use redaction::{Redactor, StreamRedactor};
    /// use secrecy::SecretString;
    ///
    /// let mut text = StreamRedactor::new(Redactor::with_secrets([SecretString::from("tok-12345")]));
    /// let mut out = text.push("I will print tok-1");
    /// out.push_str(&text.pause());
    /// assert_eq!(out, "I will print "); // `tok-1` may be the start of the secret
    /// // … a tool call's events go out here …
    /// out.push_str(&text.push("2345 now."));
    /// out.push_str(&text.finish());
    /// assert_eq!(out, "I will print [REDACTED] now.");
    /// ```
    pub fn pause(&mut self) -> String {
        let mut out = String::new();
        self.known_step(false);
        self.pattern_step(false, &mut out);
        out
    }

    /// Ends the stream: the held-back text, redacted. The redactor is then ready for a new
    /// stream.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.known_step(true);
        self.pattern_step(true, &mut out);
        self.raw = Raw::default();
        self.marked = Marked::default();
        out
    }

    /// Stage one: moves the decided raw text, known secrets replaced, to stage two.
    fn known_step(&mut self, eof: bool) {
        let secrets = self.redactor.secrets();
        if secrets.is_empty() {
            self.marked.text.push_str(&self.raw.text);
            self.raw = Raw::default();
            return;
        }
        #[cfg(test)]
        {
            self.scanned += self.raw.text.len();
        }
        self.raw.step(secrets, eof, &mut self.marked.text);
    }

    /// Stage two: releases the decided text, patterns replaced, to `out`.
    fn pattern_step(&mut self, eof: bool, out: &mut String) {
        let scanned = self.marked.step(eof, out);
        #[cfg(test)]
        {
            self.scanned += scanned;
        }
        #[cfg(not(test))]
        let _ = scanned;
    }
}

impl Raw {
    /// Whether the held text has doubled since the last scan.
    fn due(&self) -> bool {
        !self.text.is_empty() && self.text.len() >= 2 * self.kept
    }

    /// Scans the held text: appends what is decided, occurrences replaced, to `out`.
    fn step(&mut self, secrets: &SecretSet, eof: bool, out: &mut String) {
        let len = self.text.len();
        let found = secrets.find(&self.text, eof);
        let undecided = if eof { len } else { found.open.unwrap_or(len) };
        // The run of occurrences that reaches the undecided end: it may still grow.
        let run = found
            .spans
            .iter()
            .copied()
            .find(|&(a, b)| !eof && a < undecided && undecided <= b);
        let limit = run.map_or(undecided, |(a, _)| a);
        let mut from = 0;
        if self.redacted > 0 {
            let done = self.redacted;
            match found
                .spans
                .iter()
                .copied()
                .find(|&(a, b)| a <= done && done <= b)
            {
                // The released run went on to `b`, and ends there.
                Some((_, b)) if eof || b < limit => from = b,
                // It goes on.
                Some((_, b)) => {
                    self.redacted = b;
                    self.trim(secrets.reach());
                    return;
                }
                // It ended where it was released.
                None if eof || done < limit => from = done,
                // An occurrence that may continue it is still undecided.
                None => {
                    self.trim(secrets.reach());
                    return;
                }
            }
            self.redacted = 0;
        }
        if let Some((a, b)) = run
            && len - a > MAX_PENDING
        {
            // The bound: the run so far is released as one marker, the rest of it dropped.
            replace_between(&self.text, from, a, &found.spans, out);
            out.push_str(REDACTED);
            self.redacted = b;
            self.trim(secrets.reach());
            return;
        }
        replace_between(&self.text, from, limit, &found.spans, out);
        self.text.drain(..limit);
        self.kept = self.text.len();
    }

    /// Drops the released part of a run, keeping the last `reach` bytes: an occurrence that
    /// continues the run starts in them.
    fn trim(&mut self, reach: usize) {
        let keep_from = self
            .text
            .floor_char_boundary(self.text.len().saturating_sub(reach));
        let cut = keep_from.min(self.redacted);
        let cut = self.text.floor_char_boundary(cut);
        self.text.drain(..cut);
        self.redacted -= cut;
        self.kept = self.text.len();
    }
}

/// Appends `text[from..to]` to `out` with the `spans` that start in it replaced by
/// [`REDACTED`] (each lies wholly before `to`).
fn replace_between(text: &str, from: usize, to: usize, spans: &[(usize, usize)], out: &mut String) {
    let mut copied = from;
    for &(a, b) in spans.iter().filter(|&&(a, _)| a >= from && a < to) {
        out.push_str(&text[copied..a]);
        out.push_str(REDACTED);
        copied = b;
    }
    out.push_str(&text[copied..to]);
}

impl Marked {
    /// Whether the held text has doubled since the last scan.
    fn due(&self) -> bool {
        !self.text.is_empty() && self.text.len() >= 2 * self.kept
    }

    /// Scans the held text: appends what is decided, patterns replaced, to `out`. Returns how
    /// many bytes it read.
    fn step(&mut self, eof: bool, out: &mut String) -> usize {
        let mut scanned = 0;
        loop {
            if let Some(until) = self.dropping {
                scanned += self.text.len();
                match until.find(self.text.as_bytes()) {
                    Ok(end) => {
                        self.drop_front(end);
                        self.dropping = None;
                    }
                    Err(keep) => {
                        let keep = if eof { self.text.len() } else { keep };
                        let keep = self.text.floor_char_boundary(keep);
                        self.drop_front(keep);
                        if eof {
                            self.dropping = None;
                        }
                        self.kept = self.text.len();
                        return scanned;
                    }
                }
            }
            let base = self.behind.len();
            let mut seen = Vec::with_capacity(base + self.text.len());
            seen.extend_from_slice(&self.behind);
            seen.extend_from_slice(self.text.as_bytes());
            scanned += seen.len() - self.behind_from;
            let mut hits = Vec::new();
            let mut open = None;
            for found in Scanner::new(&seen, self.behind_from, eof) {
                match found {
                    Found::Hit(hit) => hits.push(hit),
                    Found::Open(o) => open = Some(o),
                }
            }
            let cut = open.map_or(seen.len(), |o| o.at.max(base));
            // Released: the text up to the cut, each span found replaced.
            let mut copied = base;
            for hit in hits.iter().filter(|h| h.end > base) {
                let start = hit.start.max(base);
                out.push_str(&self.text[copied - base..start - base]);
                out.push_str(REDACTED);
                copied = hit.end;
            }
            out.push_str(&self.text[copied - base..cut - base]);
            let Some(open) = open.filter(|_| !eof && seen.len() - cut > MAX_PENDING) else {
                self.consume(cut - base, &seen[..cut]);
                self.kept = self.text.len();
                return scanned;
            };
            // The bound. A keyword waiting for its value behind endless runs of blanks: the text
            // goes out as it is, and the keyword with its runs shortened (no rule can tell a
            // run of 64 blanks from a longer one) is kept to decide what follows.
            if !open.value
                && let Some(keyword) = shorten_blank_runs(&seen[open.at..])
            {
                out.push_str(&self.text[cut - base..]);
                let start = open.at.saturating_sub(LOOK_BEHIND);
                let mut behind = seen[start..open.at].to_vec();
                behind.extend_from_slice(&keyword);
                self.behind_from = open.at - start;
                self.behind = behind;
                self.text.clear();
                self.kept = 0;
                return scanned;
            }
            // Any other construct: released redacted, and what follows dropped to its end.
            let from = self.text.floor_char_boundary(open.from.max(cut) - base) + base;
            out.push_str(&self.text[cut - base..from - base]);
            out.push_str(REDACTED);
            self.consume(from - base, &seen[..from]);
            self.dropping = Some(open.until);
        }
    }

    /// Releases `text[..n]`, which the scan saw as the end of `seen`.
    fn consume(&mut self, n: usize, seen: &[u8]) {
        if n == 0 {
            return;
        }
        self.behind = seen[seen.len().saturating_sub(LOOK_BEHIND)..].to_vec();
        self.behind_from = self.behind.len();
        self.text.drain(..n);
    }

    /// Drops `text[..n]` (part of a construct released redacted).
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let mut seen = std::mem::take(&mut self.behind);
        seen.extend_from_slice(&self.text.as_bytes()[n.saturating_sub(LOOK_BEHIND)..n]);
        self.behind = seen[seen.len().saturating_sub(LOOK_BEHIND)..].to_vec();
        self.behind_from = self.behind.len();
        self.text.drain(..n);
    }
}

/// The longest run of blanks kept in a remembered keyword: longer runs read as this long to
/// every rule (`skip_blanks` takes any run; a PEM label of 64 blanks is already too long).
const BLANK_RUN_MAX: usize = 64;

/// `text` with each run of blanks longer than [`BLANK_RUN_MAX`] cut to that length, or `None`
/// when the result is longer than [`KEYWORD_MAX`] (not a keyword waiting for its value).
fn shorten_blank_runs(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut run = 0;
    for &b in text {
        run = if is_blank(b) { run + 1 } else { 0 };
        if run <= BLANK_RUN_MAX {
            out.push(b);
        }
        if out.len() > KEYWORD_MAX {
            return None;
        }
    }
    Some(out)
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

#[cfg(test)]
mod tests;
