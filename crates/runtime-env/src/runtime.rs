//! [`RuntimeDescriptor`]: what this crate must know about one agent runtime (its state
//! variable, config and credential files, API-key variables, keyring use and MCP mechanism),
//! and the checks every descriptor passes before an environment uses it.
//!
//! The crate holds no list of runtimes: each driver crate states its runtime's descriptor and
//! the host names the runtimes an environment serves ([`RuntimeEnvBuilder::runtimes`]). A
//! descriptor's fields are the runtime's documented behaviour; where a driver marks one
//! "unverified", HOME is namespaced as well as the state variable, so a wrong guess stays
//! inside the namespace.
//!
//! [`RuntimeEnvBuilder::runtimes`]: crate::RuntimeEnvBuilder::runtimes

use serde::{Deserialize, Serialize};

use crate::child_env::{self, XDG_SEARCH_DIRS};
use crate::error::Error;
use crate::policy::{IsolationMode, RuntimeTraits};
use crate::runtime_env::LAYOUT_VARS;

/// The directory a [`SourceSpec`] path is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Anchor {
    /// The runtime's state directory (the value of its state variable).
    StateDir,
    /// The runtime's HOME.
    Home,
    /// The working directory (the project).
    Cwd,
    /// An absolute, machine-wide path (the path itself is absolute).
    System,
}

/// What a source contributes to the runtime's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// Settings: model, approvals, sandbox, providers.
    Config,
    /// Policy or permission rules.
    Policy,
    /// Instructions injected into the system prompt.
    Instructions,
    /// MCP server registrations.
    Mcp,
    /// Credentials or account state; recorded by presence only, never read or hashed.
    Credential,
}

/// One implicit input of a runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceSpec {
    /// What `path` is relative to.
    pub anchor: Anchor,
    /// Relative path (`/`-separated), or an absolute path when `anchor` is [`Anchor::System`].
    pub path: &'static str,
    /// What the source contributes.
    pub kind: SourceKind,
    /// Whether the source is a directory of files (hashed as a sorted recursive listing).
    pub is_dir: bool,
}

impl SourceSpec {
    /// A file source.
    pub const fn file(anchor: Anchor, path: &'static str, kind: SourceKind) -> Self {
        Self {
            anchor,
            path,
            kind,
            is_dir: false,
        }
    }

    /// A directory source (hashed as a sorted recursive listing).
    pub const fn dir(anchor: Anchor, path: &'static str, kind: SourceKind) -> Self {
        Self {
            anchor,
            path,
            kind,
            is_dir: true,
        }
    }
}

/// Where a runtime may keep credentials outside files this crate can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyringUse {
    /// Never: file or environment only.
    Never,
    /// On macOS the OAuth credentials live in the login Keychain.
    MacOs,
    /// Selected by a top-level `key = "keyring" | "auto"` line in a config file under the state
    /// directory (Codex: `cli_auth_credentials_store` in `config.toml`).
    ConfigSelected {
        /// Config file, relative to the state directory.
        file: &'static str,
        /// Top-level key that selects the store.
        key: &'static str,
    },
    /// The CLI may use an OS keyring; file locations are not known, so "not logged in" can
    /// never be concluded from the file system alone.
    Possible,
}

/// How a host registers MCP servers with the runtime.
///
/// Descriptive: this crate never branches on it, it tells a host (and `agentctl`) which of the
/// known mechanisms a runtime uses. A runtime with a new mechanism adds a variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpMechanism {
    /// `[mcp_servers.<name>]` tables in `$CODEX_HOME/config.toml`, or per run with
    /// `-c mcp_servers.<name>.<field>=…`; bearer tokens by `bearer_token_env_var = "VAR"`.
    CodexConfigToml,
    /// `--mcp-config <file> --strict-mcp-config` with `{"mcpServers": {…}}`; an HTTP entry needs
    /// `"type": "http"`; headers expand `${VAR}`.
    McpConfigFlag,
    /// `mcp.json` in the runtime's config directory, `{"mcpServers": {…}}`, headers expand
    /// `${env:VAR}`; headless runs need `--approve-mcps`.
    ConfigDirMcpJson,
    /// `mcpServers` in `.gemini/settings.json`; `httpUrl` for streamable HTTP; strings expand
    /// `$VAR` and `${VAR}`.
    GeminiSettings,
    /// With each request, in process: nothing is written for the runtime (the SDK's
    /// reference runtime).
    InRequest,
}

