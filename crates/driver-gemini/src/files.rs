//! The turn's files in `$GEMINI_CLI_HOME/.gemini`: `settings.json` and the instructions file,
//! installed for one turn and put back as they were afterwards.
//!
//! Writes go through runtime-env's config lock (0600, atomic, symlink-safe), held only for the
//! moment of the write; the turn lock ([`crate::lock`]) is what keeps the files one turn's
//! while its process runs.

use std::io;

use driver_cli::CliError;
use runtime_env::{RuntimeEnv, RuntimeKind};
use serde_json::Value;

use crate::settings::{INSTRUCTIONS_FILE, merge};

/// The settings file, relative to `GEMINI_CLI_HOME`.
pub(crate) const SETTINGS: &str = ".gemini/settings.json";

/// The instructions file, relative to `GEMINI_CLI_HOME`.
fn instructions_path() -> String {
    format!(".gemini/{INSTRUCTIONS_FILE}")
}

/// One turn's `settings.json` (the driver's settings over the namespace's own) and
/// instructions. [`restore`](Self::restore), or dropping it, puts back what was there before
/// the turn: the previous bytes, or no file.
#[derive(Debug)]
pub(crate) struct TurnFiles<'e> {
    env: &'e RuntimeEnv,
    previous: [(String, Option<Vec<u8>>); 2],
    restored: bool,
}

impl<'e> TurnFiles<'e> {
    /// Installs `settings` (merged over the namespace's own, see [`merge`]) and
    /// `instructions` (or no instructions file), remembering what was there.
    ///
    /// # Errors
    /// [`CliError::Files`] or [`CliError::Io`] when a file cannot be read, written or
    /// removed; whatever was already changed is put back.
    pub(crate) fn install(
        env: &'e RuntimeEnv,
        settings: Value,
        instructions: Option<&str>,
    ) -> Result<Self, CliError> {
        let (previous, written) = {
            let lock = env.lock_config()?;
            let read = |relative: String| -> Result<_, CliError> {
                let bytes = lock.read(RuntimeKind::Gemini, &relative)?;
                Ok((relative, bytes))
            };
            let previous = [read(SETTINGS.to_owned())?, read(instructions_path())?];
            let merged = merge(previous[0].1.as_deref(), settings);
            let written = lock
                .write(RuntimeKind::Gemini, SETTINGS, merged.to_string().as_bytes())
                .map_err(CliError::from)
                .and_then(|_| match instructions {
                    Some(text) => lock
                        .write(RuntimeKind::Gemini, &instructions_path(), text.as_bytes())
                        .map(drop)
                        .map_err(CliError::from),
                    None => remove(env, &instructions_path()),
                });
            (previous, written)
        };
        // Built after the config lock is released: on failure, dropping it takes the lock
        // again to put back what was written.
        let files = Self {
            env,
            previous,
            restored: false,
        };
        written?;
        Ok(files)
    }

    /// Puts back what was there before the turn.
    ///
    /// # Errors
    /// [`CliError::Files`] or [`CliError::Io`] when a file cannot be written or removed.
    pub(crate) fn restore(mut self) -> Result<(), CliError> {
        self.restored = true;
        self.put_back()
    }

    fn put_back(&self) -> Result<(), CliError> {
        let lock = self.env.lock_config()?;
        for (relative, bytes) in &self.previous {
            match bytes {
                Some(bytes) => {
                    lock.write(RuntimeKind::Gemini, relative, bytes)?;
                }
                None => remove(self.env, relative)?,
            }
        }
        Ok(())
    }
}

impl Drop for TurnFiles<'_> {
    fn drop(&mut self) {
        if !self.restored
            && let Err(e) = self.put_back()
        {
            tracing::warn!(error = %e, "could not restore the namespace's Gemini settings");
        }
    }
}

/// Removes a file under `GEMINI_CLI_HOME`; a missing file is fine.
fn remove(env: &RuntimeEnv, relative: &str) -> Result<(), CliError> {
    let path = env.state_dir(RuntimeKind::Gemini).join(relative);
    match std::fs::remove_file(path) {
        Err(source) if source.kind() != io::ErrorKind::NotFound => Err(CliError::Io {
            op: "remove a per-turn Gemini file",
            source,
        }),
        _ => Ok(()),
    }
}
