//! Recognising Codex's own "unknown session" answers to `exec resume` and `exec fork`.
//!
//! The exit code says nothing here (every failure exits 1), so the decision rests on the
//! messages Codex prints; each phrase below was observed from the pinned `codex` release
//! (see the tests).

/// Phrases Codex prints when the thread id is unknown to its `CODEX_HOME`, lower-cased.
const UNKNOWN_SESSION: &[&str] = &[
    "no rollout found for thread id",
    "no rollout found for conversation id",
    "thread not found",
    "session not found",
];

/// Whether `text` (stderr, or an `error` event's message) says the session is unknown.
pub(crate) fn is_unknown_session(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    UNKNOWN_SESSION.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_codex_phrases_only() {
        // Verbatim from codex 0.169.0 (`exec resume` with an unknown UUID).
        assert!(is_unknown_session(
            "Error: thread/resume: thread/resume failed: no rollout found for thread id \
             1f9c3813-6aa8-448e-8c61-b9a6080c42ad (code -32600)"
        ));
        assert!(is_unknown_session(
            "Error: thread/fork: thread/fork failed: no rollout found for thread id x (code -32600)"
        ));
        assert!(is_unknown_session("Error: Session not found: garbage-name"));
        assert!(is_unknown_session("thread not found: abc"));
        assert!(!is_unknown_session("stream disconnected before completion"));
        assert!(!is_unknown_session(""));
    }
}
