//! Redaction of streamed text: a secret split across deltas is redacted whole.
//!
//! A driver streams text and tool-call arguments in small pieces. Redacting each piece on its
//! own lets a known secret through when it is split (`a1b2c3d4` + `e5f6…`), and a pattern
//! such as `Bearer <token>` when its keyword and value arrive apart. [`StreamRedactor`] keeps
//! the end of the current stream back until it cannot be part of a secret or a pattern any
//! more:
//! - at least the longest known secret minus one byte, so every occurrence of a known secret
//!   lies wholly in the text being redacted;
//! - the last three whitespace-separated words, so a pattern's keyword and its value (`Bearer
//!   <token>`, `"access_token": "<value>"`) are redacted together;
//! - and never a cut through an occurrence of a known secret.
//!
//! What is held back comes out when the stream ends ([`StreamRedactor::finish`]). A stream of
//! one very long word is cut at [`MAX_PENDING`] bytes (still outside any known secret) so
//! memory stays bounded.

use crate::Redactor;

/// The most text held back for one stream before it is cut regardless of word boundaries.
pub const MAX_PENDING: usize = 64 * 1024;

/// Redacts one stream of text that arrives in pieces (a run's assistant text, one tool
/// call's arguments) so that a secret or a pattern split across pieces is redacted whole.
///
/// Each [`push`](Self::push) returns the redacted text that can go out now and holds back the
/// end that could still be part of a secret; [`finish`](Self::finish) returns the rest.
/// The concatenation of everything returned is the stream, redacted.
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
pub struct StreamRedactor {
    redactor: Redactor,
    pending: String,
}

impl std::fmt::Debug for StreamRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRedactor")
            .field("secrets", &self.redactor.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl StreamRedactor {
    /// A stream redactor that redacts with `redactor`.
    pub fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            pending: String::new(),
        }
    }

    /// The redactor it redacts with, for whole texts beside the stream.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// How many bytes are held back now.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Adds the next piece of the stream; returns the redacted text that can go out now
    /// (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let cut = self.cut();
        if cut == 0 {
            return String::new();
        }
        let head: String = self.pending.drain(..cut).collect();
        self.redactor.redact(&head).into_owned()
    }

    /// Ends the stream: the held-back text, redacted. The redactor is then ready for a new
    /// stream.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.redactor.redact(&rest).into_owned()
    }

    /// Where the pending text can be cut: everything before it is safe to redact alone.
    fn cut(&self) -> usize {
        let buffer = &self.pending;
        let len = buffer.len();
        let mut cut = len.saturating_sub(self.redactor.longest().saturating_sub(1));
        if len <= MAX_PENDING {
            cut = cut.min(start_of_last_words(buffer, 3));
        }
        // Never through a known secret: move the cut to the start of an occurrence it splits.
        let bytes = buffer.as_bytes();
        loop {
            let before = cut;
            for secret in self.redactor.secrets().values() {
                let secret = secret.as_bytes();
                let from = cut.saturating_sub(secret.len() - 1);
                let to = (cut + secret.len() - 1).min(len);
                if let Some(at) = bytes
                    .get(from..to)
                    .and_then(|w| w.windows(secret.len()).position(|w| w == secret))
                {
                    let at = from + at;
                    if at < cut && at + secret.len() > cut {
                        cut = at;
                    }
                }
            }
            if cut == before {
                break;
            }
        }
        while cut > 0 && !buffer.is_char_boundary(cut) {
            cut -= 1;
        }
        // The split must not change what the redactor does: a keyword and its value (`Bearer
        // <token>`) on both sides of the cut would each pass alone. Step back a word at a time
        // until redacting the two sides apart gives what redacting them together gives.
        if cut > 0 {
            let whole = self.redactor.redact(buffer);
            while cut > 0 {
                let (head, tail) = buffer.split_at(cut);
                let apart = self.redactor.redact(head).into_owned() + &self.redactor.redact(tail);
                if apart == whole {
                    break;
                }
                cut = previous_word_start(buffer, cut);
            }
        }
        cut
    }
}

/// The start of the word before `cut` (the byte after the whitespace that precedes it), or 0.
fn previous_word_start(text: &str, cut: usize) -> usize {
    let head = &text[..cut];
    // Skip the whitespace right before the cut, then the word, to the whitespace before it.
    let trimmed = head.trim_end_matches(char::is_whitespace);
    match trimmed.rfind(char::is_whitespace) {
        Some(i) if i + 1 < cut => {
            let c = trimmed[i..].chars().next().map_or(1, char::len_utf8);
            let start = i + c;
            if start < cut { start } else { 0 }
        }
        _ => 0,
    }
}

/// The byte offset where the last `words` whitespace-separated words of `text` begin (0 when
/// it has fewer).
fn start_of_last_words(text: &str, words: usize) -> usize {
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices().rev() {
        if c.is_whitespace() {
            if in_word {
                seen += 1;
                if seen == words {
                    return i + c.len_utf8();
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    0
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    use secrecy::SecretString;

    fn stream_all(r: &mut StreamRedactor, pieces: &[&str]) -> String {
        let mut out = String::new();
        for piece in pieces {
            out.push_str(&r.push(piece));
        }
        out.push_str(&r.finish());
        out
    }

    fn redactor(secrets: &[&str]) -> StreamRedactor {
        StreamRedactor::new(secrets.iter().map(|s| SecretString::from(*s)).collect())
    }

    #[test]
    fn a_known_secret_split_into_small_chunks_is_redacted_whole() {
        let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let text = format!("the token is {token} and more text follows here");
        let pieces: Vec<String> = text
            .as_bytes()
            .chunks(8)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let out = stream_all(&mut redactor(&[token]), &pieces);
        assert!(!out.contains(&token[..16]), "{out}");
        assert!(
            out.contains("[REDACTED]") && out.ends_with("follows here"),
            "{out}"
        );
    }

    #[test]
    fn a_pattern_split_between_keyword_and_value_is_redacted() {
        let out = stream_all(
            &mut redactor(&[]),
            &[
                "Authorization: Bea",
                "rer abcdef",
                "ghij123 and then",
                " some words go by",
            ],
        );
        assert!(!out.contains("abcdefghij123"), "{out}");
        assert!(out.contains("Bearer [REDACTED]"), "{out}");
    }

    #[test]
    fn every_byte_comes_out_once_in_order() {
        let text = "héllo wörld, nothing secret in this text at all — ünïcode too";
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(stream_all(&mut redactor(&["zz-secret-zz"]), &pieces), text);
    }

    #[test]
    fn a_long_word_is_cut_at_the_bound_but_never_through_a_secret() {
        let secret = "s3cr3t-canary-0011";
        let mut r = redactor(&[secret]);
        let long = "x".repeat(MAX_PENDING + 10);
        let ready = r.push(&format!("{long}{secret}"));
        assert!(!ready.is_empty() && !ready.contains("s3cr3t"));
        let rest = r.finish();
        assert!(!rest.contains(secret), "{rest}");
    }
}
