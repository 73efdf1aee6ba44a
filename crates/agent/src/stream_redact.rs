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
//! - The model's reasoning is a stream of its own, redacted like the assistant text and paused
//!   the same way: it goes on after a tool call or a piece of text, so a secret split across
//!   reasoning deltas is redacted whole in the joined reasoning deltas.

use redaction::{Redactor, StreamRedactor};

/// Which stream pending text belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Assistant text.
    Text,
    /// The model's reasoning text.
    Reasoning,
    /// One tool call's arguments.
    Arguments(String),
}

/// The open stream, the assistant text and the reasoning (each held across interruptions)
/// and the open call's arguments.
#[derive(Debug)]
pub(crate) struct Streams {
    open: Option<Stream>,
    text: StreamRedactor,
    reasoning: StreamRedactor,
    arguments: StreamRedactor,
}

impl Streams {
    /// Streams redacted by `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            open: None,
            text: StreamRedactor::new(redactor.clone()),
            reasoning: StreamRedactor::new(redactor.clone()),
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
            Stream::Reasoning => self.reasoning.push(delta),
            Stream::Arguments(_) => self.arguments.push(delta),
        };
        self.open = Some(stream);
        (interrupted, ready)
    }

    /// Another event comes: the open stream's text that can go out before it (`None` when
    /// there is none). Arguments end here; the assistant text and the reasoning keep their
    /// undecided ends.
    pub(crate) fn interrupt(&mut self) -> Option<(Stream, String)> {
        let stream = self.open.take()?;
        let rest = match &stream {
            Stream::Text => self.text.pause(),
            Stream::Reasoning => self.reasoning.pause(),
            Stream::Arguments(_) => self.arguments.finish(),
        };
        (!rest.is_empty()).then_some((stream, rest))
    }

    /// The run ends: everything still held, redacted (the open call's arguments first, then
    /// the reasoning and the assistant text held across interruptions, the open one last).
    pub(crate) fn finish(&mut self) -> Vec<(Stream, String)> {
        let mut out = Vec::new();
        let open = self.open.take();
        if let Some(Stream::Arguments(call)) = &open {
            out.push((Stream::Arguments(call.clone()), self.arguments.finish()));
        }
        // The stream open at the end was pushed to last; the other one paused before it.
        if open == Some(Stream::Reasoning) {
            out.push((Stream::Text, self.text.finish()));
            out.push((Stream::Reasoning, self.reasoning.finish()));
        } else {
            out.push((Stream::Reasoning, self.reasoning.finish()));
            out.push((Stream::Text, self.text.finish()));
        }
        out.retain(|(_, text)| !text.is_empty());
        out
    }
}