/// What this crate must know about one agent runtime. Each driver crate states its runtime's
/// descriptor as a `static`; an environment serves the descriptors it is given.
///
/// Every field is a fact the runtime's author states: the struct has no defaults and no
/// builder, so a new runtime cannot inherit a wrong guess about where its credentials live.
/// An environment checks each descriptor ([`RuntimeDescriptor::validate`]) before it creates
/// anything.
///
/// ```
/// use runtime_env::{Anchor, IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, SourceKind, SourceSpec};
///
/// static MY_CLI: RuntimeDescriptor = RuntimeDescriptor {
///     name: "my_cli",
///     program: "my-cli",
///     state_var: "MY_CLI_HOME",
///     state_subdir: ".my-cli",
///     state_dir_must_exist: false,
///     private_subdirs: &[],
///     sources: &[SourceSpec::file(Anchor::StateDir, "config.json", SourceKind::Config)],
///     credential_files: &[SourceSpec::file(Anchor::StateDir, "auth.json", SourceKind::Credential)],
///     api_key_vars: &["MY_CLI_API_KEY"],
///     endpoint_vars: &[],
///     keyring: KeyringUse::Never,
///     mcp: McpMechanism::McpConfigFlag,
///     supported_modes: &[IsolationMode::Subprocess],
/// };
/// assert!(MY_CLI.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeDescriptor {
    /// Short name: `[a-z][a-z0-9_]*`, at most 64 bytes (`codex`, `claude_code`). Auth status,
    /// snapshots and summaries name the runtime by it.
    pub name: &'static str,
    /// Program name on PATH.
    pub program: &'static str,
    /// The variable that relocates the runtime's state directory.
    pub state_var: &'static str,
    /// The state directory relative to HOME in namespaced layouts (`""` means HOME itself).
    pub state_subdir: &'static str,
    /// Whether the runtime refuses a state variable naming a missing directory (Codex does).
    pub state_dir_must_exist: bool,
    /// Subdirectories of the state directory created 0700 up front, so the runtime does not
    /// create them with its own, looser mode.
    pub private_subdirs: &'static [&'static str],
    /// Config, policy, instruction and MCP files the runtime reads implicitly.
    pub sources: &'static [SourceSpec],
    /// Files whose presence shows stored login credentials. Never read.
    pub credential_files: &'static [SourceSpec],
    /// Variables that carry an API key or token for this runtime; each must be a credential
    /// variable ([`is_credential_var`](crate::is_credential_var)).
    pub api_key_vars: &'static [&'static str],
    /// Variables that name a network endpoint the runtime sends its traffic (and its model
    /// key) to, beyond the generic `*_BASE_URL` and proxy variables: for example
    /// `CODEBUDDY_INTERNET_ENVIRONMENT`. A request may not bind them
    /// ([`refused_request_var`](crate::refused_request_var)), and an agent's endpoint policy
    /// checks their values ([`is_endpoint_var`](crate::is_endpoint_var)).
    pub endpoint_vars: &'static [&'static str],
    /// Keyring behaviour.
    pub keyring: KeyringUse,
    /// How MCP servers are registered.
    pub mcp: McpMechanism,
    /// Modes the runtime can be hosted in.
    pub supported_modes: &'static [IsolationMode],
}

/// Longest [`RuntimeDescriptor::name`].
const MAX_NAME_LEN: usize = 64;

impl RuntimeDescriptor {
    /// The facts the policy check needs.
    pub fn traits(&self) -> RuntimeTraits {
        RuntimeTraits {
            name: self.name,
            supported_modes: self.supported_modes,
            disk_state: true,
        }
    }

    /// Checks that the descriptor can be used safely: a well-formed name; a state variable that
    /// is a valid name, not one the layout sets itself and not a credential; plain relative
    /// paths (absolute ones only for [`Anchor::System`]); credential files of kind
    /// [`SourceKind::Credential`]; API-key variables that are credential variables (so they are
    /// never copied from the host nor passed as plain variables); endpoint variables that are
    /// valid names and neither credentials nor the state variable; and at least one mode.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDescriptor`] naming the first rule broken.
    pub fn validate(&self) -> Result<(), Error> {
        let fail = |reason: &'static str| {
            Err(Error::InvalidDescriptor {
                runtime: self.name,
                reason,
            })
        };
        let mut name = self.name.bytes();
        let name_ok = matches!(name.next(), Some(b'a'..=b'z'))
            && name.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
            && self.name.len() <= MAX_NAME_LEN;
        if !name_ok {
            return fail("the name must be [a-z][a-z0-9_]*, at most 64 bytes");
        }
        if self.program.is_empty() {
            return fail("the program is empty");
        }
        if !child_env::is_valid_var_name(self.state_var)
            || LAYOUT_VARS.iter().any(|(v, _)| *v == self.state_var)
            || XDG_SEARCH_DIRS.iter().any(|(v, _)| *v == self.state_var)
            || child_env::is_credential_var(self.state_var)
        {
            return fail("the state variable is invalid, set by the layout, or a credential");
        }
        if !self.state_subdir.is_empty() && !is_plain_relative(self.state_subdir) {
            return fail("the state subdirectory is not a plain relative path");
        }
        if !self.private_subdirs.iter().all(|d| is_plain_relative(d)) {
            return fail("a private subdirectory is not a plain relative path");
        }
        for spec in self.sources.iter().chain(self.credential_files) {
            let ok = match spec.anchor {
                Anchor::System => spec.path.starts_with('/') && is_plain_relative(&spec.path[1..]),
                _ => is_plain_relative(spec.path),
            };
            if !ok {
                return fail("a source path is not plain (relative, or absolute for System)");
            }
        }
        if self
            .credential_files
            .iter()
            .any(|s| s.kind != SourceKind::Credential)
        {
            return fail("a credential file is not of kind Credential");
        }
        if !self
            .api_key_vars
            .iter()
            .all(|v| child_env::is_valid_var_name(v) && child_env::is_credential_var(v))
        {
            return fail("an API-key variable is not a credential variable");
        }
        if !self.endpoint_vars.iter().all(|v| {
            child_env::is_valid_var_name(v)
                && !child_env::is_credential_var(v)
                && *v != self.state_var
        }) {
            return fail("an endpoint variable is invalid, a credential, or the state variable");
        }
        if let KeyringUse::ConfigSelected { file, key } = self.keyring
            && (!is_plain_relative(file) || key.is_empty())
        {
            return fail("the keyring config file or key is invalid");
        }
        if self.supported_modes.is_empty() {
            return fail("no isolation mode is supported");
        }
        Ok(())
    }
}

