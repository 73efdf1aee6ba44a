//! The turn's files in `$GEMINI_CLI_HOME/.gemini`: `settings.json` and the instructions file,
//! installed for one turn and put back as they were afterwards.
//!
//! Writes go through runtime-env's config lock (0600, atomic, symlink-safe), held only for the
//! moment of the write; the turn lock ([`crate::lock`]) is what keeps the files one turn's
//! while its process runs. The install-then-restore is driver-cli's [`NamespaceFiles`].

use driver_cli::{CliError, NamespaceFiles};
use runtime_env::{RuntimeEnv, RuntimeKind};
use serde_json::Value;

use crate::settings::{INSTRUCTIONS_FILE, merge};

/// The settings file, relative to `GEMINI_CLI_HOME`.
pub(crate) const SETTINGS: &str = ".gemini/settings.json";

/// Installs one turn's `settings.json` (`settings` merged over the namespace's own, see
/// [`merge`]) and `instructions` (or no instructions file), remembering what was there;
/// restoring (or dropping) the result puts back the previous bytes, or no file.
///
/// # Errors
/// [`CliError::Files`] or [`CliError::Io`] when a file cannot be read, written or removed;
/// whatever was already changed is put back.
pub(crate) fn install<'e>(
    env: &'e RuntimeEnv,
    settings: Value,
    instructions: Option<&str>,
) -> Result<NamespaceFiles<'e>, CliError> {
    let instructions_path = format!(".gemini/{INSTRUCTIONS_FILE}");
    let paths = [SETTINGS, instructions_path.as_str()];
    NamespaceFiles::install(env, RuntimeKind::Gemini, &paths, |previous| {
        let merged = merge(previous.first().and_then(Option::as_deref), settings);
        vec![
            Some(merged.to_string().into_bytes()),
            instructions.map(|text| text.as_bytes().to_vec()),
        ]
    })
}
