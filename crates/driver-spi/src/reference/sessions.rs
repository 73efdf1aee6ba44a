//! Where a [`ReferenceBackend`](super::ReferenceBackend) keeps its sessions: in memory by
//! default ([`MemorySessions`]), or in any [`SessionTable`] a host supplies. A table that
//! outlives the process (the `reference-runtime` crate keeps one file per session in a
//! credential namespace) lets a later process resume, fork and reject exactly as one process
//! does, the way a real CLI keeps its sessions on disk.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How many earlier prompts a session remembers (older ones are dropped first).
pub const HISTORY_LEN: usize = 8;
/// How many bytes of one prompt a session remembers (cut at a character boundary).
pub const HISTORY_ENTRY_LEN: usize = 200;

/// One session of the reference runtime, as its [`SessionTable`] stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReferenceSession {
    /// Turns run in the session so far.
    pub turns: u64,
    /// Whether the provider let the session expire (resuming it is then rejected).
    pub expired: bool,
    /// The prompts of its latest turns, oldest first: at most [`HISTORY_LEN`] of them, each
    /// cut to [`HISTORY_ENTRY_LEN`] bytes. A reply shows them, so a resumed conversation is
    /// visibly the same one.
    #[serde(default)]
    pub history: Vec<String>,
}

impl ReferenceSession {
    /// A session that has run `turns` turns, with no history.
    pub fn new(turns: u64) -> Self {
        Self {
            turns,
            ..Self::default()
        }
    }

    /// Records one more turn with `prompt`, keeping the history bounded.
    pub fn push_turn(&mut self, prompt: &str) {
        self.turns += 1;
        let mut end = prompt.len().min(HISTORY_ENTRY_LEN);
        while !prompt.is_char_boundary(end) {
            end -= 1;
        }
        self.history.push(prompt[..end].to_owned());
        let excess = self.history.len().saturating_sub(HISTORY_LEN);
        self.history.drain(..excess);
    }
}

/// A session table failed: it could not read, write or decode a session.
///
/// `Display` names the operation only; the cause (an I/O error, which may name a path) is the
/// [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[error("the reference session table could not {operation}")]
pub struct SessionTableError {
    operation: &'static str,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl SessionTableError {
    /// A failure of `operation` (`"read a session"`, `"store a session"`, …), with its cause.
    pub fn new(
        operation: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            operation,
            source: Some(source.into()),
        }
    }

    /// What the table was doing.
    pub fn operation(&self) -> &'static str {
        self.operation
    }
}

/// Where the sessions of a reference backend live.
///
/// The backend calls it under its own lock, so one backend never calls it concurrently; a
/// table shared between processes must make each call atomic on its own (the file table
/// takes a file lock). The calls are synchronous and short: a table on disk reads or writes
/// one small file per call.
pub trait SessionTable: Send + fmt::Debug {
    /// Stores `session` under a new id, unique in the table, and returns the id.
    ///
    /// # Errors
    /// [`SessionTableError`] when it cannot be stored.
    fn create(&mut self, session: &ReferenceSession) -> Result<String, SessionTableError>;

    /// The session `id`, or `None` when the table does not know it (an id the table could
    /// never have issued is unknown too, not an error).
    ///
    /// # Errors
    /// [`SessionTableError`] when it cannot be read or decoded.
    fn get(&self, id: &str) -> Result<Option<ReferenceSession>, SessionTableError>;

    /// Replaces the stored session `id` (which exists) with `session`.
    ///
    /// # Errors
    /// [`SessionTableError`] when it cannot be stored.
    fn update(&mut self, id: &str, session: &ReferenceSession) -> Result<(), SessionTableError>;

    /// Forgets the session `id`; returns whether it existed.
    ///
    /// # Errors
    /// [`SessionTableError`] when it cannot be removed.
    fn remove(&mut self, id: &str) -> Result<bool, SessionTableError>;

    /// The ids of every stored session, sorted.
    ///
    /// # Errors
    /// [`SessionTableError`] when they cannot be listed.
    fn ids(&self) -> Result<Vec<String>, SessionTableError>;
}

/// The in-memory session table: the default, for tests and one-process demos. Its ids are
/// `ref-session-1`, `ref-session-2`, … in creation order.
#[derive(Default)]
pub struct MemorySessions {
    next: u64,
    sessions: BTreeMap<String, ReferenceSession>,
}

impl MemorySessions {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Counts only: a session's history holds prompts.
impl fmt::Debug for MemorySessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySessions")
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

impl SessionTable for MemorySessions {
    fn create(&mut self, session: &ReferenceSession) -> Result<String, SessionTableError> {
        self.next += 1;
        let id = format!("ref-session-{}", self.next);
        self.sessions.insert(id.clone(), session.clone());
        Ok(id)
    }

    fn get(&self, id: &str) -> Result<Option<ReferenceSession>, SessionTableError> {
        Ok(self.sessions.get(id).cloned())
    }

    fn update(&mut self, id: &str, session: &ReferenceSession) -> Result<(), SessionTableError> {
        self.sessions.insert(id.to_owned(), session.clone());
        Ok(())
    }

    fn remove(&mut self, id: &str) -> Result<bool, SessionTableError> {
        Ok(self.sessions.remove(id).is_some())
    }

    fn ids(&self) -> Result<Vec<String>, SessionTableError> {
        Ok(self.sessions.keys().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_in_entries_and_bytes() {
        let mut session = ReferenceSession::new(0);
        for i in 0..HISTORY_LEN + 3 {
            session.push_turn(&format!("prompt {i}"));
        }
        assert_eq!(session.turns, (HISTORY_LEN + 3) as u64);
        assert_eq!(session.history.len(), HISTORY_LEN);
        assert_eq!(session.history[0], "prompt 3");
        // A multi-byte character straddling the limit is dropped whole.
        session.push_turn(&format!("{}é", "a".repeat(HISTORY_ENTRY_LEN - 1)));
        assert_eq!(
            session.history.last().map(String::len),
            Some(HISTORY_ENTRY_LEN - 1)
        );
    }
}