/// A non-empty `/`-separated relative path without empty, `.` or `..` components, backslashes
/// or NUL.
pub(crate) fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', '\0']))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
pub(crate) mod tests {
    use super::*;

    /// A well-formed descriptor the unit tests vary.
    pub(crate) const GOOD: RuntimeDescriptor = RuntimeDescriptor {
        name: "tool_2",
        program: "tool",
        state_var: "TOOL_HOME",
        state_subdir: ".config/tool",
        state_dir_must_exist: false,
        private_subdirs: &["cache"],
        sources: &[
            SourceSpec::file(Anchor::System, "/etc/tool/config.json", SourceKind::Config),
            SourceSpec::file(Anchor::StateDir, "config.toml", SourceKind::Config),
            SourceSpec::dir(Anchor::Cwd, ".tool/rules", SourceKind::Policy),
        ],
        credential_files: &[SourceSpec::file(
            Anchor::StateDir,
            "auth.json",
            SourceKind::Credential,
        )],
        api_key_vars: &["TOOL_API_KEY"],
        endpoint_vars: &[],
        keyring: KeyringUse::ConfigSelected {
            file: "config.toml",
            key: "store",
        },
        mcp: McpMechanism::McpConfigFlag,
        supported_modes: &[IsolationMode::Subprocess],
    };

    const UP: &[SourceSpec] = &[SourceSpec::file(Anchor::Cwd, "../x", SourceKind::Config)];
    const RELATIVE_SYSTEM: &[SourceSpec] = &[SourceSpec::file(
        Anchor::System,
        "etc/x",
        SourceKind::Config,
    )];
    const NOT_CREDENTIAL: &[SourceSpec] =
        &[SourceSpec::file(Anchor::StateDir, "a", SourceKind::Config)];

    #[test]
    fn a_well_formed_descriptor_passes() {
        GOOD.validate().unwrap();
        let home_itself = RuntimeDescriptor {
            state_subdir: "",
            ..GOOD
        };
        home_itself.validate().unwrap();
        assert_eq!(GOOD.traits().name, "tool_2");
    }

    #[test]
    fn every_rule_can_fail() {
        let cases = [
            RuntimeDescriptor { name: "", ..GOOD },
            RuntimeDescriptor {
                name: "Tool",
                ..GOOD
            },
            RuntimeDescriptor {
                name: "claude-code",
                ..GOOD
            },
            RuntimeDescriptor { name: "_x", ..GOOD },
            RuntimeDescriptor {
                program: "",
                ..GOOD
            },
            RuntimeDescriptor {
                state_var: "HOME",
                ..GOOD
            },
            RuntimeDescriptor {
                state_var: "XDG_DATA_DIRS",
                ..GOOD
            },
            RuntimeDescriptor {
                state_var: "TOOL_TOKEN",
                ..GOOD
            },
            RuntimeDescriptor {
                state_var: "BAD-NAME",
                ..GOOD
            },
            RuntimeDescriptor {
                state_subdir: "/abs",
                ..GOOD
            },
            RuntimeDescriptor {
                state_subdir: "a/../b",
                ..GOOD
            },
            RuntimeDescriptor {
                private_subdirs: &["a//b"],
                ..GOOD
            },
            RuntimeDescriptor {
                sources: UP,
                ..GOOD
            },
            RuntimeDescriptor {
                sources: RELATIVE_SYSTEM,
                ..GOOD
            },
            RuntimeDescriptor {
                credential_files: NOT_CREDENTIAL,
                ..GOOD
            },
            RuntimeDescriptor {
                api_key_vars: &["TOOL_MODEL"],
                endpoint_vars: &[],
                ..GOOD
            },
            RuntimeDescriptor {
                keyring: KeyringUse::ConfigSelected {
                    file: "..",
                    key: "k",
                },
                ..GOOD
            },
            RuntimeDescriptor {
                supported_modes: &[],
                ..GOOD
            },
        ];
        for case in cases {
            let err = case.validate().unwrap_err();
            assert!(
                matches!(err, Error::InvalidDescriptor { .. }),
                "{case:?}: {err}"
            );
        }
    }
}
