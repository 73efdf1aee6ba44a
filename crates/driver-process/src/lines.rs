//! A bounded, cancel-safe line reader, and the JSONL helper.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::error::ProcessError;

/// Read buffer of the stdout pipe.
const READ_BUFFER: usize = 64 << 10;

/// Why a line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the limit; it was discarded.
    TooLong,
    /// Reading failed.
    Io(io::Error),
}

/// Splits a byte stream into lines without ever holding more than `max` bytes of one line.
///
/// All state lives in the struct and no await point sits between taking bytes from the buffer
/// and recording them, so [`read_line`](Self::read_line) is cancel-safe: a timeout around it
/// loses nothing.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: BufReader<R>,
    partial: Vec<u8>,
    /// Discarding the rest of an over-long line.
    skipping: bool,
    eof: bool,
    max: usize,
    /// Lines returned or reported too long so far.
    count: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of `inner` whose lines hold at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(READ_BUFFER, inner),
            partial: Vec::new(),
            skipping: false,
            eof: false,
            max,
            count: 0,
        }
    }

    /// The number of lines read (or reported too long) so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The next line without its `\n`; `Ok(None)` at end of stream. A final line without a
    /// newline is returned as a line. After [`LineError::TooLong`] the rest of that line is
    /// skipped by the next call.
    pub async fn read_line(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        loop {
            if self.eof {
                return Ok(None);
            }
            let buf = match self.inner.fill_buf().await {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.eof = true;
                    return Err(LineError::Io(e));
                }
            };
            if buf.is_empty() {
                self.eof = true;
                if self.skipping || self.partial.is_empty() {
                    return Ok(None);
                }
                self.count += 1;
                return Ok(Some(std::mem::take(&mut self.partial)));
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(buf.len());
            if self.skipping {
                let consumed = newline.map_or(take, |i| i + 1);
                self.skipping = newline.is_none();
                self.inner.consume(consumed);
                continue;
            }
            if self.partial.len().saturating_add(take) > self.max {
                self.count += 1;
                self.partial = Vec::new();
                self.skipping = newline.is_none();
                self.inner.consume(newline.map_or(take, |i| i + 1));
                return Err(LineError::TooLong);
            }
            self.partial.extend_from_slice(&buf[..take]);
            match newline {
                Some(i) => {
                    self.inner.consume(i + 1);
                    self.count += 1;
                    return Ok(Some(std::mem::take(&mut self.partial)));
                }
                None => self.inner.consume(take),
            }
        }
    }

    /// Reads and discards everything up to the end of the stream.
    pub async fn discard_all(&mut self) {
        loop {
            match self.inner.fill_buf().await {
                Ok([]) | Err(_) => return,
                Ok(buf) => {
                    let n = buf.len();
                    self.inner.consume(n);
                }
            }
        }
    }
}

/// Parses one JSONL line. The error names the line number only, never the content.
///
/// # Errors
///
/// [`ProcessError::MalformedJson`] when `line` is not one JSON value.
pub fn parse_json_line(line: &str, line_number: usize) -> Result<serde_json::Value, ProcessError> {
    serde_json::from_str(line).map_err(|_| ProcessError::MalformedJson { line: line_number })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    async fn collect(input: &[u8], max: usize) -> Vec<Result<String, &'static str>> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            match reader.read_line().await {
                Ok(Some(line)) => out.push(Ok(String::from_utf8(line).unwrap())),
                Ok(None) => return out,
                Err(LineError::TooLong) => out.push(Err("too long")),
                Err(LineError::Io(_)) => out.push(Err("io")),
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_a_final_unterminated_one() {
        let got = collect(b"a\n\nbc\nlast", 10).await;
        assert_eq!(
            got,
            [
                Ok("a".into()),
                Ok(String::new()),
                Ok("bc".into()),
                Ok("last".into())
            ]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_reported_once_and_skipped() {
        let got = collect(b"ok\n0123456789ABC\nnext\n0123456789X", 10).await;
        assert_eq!(
            got,
            [
                Ok("ok".into()),
                Err("too long"),
                Ok("next".into()),
                Err("too long")
            ]
        );
        // Exactly the limit is allowed.
        assert_eq!(
            collect(b"0123456789\n", 10).await,
            [Ok("0123456789".into())]
        );
    }

    #[tokio::test]
    async fn long_lines_spanning_many_reads_stay_bounded() {
        let mut input = vec![b'a'; 3 * READ_BUFFER + 17];
        input.extend_from_slice(b"\nafter\n");
        let got = collect(&input, READ_BUFFER).await;
        assert_eq!(got, [Err("too long"), Ok("after".into())]);
    }
}
