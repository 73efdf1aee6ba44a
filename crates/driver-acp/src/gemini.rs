//! Gemini's ACP mode loses a session loaded in the minute its recording was opened: 0.61.0
//! names a session's file by the UTC minute a process opens it
//! (`$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`), and
//! `session/load` opens that name afresh before it looks the session up. When a file of that
//! name exists (the session started, or was last loaded, this minute), the load restarts it,
//! fails as an unknown session and the history is gone for every later load. So a load waits
//! for the next minute instead (see `docs/acp-agents-observed.md`, Q5).

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a `session/load` of `id` must wait at `now` so that Gemini opens a new file name:
/// until just past the minute when a file of this minute's name exists for the session.
pub(crate) fn load_wait(state_dir: &Path, id: &str, now: SystemTime) -> Option<Duration> {
    let short = id.get(..8)?;
    let since_epoch = now.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    let name = format!(
        "session-{}-{short}.jsonl",
        utc_minute(since_epoch.as_secs())
    );
    let projects = std::fs::read_dir(state_dir.join(".gemini").join("tmp")).ok()?;
    let taken = projects
        .flatten()
        .any(|project| project.path().join("chats").join(&name).exists());
    // Past the minute, with a margin for the agent's own clock reading.
    let into_minute = Duration::from_secs(since_epoch.as_secs() % 60)
        + Duration::from_nanos(u64::from(since_epoch.subsec_nanos()));
    taken.then(|| Duration::from_secs(61).saturating_sub(into_minute))
}

/// `YYYY-MM-DDTHH-MM` of the UTC minute `secs` after the epoch.
fn utc_minute(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|secs| jiff::Timestamp::from_second(secs).ok())
        .map(|t| t.strftime("%Y-%m-%dT%H-%M").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn minutes_are_named_as_gemini_names_them() {
        assert_eq!(utc_minute(0), "1970-01-01T00-00");
        // 2026-12-05T16:05:42Z
        assert_eq!(utc_minute(1_796_486_742), "2026-12-05T16-05");
        // 2024-02-29T23:59:59Z (a leap day)
        assert_eq!(utc_minute(1_709_251_199), "2024-02-29T23-59");
    }

    #[test]
    fn a_load_waits_only_while_this_minutes_file_exists() {
        let dir = tempfile::tempdir().unwrap();
        let chats = dir.path().join(".gemini/tmp/ws/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_486_742);
        assert_eq!(load_wait(dir.path(), id, now), None, "no file");
        std::fs::write(chats.join("session-2026-12-05T16-04-0199a213.jsonl"), "").unwrap();
        assert_eq!(load_wait(dir.path(), id, now), None, "an earlier minute's");
        std::fs::write(chats.join("session-2026-12-05T16-05-0199a213.jsonl"), "").unwrap();
        assert_eq!(
            load_wait(dir.path(), id, now),
            Some(Duration::from_secs(19)),
            "until just past 16:06"
        );
        assert_eq!(load_wait(dir.path(), "short", now), None);
    }
}
