//! What a raw transcript goes through before it becomes a fixture: the normalisation of what
//! changes between recordings (loopback ports, temporary directories), the canary scan that
//! keeps secrets out of the repository, and the summary printed for review.
//!
//! Everything else is kept verbatim: session ids, timestamps and durations stay as the CLI
//! printed them, so a replay sees exactly what the pinned binary emits.

use std::collections::BTreeSet;

use redaction::Redactor;
use run_service::SecretString;

/// What a temporary directory becomes in a fixture.
pub(crate) const TMP: &str = "/TMP";
/// What the dashed form of a temporary directory becomes in a fixture (see [`Normalizer::new`]).
pub(crate) const DASHED_TMP: &str = "-TMP";
/// What a loopback port becomes in a fixture.
pub(crate) const PORT: &str = "PORT";

/// Hosts whose `:<port>` suffix is normalised.
const LOOPBACK_HOSTS: [&str; 2] = ["127.0.0.1:", "localhost:"];

/// Rewrites the parts of a transcript that differ between two recordings of the same scenario.
#[derive(Debug, Clone)]
pub(crate) struct Normalizer {
    /// `(text, replacement)`, longest text first (so a path is never cut inside a longer one).
    replacements: Vec<(String, String)>,
}

impl Normalizer {
    /// A normaliser that replaces each of `temp_dirs` with [`TMP`] (what follows it is kept),
    /// and its dashed form with [`DASHED_TMP`]: Claude Code names a project's directory after its path
    /// with every character other than a letter or digit turned into `-`
    /// (`/tmp/.tmpAb12/workspace` → `-tmp--tmpAb12-workspace`). Empty entries are ignored.
    pub(crate) fn new<I: IntoIterator<Item = String>>(temp_dirs: I) -> Self {
        let mut replacements = Vec::new();
        for dir in temp_dirs {
            let dir = dir.trim_end_matches('/');
            if dir.is_empty() {
                continue;
            }
            let dashed: String = dir
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            replacements.push((dashed, DASHED_TMP.to_owned()));
            replacements.push((dir.to_owned(), TMP.to_owned()));
        }
        replacements.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        replacements.dedup();
        Self { replacements }
    }

    /// `raw` with every temporary directory replaced by [`TMP`] and every loopback port by
    /// [`PORT`]; nothing else changes.
    pub(crate) fn apply(&self, raw: &str) -> String {
        let mut text = raw.to_owned();
        for (from, to) in &self.replacements {
            text = text.replace(from.as_str(), to);
        }
        loopback_ports(&text)
    }
}

/// `text` with the digits after each `127.0.0.1:` and `localhost:` replaced by [`PORT`].
fn loopback_ports(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((at, host)) = LOOPBACK_HOSTS
        .iter()
        .filter_map(|host| rest.find(host).map(|at| (at, *host)))
        .min()
    {
        let after = at + host.len();
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str(PORT);
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// One secret value a run was given, with the name the recorder reports it by (the value
/// itself is never printed).
#[derive(Debug, Clone)]
pub(crate) struct Canary {
    label: String,
    set: Redactor,
}

impl Canary {
    /// A canary named `label` for `value` (found literally, percent-encoded or JSON-escaped).
    pub(crate) fn new(label: impl Into<String>, value: &str) -> Self {
        Self {
            label: label.into(),
            set: Redactor::with_secrets([SecretString::from(value.to_owned())]),
        }
    }

    /// Whether `text` holds the value in any of its encodings.
    fn found_in(&self, text: &str) -> bool {
        self.set.finds_secret(text)
    }
}

/// The labels of the canaries found in `text`, in the order given.
pub(crate) fn leaked<'c>(text: &str, canaries: &'c [Canary]) -> Vec<&'c str> {
    canaries
        .iter()
        .filter(|c| c.found_in(text))
        .map(|c| c.label.as_str())
        .collect()
}

/// The 1-based numbers of the non-empty lines of `text` that are not JSON values.
pub(crate) fn non_json_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .filter(|(_, line)| serde_json::from_str::<serde_json::Value>(line).is_err())
        .map(|(i, _)| i + 1)
        .collect()
}

/// The distinct event kinds in a JSONL transcript, for the review summary: each line's `type`,
/// with its `subtype` (`system/init`) or, for an `item.*` event, its item's type
/// (`item.completed/agent_message`) when it has one.
pub(crate) fn event_kinds(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|event| {
            let kind = event.get("type")?.as_str()?.to_owned();
            let detail = event
                .get("subtype")
                .or_else(|| event.pointer("/item/type"))
                .and_then(serde_json::Value::as_str);
            Some(match detail {
                Some(detail) => format!("{kind}/{detail}"),
                None => kind,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_temp_dirs_are_normalised_and_nothing_else() {
        let n = Normalizer::new(["/tmp/.tmpAb12".to_owned(), "/tmp/.tmpAb12/rt".to_owned()]);
        let raw = r#"{"url":"http://127.0.0.1:41234/mcp","cwd":"/tmp/.tmpAb12/workspace","x":"localhost:9","t":"2026-01-01T00:00:00Z","v":"127.0.0.1:"}"#;
        assert_eq!(
            n.apply(raw),
            r#"{"url":"http://127.0.0.1:PORT/mcp","cwd":"/TMP/workspace","x":"localhost:PORT","t":"2026-01-01T00:00:00Z","v":"127.0.0.1:"}"#
        );
        assert_eq!(n.apply("no change: 10.0.0.1:80"), "no change: 10.0.0.1:80");
        assert_eq!(
            n.apply("/TMP/home/.claude/projects/-tmp--tmpAb12-workspace/memory/"),
            "/TMP/home/.claude/projects/-TMP-workspace/memory/"
        );
    }

    #[test]
    fn the_longest_temp_dir_wins() {
        let n = Normalizer::new(["/tmp/a".to_owned(), "/private/tmp/a".to_owned()]);
        assert_eq!(n.apply("/private/tmp/a/x /tmp/a/y"), "/TMP/x /TMP/y");
    }

    #[test]
    fn a_canary_is_found_in_any_encoding_and_reported_by_label() {
        let canaries = [
            Canary::new("model key", "key-canary-1f2e"),
            Canary::new("token", "tok/en+x"),
        ];
        assert!(leaked(r#"{"a":"nothing here"}"#, &canaries).is_empty());
        assert_eq!(
            leaked(r#"{"auth":"Bearer key-canary-1f2e"}"#, &canaries),
            ["model key"]
        );
        assert_eq!(leaked("https://h/?t=tok%2Fen%2Bx", &canaries), ["token"]);
    }

    #[test]
    fn non_json_lines_and_event_kinds() {
        let text = "{\"type\":\"system\",\"subtype\":\"init\"}\n\nwarning: x\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\"}}\n{\"type\":\"result\"}\n";
        assert_eq!(non_json_lines(text), [3]);
        let kinds: Vec<String> = event_kinds(text).into_iter().collect();
        assert_eq!(
            kinds,
            ["item.completed/agent_message", "result", "system/init"]
        );
    }
}
