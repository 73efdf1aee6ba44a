//! The bounded, redacted stderr tail.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};

/// Extra bytes kept in front of the tail. Redaction runs over the tail *and* this margin, so a
/// secret or token that starts before the tail is still recognised whole; the margin itself
/// is never returned. Secrets longer than this can leak a suffix at the very start of a tail.
const MARGIN: usize = 8 << 10;

/// The one redactor of a process's stderr: the request's secrets, the runtime environment's,
/// the command's secret bindings, and the token patterns.
pub(crate) type Redaction = redaction::Redactor;

/// The last bytes of a stream.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    bytes: VecDeque<u8>,
    limit: usize,
    keep: usize,
    truncated: bool,
}

impl TailBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            limit,
            keep: if limit == 0 {
                0
            } else {
                limit.saturating_add(MARGIN)
            },
            truncated: false,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.keep {
            self.truncated |= !chunk.is_empty() || !self.bytes.is_empty();
            self.bytes.clear();
            self.bytes
                .extend(&chunk[chunk.len().saturating_sub(self.keep)..]);
            return;
        }
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(self.keep);
        if excess > 0 {
            self.truncated = true;
            self.bytes.drain(..excess);
        }
    }

    /// At most `limit` bytes: the redacted end of the stream.
    ///
    /// When the front was dropped, the (partial) first line of what is kept is dropped after
    /// redaction, or, without a newline, the first [`MARGIN`] bytes: what remains can hold no
    /// piece of a secret cut by the truncation.
    pub(crate) fn render(&self, redaction: &Redaction) -> String {
        if self.limit == 0 {
            return String::new();
        }
        let (front, back) = self.bytes.as_slices();
        let mut bytes = Vec::with_capacity(self.bytes.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        let redacted = redaction
            .redact(&String::from_utf8_lossy(&bytes))
            .into_owned();
        let mut text = redacted.as_str();
        if self.truncated {
            text = match text.find('\n') {
                Some(i) => &text[i + 1..],
                None => &text[floor_char_boundary(text, MARGIN.min(text.len()))..],
            };
        }
        if text.len() > self.limit {
            let mut cut = text.len() - self.limit;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = &text[cut..];
        }
        text.to_owned()
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Copies `stream` into `tail` until the end of the stream.
pub(crate) async fn drain(mut stream: impl AsyncRead + Unpin, tail: Arc<Mutex<TailBuffer>>) {
    let mut chunk = vec![0u8; 8 << 10];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => return,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use secrecy::SecretString;

    use super::*;

    fn redaction(secret: &str) -> Redaction {
        Redaction::with_secrets([SecretString::from(secret.to_owned())])
    }

    #[test]
    fn keeps_the_end_within_the_limit() {
        let mut tail = TailBuffer::new(16);
        for i in 0..5000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.render(&Redaction::default());
        assert!(text.len() <= 16);
        assert!(text.ends_with("line 4999\n"));
    }

    #[test]
    fn a_secret_cut_by_the_truncation_never_shows() {
        let secret = "tenant-secret-0123456789";
        let repeated = format!("{secret} ");
        // Padding without newlines, with newlines, and made of the secret itself (redaction
        // then shrinks the text below the limit, so only the margin rule hides the cut piece).
        let cases: [(usize, &[u8]); 3] = [
            (64, b"y"),
            (64, b"yyyyyyy\n"),
            (16 << 10, repeated.as_bytes()),
        ];
        for (limit, padding) in cases {
            for offset in 0..secret.len() {
                let mut tail = TailBuffer::new(limit);
                let keep = tail.keep;
                // The kept bytes start `offset` bytes into the secret.
                let mut stream = vec![b'x'; keep];
                stream.extend_from_slice(secret.as_bytes());
                stream.extend_from_slice(b" and more text after it, ");
                while stream.len() < 2 * keep + offset {
                    stream.extend_from_slice(padding);
                }
                stream.truncate(2 * keep + offset);
                for chunk in stream.chunks(1000) {
                    tail.push(chunk);
                }
                let text = tail.render(&redaction(secret));
                assert!(text.len() <= limit, "offset {offset}");
                let suffix = &secret[offset.max(1)..];
                assert!(!text.contains(suffix), "offset {offset}: {text}");
            }
        }
    }

    #[test]
    fn secrets_and_tokens_are_redacted() {
        let mut tail = TailBuffer::new(1024);
        tail.push(b"auth failed for tenant-secret-0123456789\nAuthorization: Bearer abc.def\n");
        let text = tail.render(&redaction("tenant-secret-0123456789"));
        assert!(!text.contains("tenant-secret") && !text.contains("abc.def"));
        assert_eq!(text.matches("[REDACTED]").count(), 2);
    }

    #[test]
    fn a_zero_limit_keeps_nothing() {
        let mut tail = TailBuffer::new(0);
        tail.push(b"anything");
        assert_eq!(tail.render(&Redaction::default()), "");
    }
}
