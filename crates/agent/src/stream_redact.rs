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
//! What is held back is flushed when the stream ends: before any event of another stream (a
//! tool call ends the text stream), and at the terminal event. A stream of one very long word
//! is cut at [`MAX_PENDING`] bytes (still outside any known secret) so memory stays bounded.

use runtime_env::Redactor;
use secrecy::{ExposeSecret, SecretString};

/// The most text held back for one stream before it is cut regardless of word boundaries.
pub(crate) const MAX_PENDING: usize = 64 * 1024;

/// Which stream the pending text belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Assistant text.
    Text,
    /// One tool call's arguments.
    Arguments(String),
}

/// The held-back end of the current stream.
pub(crate) struct StreamRedactor {
    redactor: Redactor,
    secrets: Vec<SecretString>,
    /// The longest known secret, in bytes.
    longest: usize,
    pending: Option<(Stream, String)>,
}

impl std::fmt::Debug for StreamRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRedactor")
            .field("secrets", &self.secrets.len())
            .field("pending", &self.pending.as_ref().map(|(s, t)| (s, t.len())))
            .finish()
    }
}

impl StreamRedactor {
    /// A stream redactor for `secrets` (the same values `redactor` knows).
    pub(crate) fn new(redactor: Redactor, secrets: Vec<SecretString>) -> Self {
        let secrets: Vec<SecretString> = secrets
            .into_iter()
            .filter(|s| !s.expose_secret().is_empty())
            .collect();
        let longest = secrets
            .iter()
            .map(|s| s.expose_secret().len())
            .max()
            .unwrap_or(0);
        Self {
            redactor,
            secrets,
            longest,
            pending: None,
        }
    }

    /// Redacts a whole text (no streaming).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// Adds a piece of `stream`. Returns the text of an earlier stream that this ended (to
    /// emit first), and the redacted text of `stream` that can go out now. Either may be
    /// empty.
    pub(crate) fn push(
        &mut self,
        stream: Stream,
        delta: &str,
    ) -> (Option<(Stream, String)>, String) {
        let ended = match &self.pending {
            Some((current, _)) if *current != stream => self.flush(),
            _ => None,
        };
        let (_, buffer) = self.pending.get_or_insert_with(|| (stream, String::new()));
        buffer.push_str(delta);
        let cut = self.cut();
        let ready = match &mut self.pending {
            Some((_, buffer)) if cut > 0 => {
                let head: String = buffer.drain(..cut).collect();
                self.redactor.redact(&head).into_owned()
            }
            _ => String::new(),
        };
        (ended, ready)
    }

    /// Ends the current stream: its held-back text, redacted (`None` when nothing is held).
    pub(crate) fn flush(&mut self) -> Option<(Stream, String)> {
        let (stream, buffer) = self.pending.take()?;
        if buffer.is_empty() {
            return None;
        }
        Some((stream, self.redactor.redact(&buffer).into_owned()))
    }

    /// Where the pending text can be cut: everything before it is safe to redact alone.
    fn cut(&self) -> usize {
        let Some((_, buffer)) = &self.pending else {
            return 0;
        };
        let len = buffer.len();
        let mut cut = len.saturating_sub(self.longest.saturating_sub(1));
        if len <= MAX_PENDING {
            cut = cut.min(start_of_last_words(buffer, 3));
        }
        // Never through a known secret: move the cut to the start of an occurrence it splits.
        let bytes = buffer.as_bytes();
        loop {
            let before = cut;
            for secret in &self.secrets {
                let secret = secret.expose_secret().as_bytes();
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

    fn stream_all(r: &mut StreamRedactor, pieces: &[&str]) -> String {
        let mut out = String::new();
        for piece in pieces {
            let (ended, ready) = r.push(Stream::Text, piece);
            assert!(ended.is_none());
            out.push_str(&ready);
        }
        if let Some((_, rest)) = r.flush() {
            out.push_str(&rest);
        }
        out
    }

    fn redactor(secrets: &[&str]) -> StreamRedactor {
        let secrets: Vec<SecretString> = secrets.iter().map(|s| SecretString::from(*s)).collect();
        StreamRedactor::new(Redactor::with_secrets(secrets.clone()), secrets)
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
    fn another_stream_flushes_the_pending_one_first() {
        let mut r = redactor(&["secret-value-1234"]);
        let (_, ready) = r.push(Stream::Text, "a b c d secret-value-");
        assert!(!ready.contains("secret"));
        let (ended, _) = r.push(Stream::Arguments("call-1".into()), "{\"x\":1}");
        let (stream, text) = ended.unwrap();
        assert_eq!(stream, Stream::Text);
        assert!(text.ends_with("secret-value-"), "{text}");
    }

    #[test]
    fn a_long_word_is_cut_at_the_bound_but_never_through_a_secret() {
        let secret = "s3cr3t-canary-0011";
        let mut r = redactor(&[secret]);
        let long = "x".repeat(MAX_PENDING + 10);
        let (_, ready) = r.push(Stream::Text, &format!("{long}{secret}"));
        assert!(!ready.is_empty() && !ready.contains("s3cr3t"));
        let (_, rest) = r.flush().unwrap();
        assert!(!rest.contains(secret), "{rest}");
    }
}
