//! A run's streams, redacted as streams: the assistant text and each tool call's arguments
//! arrive in pieces, and a [`redaction::StreamRedactor`] redacts each so that a secret or a
//! pattern split across pieces is redacted whole.
//!
//! Events of one run are delivered in order, so only one stream is open at a time: a piece of
//! another stream, or any other event, interrupts the open one first ([`Streams::interrupt`]).
//! - A tool call's arguments end when the call's stream is interrupted: what they hold back
//!   goes out then.
//! - The assistant text goes on after a tool call, so it only pauses: it releases what it has
//!   decided and keeps the undecided end (a possible start of a known secret, a keyword still
//!   waiting for its value) for the text that follows. A secret printed in two halves around
//!   a tool call is then one occurrence in the joined text deltas, as it is in
//!   `RunResult::output`. The held end is delivered with the next text delta, after the
//!   interleaved tool-call events (or at the run's end, [`Streams::finish`]); text deltas stay
//!   in order among themselves.

use redaction::{Redactor, StreamRedactor};

/// Which stream pending text belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Assistant text.
    Text,
    /// One tool call's arguments.
    Arguments(String),
}

/// The open stream, the assistant text (held across interruptions) and the open call's
/// arguments.
#[derive(Debug)]
pub(crate) struct Streams {
    open: Option<Stream>,
    text: StreamRedactor,
    arguments: StreamRedactor,
}

impl Streams {
    /// Streams redacted by `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            open: None,
            text: StreamRedactor::new(redactor.clone()),
            arguments: StreamRedactor::new(redactor),
        }
    }

    /// The redactor of every stream.
    pub(crate) fn redactor(&self) -> &Redactor {
        self.text.redactor()
    }

    /// Redacts a whole text (no streaming).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.text.redactor().redact(text).into_owned()
    }

    /// Adds a piece of `stream`. Returns the text of the stream this interrupted (to emit
    /// first), and the redacted text of `stream` that can go out now. Either may be empty.
    pub(crate) fn push(
        &mut self,
        stream: Stream,
        delta: &str,
    ) -> (Option<(Stream, String)>, String) {
        let interrupted = match &self.open {
            Some(open) if *open != stream => self.interrupt(),
            _ => None,
        };
        let ready = match &stream {
            Stream::Text => self.text.push(delta),
            Stream::Arguments(_) => self.arguments.push(delta),
        };
        self.open = Some(stream);
        (interrupted, ready)
    }

    /// Another event comes: the open stream's text that can go out before it (`None` when
    /// there is none). Arguments end here; the assistant text keeps its undecided end.
    pub(crate) fn interrupt(&mut self) -> Option<(Stream, String)> {
        let stream = self.open.take()?;
        let rest = match &stream {
            Stream::Text => self.text.pause(),
            Stream::Arguments(_) => self.arguments.finish(),
        };
        (!rest.is_empty()).then_some((stream, rest))
    }

    /// The run ends: everything still held, redacted (the open stream's first, then the
    /// assistant text held across an interruption).
    pub(crate) fn finish(&mut self) -> Vec<(Stream, String)> {
        let mut out = Vec::new();
        if let Some(Stream::Arguments(call)) = self.open.take() {
            out.push((Stream::Arguments(call), self.arguments.finish()));
        }
        out.push((Stream::Text, self.text.finish()));
        out.retain(|(_, text)| !text.is_empty());
        out
    }
}
