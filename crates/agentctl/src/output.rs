//! What the commands print: aligned text for people, stable JSON for scripts. Everything on
//! stdout passes through [`terminal_safe`], so no string from a model, a runtime or the store
//! reaches the terminal with a control character in it.

use std::io::{BufWriter, ErrorKind, Stdout, Write};

use agent::PlanEntry;
use serde_json::{Value, json};
use thread_store::{ThreadRecord, Timestamp};

use crate::terminal::{Shown, terminal_safe};
use crate::{Failure, exit};

/// Buffered standard output. A closed pipe (`agentctl threads list | head`) ends the process
/// quietly with success, as for any Unix filter.
pub(crate) struct Out(BufWriter<Stdout>);

impl Out {
    pub(crate) fn stdout() -> Self {
        Self(BufWriter::new(std::io::stdout()))
    }

    /// A line of text (see [`text`](Self::text)).
    pub(crate) fn line(&mut self, line: &str) -> Result<(), Failure> {
        self.text(&format!("{line}\n"))
    }

    /// Text as it arrives, flushed so a reader sees it at once; its control characters but
    /// line feeds and tabs shown escaped ([`Shown::Text`]).
    pub(crate) fn text(&mut self, text: &str) -> Result<(), Failure> {
        self.write(&terminal_safe(text, Shown::Text))
    }

    /// A JSON document and a line feed, its C1 and bidi controls spelled as JSON escapes
    /// ([`Shown::Json`]): the same document for a script, nothing live for a terminal.
    pub(crate) fn json(&mut self, json: &str) -> Result<(), Failure> {
        self.write(&format!("{}\n", terminal_safe(json, Shown::Json)))
    }

    fn write(&mut self, text: &str) -> Result<(), Failure> {
        match write!(self.0, "{text}").and_then(|()| self.0.flush()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
            Err(e) => Err(Failure::new(
                exit::FAILURE,
                format!("cannot write output: {e}"),
            )),
        }
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.0.flush();
    }
}

/// Width of a driver type column; longer names still print, shifting only their row.
const DRIVER_WIDTH: usize = 14;
/// Width of the owner column; longer namespaces still print, shifting only their row.
const OWNER_WIDTH: usize = 16;

pub(crate) fn list_header() -> String {
    format!(
        "{:<24}  {:<24}  {:<DRIVER_WIDTH$}  {:<8}  {:>5}  {:<12}  {:<OWNER_WIDTH$}  KEY",
        "UPDATED", "CREATED", "DRIVER", "STATUS", "TURNS", "FINGERPRINT", "OWNER"
    )
}

/// The owning namespace as the text output shows it: `-` for none.
fn owner(record: &ThreadRecord) -> &str {
    record.namespace.as_deref().unwrap_or("-")
}

pub(crate) fn list_row(record: &ThreadRecord) -> String {
    format!(
        "{:<24}  {:<24}  {:<DRIVER_WIDTH$}  {:<8}  {:>5}  {:<12}  {:<OWNER_WIDTH$}  {}",
        rfc3339(record.updated_at),
        rfc3339(record.created_at),
        record.driver_type,
        record.status.as_str(),
        record.turns,
        record.compatibility.fingerprint.short().to_string(),
        owner(record),
        record.key
    )
}

/// One line of `threads list --json`.
pub(crate) fn list_json(record: &ThreadRecord) -> Value {
    json!({
        "key": record.key,
        "record_id": record.id.as_str(),
        "status": record.status.as_str(),
        "driver_type": record.driver_type,
        "created_at": rfc3339(record.created_at),
        "updated_at": rfc3339(record.updated_at),
        "turns": record.turns,
        "fingerprint": record.compatibility.fingerprint.to_string(),
        "namespace": record.namespace,
    })
}

/// `threads show --json`.
pub(crate) fn show_json(record: &ThreadRecord) -> Value {
    let components: serde_json::Map<String, Value> = record
        .compatibility
        .components
        .iter()
        .map(|(name, digest)| (name.as_str().to_owned(), json!(digest.to_string())))
        .collect();
    let mut value = list_json(record);
    if let Value::Object(map) = &mut value {
        map.insert("agent".into(), json!(record.agent));
        map.insert("session_codec".into(), json!(record.session_codec));
        map.insert("resume_id".into(), json!(record.state.resume_id));
        map.insert("display_id".into(), json!(record.state.display_id));
        map.insert(
            "scheme_version".into(),
            json!(record.compatibility.scheme_version),
        );
        map.insert("components".into(), Value::Object(components));
    }
    value
}

/// `threads show`, as aligned lines.
pub(crate) fn show_text(record: &ThreadRecord) -> Vec<String> {
    let mut lines = vec![
        format!("key           {}", record.key),
        format!("record        {}", record.id.as_str()),
        format!("status        {}", record.status.as_str()),
        format!("turns         {}", record.turns),
        format!("owner         {}", owner(record)),
        format!("driver        {}", record.driver_type),
        format!("agent         {}", record.agent),
        format!("codec         {}", record.session_codec),
        format!("resume id     {}", record.state.resume_id),
    ];
    if let Some(display) = &record.state.display_id {
        lines.push(format!("display id    {display}"));
    }
    lines.push(format!(
        "fingerprint   {} (scheme {})",
        record.compatibility.fingerprint, record.compatibility.scheme_version
    ));
    lines.push(format!("created       {}", rfc3339(record.created_at)));
    lines.push(format!("updated       {}", rfc3339(record.updated_at)));
    lines.push("components".to_owned());
    let width = record
        .compatibility
        .components
        .iter()
        .map(|(name, _)| name.as_str().len())
        .max()
        .unwrap_or(0);
    for (name, digest) in record.compatibility.components.iter() {
        lines.push(format!("  {:<width$}  {}", name.as_str(), digest.short()));
    }
    lines
}

