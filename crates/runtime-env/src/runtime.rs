//! The per-runtime descriptor table: each agent CLI's state variable, config and credential
//! files, API-key variables, keyring use and MCP configuration mechanism.
//!
//! The facts come from the CLIs' sources and documentation as of late 2026; entries marked
//! "unverified" in the field docs are best knowledge, which is why HOME is always namespaced as
//! well as the runtime's own variable.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::policy::{IsolationMode, RuntimeTraits};

/// The agent runtimes this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuntimeKind {
    /// OpenAI Codex CLI (`codex`).
    Codex,
    /// Anthropic Claude Code (`claude`).
    ClaudeCode,
    /// Cursor CLI (`cursor-agent`).
    Cursor,
    /// Tencent CodeBuddy Code (`codebuddy`).
    CodeBuddy,
    /// Google Gemini CLI (`gemini`).
    Gemini,
}

impl RuntimeKind {
    /// Every runtime, in table order.
    pub const ALL: [RuntimeKind; 5] = [
        RuntimeKind::Codex,
        RuntimeKind::ClaudeCode,
        RuntimeKind::Cursor,
        RuntimeKind::CodeBuddy,
        RuntimeKind::Gemini,
    ];

    /// Short name: `codex`, `claude_code`, `cursor`, `codebuddy`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::Codex => "codex",
            RuntimeKind::ClaudeCode => "claude_code",
            RuntimeKind::Cursor => "cursor",
            RuntimeKind::CodeBuddy => "codebuddy",
            RuntimeKind::Gemini => "gemini",
        }
    }

    /// This runtime's row of the descriptor table.
    pub fn descriptor(self) -> &'static RuntimeDescriptor {
        match self {
            RuntimeKind::Codex => &CODEX,
            RuntimeKind::ClaudeCode => &CLAUDE,
            RuntimeKind::Cursor => &CURSOR,
            RuntimeKind::CodeBuddy => &CODEBUDDY,
            RuntimeKind::Gemini => &GEMINI,
        }
    }

    /// The facts the policy check needs.
    pub fn traits(self) -> RuntimeTraits {
        let d = self.descriptor();
        RuntimeTraits {
            name: self.name(),
            supported_modes: d.supported_modes,
            disk_state: true,
        }
    }
}

impl fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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

const fn src(anchor: Anchor, path: &'static str, kind: SourceKind) -> SourceSpec {
    SourceSpec {
        anchor,
        path,
        kind,
        is_dir: false,
    }
}

const fn dir(anchor: Anchor, path: &'static str, kind: SourceKind) -> SourceSpec {
    SourceSpec {
        anchor,
        path,
        kind,
        is_dir: true,
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
}

/// One row of the descriptor table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeDescriptor {
    /// Which runtime.
    pub kind: RuntimeKind,
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
    /// Variables that carry an API key or token for this runtime.
    pub api_key_vars: &'static [&'static str],
    /// Keyring behaviour.
    pub keyring: KeyringUse,
    /// How MCP servers are registered.
    pub mcp: McpMechanism,
    /// Modes the runtime can be hosted in.
    pub supported_modes: &'static [IsolationMode],
}

use Anchor::{Cwd, Home, StateDir, System};
use SourceKind::{Config, Credential, Instructions, Mcp, Policy};

const IN_PROCESS_OR_SUBPROCESS: &[IsolationMode] =
    &[IsolationMode::InProcess, IsolationMode::Subprocess];
const SUBPROCESS_ONLY: &[IsolationMode] = &[IsolationMode::Subprocess];

static CODEX: RuntimeDescriptor = RuntimeDescriptor {
    kind: RuntimeKind::Codex,
    program: "codex",
    state_var: "CODEX_HOME",
    state_subdir: ".codex",
    state_dir_must_exist: true,
    private_subdirs: &[],
    sources: &[
        src(System, "/etc/codex/config.toml", Config),
        src(StateDir, "config.toml", Config),
        dir(StateDir, "rules", Policy),
        src(StateDir, "AGENTS.md", Instructions),
        src(Cwd, ".codex/config.toml", Config),
        src(Cwd, "AGENTS.md", Instructions),
    ],
    credential_files: &[src(StateDir, "auth.json", Credential)],
    api_key_vars: &["CODEX_API_KEY", "OPENAI_API_KEY"],
    keyring: KeyringUse::ConfigSelected {
        file: "config.toml",
        key: "cli_auth_credentials_store",
    },
    mcp: McpMechanism::CodexConfigToml,
    supported_modes: IN_PROCESS_OR_SUBPROCESS,
};

