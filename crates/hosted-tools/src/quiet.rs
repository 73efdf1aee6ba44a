//! Keeps rmcp's request logging away from the host's `tracing` subscriber.
//!
//! rmcp logs whole requests and results at DEBUG and TRACE (`rmcp::service: received request
//! … arguments: …`), so anything a tool call carries would reach the host's subscriber, and
//! its logs. The tool server therefore runs on a thread of its own whose default dispatcher is
//! [`Quiet`]: it drops every rmcp event and span below INFO and hands everything else to the
//! dispatcher the host had when the server started. rmcp's tasks all run on that thread (a
//! current-thread runtime), so the filter covers them; tool handlers run on the host's runtime
//! and log as usual.
//!
//! `max_level_hint` and `current_span` keep their defaults (no hint; unknown span): `tracing`'s
//! `Dispatch` does not expose the host's hint, so every callsite on this thread reaches
//! [`Quiet::enabled`], which asks the host. That costs a call per disabled callsite on the
//! server's thread, never correctness.

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};

/// Whether a callsite is rmcp's verbose logging (DEBUG or TRACE).
fn silenced(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with("rmcp") && *meta.level() > Level::INFO
}

/// The dispatcher of the tool server's thread: the host's, without rmcp's verbose logging.
pub(crate) struct Quiet {
    host: Dispatch,
}

impl Quiet {
    /// Wraps the dispatcher current on the calling thread.
    pub(crate) fn around_current() -> Self {
        Self {
            host: tracing::dispatcher::get_default(Dispatch::clone),
        }
    }
}

impl Subscriber for Quiet {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if silenced(meta) {
            // `sometimes`, not `never`: the host's threads may still want rmcp's logging of
            // the host's own MCP clients; `enabled` decides per dispatcher.
            return Interest::sometimes();
        }
        self.host.register_callsite(meta)
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        !silenced(meta) && self.host.enabled(meta)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.host.new_span(span)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.host.record(span, values);
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.host.record_follows_from(span, follows);
    }

    fn event(&self, event: &Event<'_>) {
        if !silenced(event.metadata()) {
            self.host.event(event);
        }
    }

    fn enter(&self, span: &Id) {
        self.host.enter(span);
    }

    fn exit(&self, span: &Id) {
        self.host.exit(span);
    }

    fn clone_span(&self, id: &Id) -> Id {
        self.host.clone_span(id)
    }

    fn try_close(&self, id: Id) -> bool {
        self.host.try_close(id)
    }
}