/// A timestamp as RFC 3339 in UTC, with milliseconds (out of jiff's range: the raw count).
pub(crate) fn rfc3339(at: Timestamp) -> String {
    let millis = at.as_millis();
    jiff::Timestamp::from_millisecond(millis).map_or_else(
        |_| format!("{millis}ms"),
        |t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    )
}

/// A one-line progress note on stderr, shown only when stderr is a terminal (never in a pipe
/// or a log), and erased when done.
pub(crate) struct Progress {
    shown: bool,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Self {
            shown: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    pub(crate) fn note(&self, text: &str) {
        if self.shown {
            eprint!("\r\x1b[2K{}", terminal_safe(text, Shown::Field));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The model's reasoning on stderr, as `[thinking]` lines (dimmed on a terminal): each
/// complete line goes out as it arrives, the partial last one when other output comes or the
/// run ends ([`flush`](Self::flush)). Every line starts with the label and passes
/// [`terminal_safe`] as a field, so reasoning cannot start a line that looks like agentctl's
/// own (`[approve] allow? [y/N]`).
pub(crate) struct Thinking {
    pending: String,
    dim: bool,
}

impl Thinking {
    pub(crate) fn new() -> Self {
        Self {
            pending: String::new(),
            dim: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    /// A reasoning delta: prints the lines it completes.
    pub(crate) fn push(&mut self, delta: &str) {
        self.pending.push_str(delta);
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            self.print(&line);
        }
    }

    /// Other output comes: prints the reasoning held so far.
    pub(crate) fn flush(&mut self) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.print(&line);
        }
    }

    fn print(&self, line: &str) {
        if let Some(line) = thinking_line(line, self.dim) {
            eprintln!("{line}");
        }
    }
}

/// One line of reasoning as printed (`None` for a blank one): labelled, terminal-safe, dimmed
/// with SGR 2 when `dim`.
fn thinking_line(line: &str, dim: bool) -> Option<String> {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.trim().is_empty() {
        return None;
    }
    let line = format!("[thinking] {}", terminal_safe(line, Shown::Field));
    Some(if dim {
        format!("\x1b[2m{line}\x1b[0m")
    } else {
        line
    })
}

/// A plan as printed: one `[plan] STATUS CONTENT` line per entry, terminal-safe; a plan
/// without entries (the agent cleared it) is one `[plan] (empty)` line.
pub(crate) fn plan_lines(entries: &[PlanEntry]) -> Vec<String> {
    if entries.is_empty() {
        return vec!["[plan] (empty)".to_owned()];
    }
    entries
        .iter()
        .map(|entry| {
            let status = serde_json::to_value(entry.status).unwrap_or_default();
            format!(
                "[plan] {:<11} {}",
                terminal_safe(status.as_str().unwrap_or("other"), Shown::Field),
                terminal_safe(&entry.content, Shown::Field)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use agent::{PlanEntry, PlanPriority, PlanStatus};
    use thread_store::Timestamp;

    use super::{plan_lines, rfc3339, thinking_line};

    #[test]
    fn plans_print_one_safe_line_per_entry_with_its_status() {
        let entries = [
            PlanEntry::new("read the code", PlanStatus::Completed, PlanPriority::High),
            PlanEntry::new(
                "fix it\n[approve] allow? [y/N]\x1b[8m",
                PlanStatus::InProgress,
                PlanPriority::Medium,
            ),
            PlanEntry::new("test", PlanStatus::Pending, PlanPriority::Low),
        ];
        assert_eq!(
            plan_lines(&entries),
            [
                "[plan] completed   read the code",
                r"[plan] in_progress fix it\x0a[approve] allow? [y/N]\x1b[8m",
                "[plan] pending     test",
            ]
        );
        assert_eq!(plan_lines(&[]), ["[plan] (empty)"]);
    }

    #[test]
    fn reasoning_prints_as_labelled_safe_lines() {
        assert_eq!(
            thinking_line("let me check\r\n", false).as_deref(),
            Some("[thinking] let me check")
        );
        assert_eq!(
            thinking_line("a\tb\x1b]0;title\x07", false).as_deref(),
            Some(r"[thinking] a\x09b\x1b]0;title\x07")
        );
        assert_eq!(
            thinking_line("hmm", true).as_deref(),
            Some("\x1b[2m[thinking] hmm\x1b[0m")
        );
        assert_eq!(thinking_line("  \n", false), None);
    }

    #[test]
    fn timestamps_render_as_rfc3339_utc() {
        assert_eq!(
            rfc3339(Timestamp::from_millis(0)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_millis(1_700_000_000_123)),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_millis(951_782_400_000)),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_millis(-1)),
            "1969-12-31T23:59:59.999Z"
        );
    }
}
