//! Forking a session: Gemini has no fork flag, but `--session-file <file>` imports a recorded
//! session under a new session id (verified against 0.61.0: the new session carries the
//! whole history, is reported in `init`, and can itself be resumed). This module finds the
//! recording of the session to fork.
//!
//! Gemini records a session in `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` as
//! `session-<time>-<first 8 characters of the id>.jsonl`, whose first line is its metadata
//! (`{"sessionId": …}`). One session can have several such files (an imported session keeps
//! both the import and its own recording); like Gemini's own `--resume`, the most recently
//! updated one is taken.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The longest metadata line read from a recording.
const MAX_METADATA: u64 = 1 << 20;

/// The session id on the first line of a recording, if it has one.
fn recorded_id(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file.take(MAX_METADATA))
        .read_line(&mut line)
        .ok()?;
    let metadata: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    metadata
        .get("sessionId")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// Regular files (not symlinks) in `dir`.
fn files_in(dir: &Path) -> impl Iterator<Item = fs::DirEntry> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
}

/// The recording of session `id` under `gemini_dir` (`$GEMINI_CLI_HOME/.gemini`): the most
/// recently modified `tmp/*/chats/session-*-<id8>.jsonl` whose metadata names `id`; `None`
/// when there is none.
pub(crate) fn session_file(gemini_dir: &Path, id: &str) -> Option<PathBuf> {
    let short = id.get(..8)?;
    let suffix = format!("-{short}.jsonl");
    let projects = fs::read_dir(gemini_dir.join("tmp")).ok()?;
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for project in projects.flatten() {
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for entry in files_in(&project.path().join("chats")) {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with("session-") || !name.ends_with(&suffix) {
                continue;
            }
            let path = entry.path();
            if !recorded_id(&path).is_some_and(|got| got.eq_ignore_ascii_case(id)) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if best.as_ref().is_none_or(|(t, _)| modified >= *t) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, path)| path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const ID: &str = "ec2ddec0-fabd-46c8-b7b5-7e29b19a29c5";

    #[test]
    fn finds_the_latest_recording_of_the_session() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(session_file(dir.path(), ID), None);
        let chats = dir.path().join("tmp/work/chats");
        fs::create_dir_all(&chats).unwrap();
        let meta = format!(r#"{{"sessionId":"{ID}","kind":"main"}}"#);
        // Names as gemini 0.61.0 writes them: an import and the session's own recording.
        let import = chats.join("session-1796088318363-ec2ddec0.jsonl");
        let own = chats.join("session-2026-12-01T01-25-ec2ddec0.jsonl");
        fs::write(&own, format!("{meta}\n")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&import, format!("{meta}\n{{\"$set\":{{}}}}\n")).unwrap();
        // Same short id, another session; and a file that is not a recording.
        fs::write(
            chats.join("session-2026-12-01T01-26-ec2ddec0.jsonl"),
            r#"{"sessionId":"ec2ddec0-0000-4000-8000-000000000000"}"#,
        )
        .unwrap();
        fs::write(chats.join("notes-ec2ddec0.jsonl"), &meta).unwrap();
        assert_eq!(session_file(dir.path(), ID), Some(import));
        assert_eq!(session_file(dir.path(), "short"), None);
    }
}
