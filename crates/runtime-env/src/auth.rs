//! Auth status of a runtime in one environment, found without reading any secret.
//!
//! Evidence, in order of precedence:
//!
//! 1. one of the runtime's API-key variables is present in the child environment (only the
//!    name is looked at) → logged in, [`AuthModel::ApiKeyVar`];
//! 2. one of its credential files exists as a non-empty regular file (`stat` only) → logged in,
//!    [`AuthModel::OauthFile`];
//! 3. the runtime may keep credentials in a keyring this crate cannot see → [`LoggedIn::Unknown`],
//!    [`AuthModel::Keyring`];
//! 4. otherwise → not logged in.
//!
//! For Codex, step 3 reads the top-level `cli_auth_credentials_store` setting of
//! `config.toml` (a config file, not a credential file). Credential files are never opened.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use serde::{Deserialize, Serialize};

use crate::child_env::ChildEnv;
use crate::paths::{Anchors, join_rel};
use crate::runtime::KeyringUse;
use crate::secure_fs;

/// Whether the runtime is logged in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LoggedIn {
    /// Credentials are present.
    Yes,
    /// No credentials anywhere this crate can see, and the runtime uses no keyring.
    No,
    /// Credentials may live in a keyring.
    Unknown,
}

/// How the runtime authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthModel {
    /// A credential file written by the runtime's login (OAuth tokens or a stored key).
    OauthFile,
    /// An API key or token passed in an environment variable.
    ApiKeyVar,
    /// An OS keyring or Keychain.
    Keyring,
}

/// What was found about one credential file (never its content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CredentialFileStatus {
    /// Placeholder path, e.g. `${HOME}/.codex/auth.json`.
    pub path: String,
    /// Whether a non-empty regular file exists there.
    pub present: bool,
    /// For a present file: whether it is owned by the current user and grants nothing to group
    /// or others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private: Option<bool>,
}

/// Auth status of one runtime in one environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuthStatus {
    /// The runtime's name ([`RuntimeDescriptor::name`](crate::RuntimeDescriptor::name)).
    pub runtime: &'static str,
    /// Whether it is logged in.
    pub logged_in: LoggedIn,
    /// How it authenticates, when known.
    pub auth_model: Option<AuthModel>,
    /// A safe label of the credential in use: a variable name (`env:OPENAI_API_KEY`) or a
    /// placeholder path (`file:${HOME}/.codex/auth.json`). Never an account identity or a value.
    pub account_label: Option<String>,
    /// Names of the runtime's API-key variables present in the child environment.
    pub api_key_vars: Vec<String>,
    /// The runtime's credential files.
    pub credential_files: Vec<CredentialFileStatus>,
    /// Problems worth showing to an operator (e.g. a credential file readable by others).
    pub warnings: Vec<String>,
}

/// Largest config file read to find the keyring setting.
const MAX_CONFIG_READ: u64 = 1 << 20;

pub(crate) fn detect(anchors: &Anchors<'_>, env: &ChildEnv) -> AuthStatus {
    let d = anchors.runtime;
    let api_key_vars: Vec<String> = d
        .api_key_vars
        .iter()
        .filter(|v| env.contains(v))
        .map(|v| (*v).to_owned())
        .collect();
    let uid = secure_fs::euid();
    let mut warnings = Vec::new();
    let credential_files: Vec<CredentialFileStatus> = d
        .credential_files
        .iter()
        .map(|spec| {
            let (path, shown) = anchors.resolve(spec);
            match fs::metadata(&path) {
                Ok(meta) if meta.is_file() && meta.len() > 0 => {
                    let private = meta.uid() == uid && meta.mode() & 0o077 == 0;
                    if !private {
                        warnings.push(format!(
                            "credential file {shown} is not private (mode {:04o}, owner uid {})",
                            meta.mode() & 0o7777,
                            meta.uid()
                        ));
                    }
                    CredentialFileStatus {
                        path: shown,
                        present: true,
                        private: Some(private),
                    }
                }
                _ => CredentialFileStatus {
                    path: shown,
                    present: false,
                    private: None,
                },
            }
        })
        .collect();

    let (logged_in, auth_model, account_label) = if let Some(var) = api_key_vars.first() {
        (
            LoggedIn::Yes,
            Some(AuthModel::ApiKeyVar),
            Some(format!("env:{var}")),
        )
    } else if let Some(file) = credential_files.iter().find(|f| f.present) {
        (
            LoggedIn::Yes,
            Some(AuthModel::OauthFile),
            Some(format!("file:{}", file.path)),
        )
    } else if keyring_possible(anchors) {
        (LoggedIn::Unknown, Some(AuthModel::Keyring), None)
    } else {
        (LoggedIn::No, None, None)
    };

    AuthStatus {
        runtime: d.name,
        logged_in,
        auth_model,
        account_label,
        api_key_vars,
        credential_files,
        warnings,
    }
}

fn keyring_possible(anchors: &Anchors<'_>) -> bool {
    match anchors.runtime.keyring {
        KeyringUse::Never => false,
        KeyringUse::MacOs => cfg!(target_os = "macos"),
        KeyringUse::Possible => true,
        KeyringUse::ConfigSelected { file, key } => {
            let path = join_rel(anchors.state_dir, file);
            read_small_config(&path).is_some_and(|text| selects_keyring(&text, key))
        }
    }
}

/// Reads a regular config file of at most [`MAX_CONFIG_READ`] bytes (never a FIFO or device).
fn read_small_config(path: &std::path::Path) -> Option<String> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(secure_fs::open_flags())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_READ {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_CONFIG_READ).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether a top-level TOML `key = "keyring"` or `key = "auto"` line appears before the first
/// table header.
fn selects_keyring(toml: &str, key: &str) -> bool {
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        let Some(rest) = line.strip_prefix(key) else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.split('#').next().unwrap_or("").trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        return value == "keyring" || value == "auto";
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyring_setting() {
        let key = "cli_auth_credentials_store";
        assert!(selects_keyring(
            "cli_auth_credentials_store = \"keyring\"\n",
            key
        ));
        assert!(selects_keyring(
            "model='x'\ncli_auth_credentials_store='auto' # c\n",
            key
        ));
        assert!(!selects_keyring(
            "cli_auth_credentials_store = \"file\"\n",
            key
        ));
        assert!(!selects_keyring(
            "[profiles.x]\ncli_auth_credentials_store = \"keyring\"\n",
            key
        ));
        assert!(!selects_keyring(
            "cli_auth_credentials_store_x = \"keyring\"\n",
            key
        ));
    }
}