static CLAUDE: RuntimeDescriptor = RuntimeDescriptor {
    kind: RuntimeKind::ClaudeCode,
    program: "claude",
    state_var: "CLAUDE_CONFIG_DIR",
    state_subdir: ".claude",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        src(System, "/etc/claude-code/managed-settings.json", Policy),
        src(StateDir, "settings.json", Config),
        src(StateDir, "CLAUDE.md", Instructions),
        // Global state (user MCP servers, account): inside CLAUDE_CONFIG_DIR when it is set.
        src(StateDir, ".claude.json", Credential),
        src(Cwd, ".claude/settings.json", Config),
        src(Cwd, ".claude/settings.local.json", Config),
        src(Cwd, ".mcp.json", Mcp),
        src(Cwd, "CLAUDE.md", Instructions),
    ],
    credential_files: &[src(StateDir, ".credentials.json", Credential)],
    api_key_vars: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ],
    keyring: KeyringUse::MacOs,
    mcp: McpMechanism::McpConfigFlag,
    supported_modes: IN_PROCESS_OR_SUBPROCESS,
};

static CURSOR: RuntimeDescriptor = RuntimeDescriptor {
    kind: RuntimeKind::Cursor,
    program: "cursor-agent",
    state_var: "CURSOR_CONFIG_DIR",
    state_subdir: ".cursor",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        src(StateDir, "cli-config.json", Config),
        src(StateDir, "mcp.json", Mcp),
        src(Cwd, ".cursor/cli.json", Policy),
        src(Cwd, ".cursor/mcp.json", Mcp),
        dir(Cwd, ".cursor/rules", Instructions),
        src(Cwd, "AGENTS.md", Instructions),
    ],
    credential_files: &[],
    api_key_vars: &["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::ConfigDirMcpJson,
    supported_modes: SUBPROCESS_ONLY,
};

static CODEBUDDY: RuntimeDescriptor = RuntimeDescriptor {
    kind: RuntimeKind::CodeBuddy,
    program: "codebuddy",
    // Unverified: used by Tencent's own adapter but missing from the official variable list.
    state_var: "CODEBUDDY_CONFIG_DIR",
    state_subdir: ".codebuddy",
    state_dir_must_exist: false,
    private_subdirs: &[],
    sources: &[
        src(StateDir, "settings.json", Config),
        // User MCP servers and per-project state, in HOME like Claude's `.claude.json`.
        src(Home, ".codebuddy.json", Credential),
        src(Cwd, ".codebuddy/settings.json", Config),
        src(Cwd, ".codebuddy/settings.local.json", Config),
        src(Cwd, ".mcp.json", Mcp),
    ],
    credential_files: &[],
    api_key_vars: &["CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::McpConfigFlag,
    supported_modes: SUBPROCESS_ONLY,
};

static GEMINI: RuntimeDescriptor = RuntimeDescriptor {
    kind: RuntimeKind::Gemini,
    program: "gemini",
    state_var: "GEMINI_CLI_HOME",
    state_subdir: "",
    state_dir_must_exist: false,
    private_subdirs: &[".gemini"],
    sources: &[
        src(System, "/etc/gemini-cli/settings.json", Config),
        src(StateDir, ".gemini/settings.json", Config),
        dir(StateDir, ".gemini/policies", Policy),
        src(StateDir, ".gemini/GEMINI.md", Instructions),
        src(StateDir, ".gemini/system.md", Instructions),
        src(StateDir, ".gemini/mcp-oauth-tokens.json", Credential),
        src(Cwd, ".gemini/settings.json", Config),
        dir(Cwd, ".gemini/policies", Policy),
        src(Cwd, "GEMINI.md", Instructions),
    ],
    credential_files: &[src(StateDir, ".gemini/oauth_creds.json", Credential)],
    api_key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    keyring: KeyringUse::Possible,
    mcp: McpMechanism::GeminiSettings,
    supported_modes: IN_PROCESS_OR_SUBPROCESS,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let mut vars = std::collections::BTreeSet::new();
        for kind in RuntimeKind::ALL {
            let d = kind.descriptor();
            assert_eq!(d.kind, kind);
            assert!(vars.insert(d.state_var), "duplicate {}", d.state_var);
            for s in d.sources.iter().chain(d.credential_files) {
                match s.anchor {
                    Anchor::System => assert!(s.path.starts_with('/'), "{}", s.path),
                    _ => {
                        assert!(!s.path.starts_with('/'), "{}", s.path);
                        assert!(!s.path.split('/').any(|c| c == ".." || c.is_empty()));
                    }
                }
            }
            for s in d.credential_files {
                assert_eq!(s.kind, SourceKind::Credential);
            }
            assert!(!d.api_key_vars.is_empty());
            for v in d.api_key_vars {
                assert!(
                    crate::child_env::is_credential_var(v),
                    "{v} not in the credential list"
                );
            }
        }
        assert_eq!(RuntimeKind::Codex.descriptor().state_var, "CODEX_HOME");
        assert!(RuntimeKind::Codex.descriptor().state_dir_must_exist);
    }
}
