//! A run's streams, redacted as streams: the assistant text and each tool call's arguments
//! arrive in pieces, and the one [`redaction::StreamRedactor`] of the run redacts the current
//! stream so that a secret or pattern split across pieces is redacted whole.
//!
//! Events of one run are delivered in order, so only one stream is open at a time: a piece of
//! another stream, or any other event, ends the open one first ([`Streams::flush`]).

use redaction::{Redactor, StreamRedactor};

/// Which stream pending text belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Assistant text.
    Text,
    /// One tool call's arguments.
    Arguments(String),
}

/// The open stream and its held-back end.
#[derive(Debug)]
pub(crate) struct Streams {
    open: Option<Stream>,
    redactor: StreamRedactor,
}

impl Streams {
    /// Streams redacted by `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            open: None,
            redactor: StreamRedactor::new(redactor),
        }
    }

    /// Redacts a whole text (no streaming).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redactor.redactor().redact(text).into_owned()
    }

    /// Adds a piece of `stream`. Returns the text of an earlier stream that this ended (to
    /// emit first), and the redacted text of `stream` that can go out now. Either may be
    /// empty.
    pub(crate) fn push(
        &mut self,
        stream: Stream,
        delta: &str,
    ) -> (Option<(Stream, String)>, String) {
        let ended = match &self.open {
            Some(open) if *open != stream => self.flush(),
            _ => None,
        };
        self.open = Some(stream);
        (ended, self.redactor.push(delta))
    }

    /// Ends the open stream: its held-back text, redacted (`None` when nothing is held).
    pub(crate) fn flush(&mut self) -> Option<(Stream, String)> {
        let stream = self.open.take()?;
        let rest = self.redactor.finish();
        (!rest.is_empty()).then_some((stream, rest))
    }
}
