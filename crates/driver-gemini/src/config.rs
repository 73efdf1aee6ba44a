//! How config reaches Gemini: the `settings.json` of one turn (the request's MCP servers,
//! the auth type, the privacy and session-retention switches, the instructions file), laid
//! over the namespace's own and installed as [`ConfigFiles::Namespace`] files. Only
//! environment-variable *names* are written, never values.
//!
//! Gemini takes MCP servers, the auth type and the privacy switch only from settings files,
//! and the one the namespace can own is `$GEMINI_CLI_HOME/.gemini/settings.json`. A per-run
//! file does not work: `GEMINI_CLI_SYSTEM_SETTINGS_PATH` is honoured only for a file owned by
//! root in directories owned by root that nobody else can write (verified against 0.61.0,
//! which otherwise skips it with a "Security Warning"). So the shared driver installs the
//! turn's files under the namespace's turn lock and puts them back when the turn ends:
//! concurrent turns of one namespace run one after the other, and none sees another's
//! servers.
//!
//! Gemini expands `$VAR`, `${VAR}` and `${VAR:-default}` in every string value of the file
//! from its own environment (verified against 0.61.0), so a request value holding a `$` is
//! refused: it could pull another variable (the API key) into a URL or header.

use std::collections::BTreeMap;

use driver_cli::{ConfigFiles, EnvRefs, McpEntry, McpRefError, NamespaceConfig, mcp_servers};
use run_service::McpServer;
use serde_json::{Map, Value, json};

/// The settings file, relative to `GEMINI_CLI_HOME` (the runtime's state directory).
const SETTINGS_PATH: &str = ".gemini/settings.json";

/// The instructions file, in `$GEMINI_CLI_HOME/.gemini/` next to `settings.json`; Gemini
/// loads it as global context (`context.fileName`) into the system instruction.
const INSTRUCTIONS_FILE: &str = "sdk-instructions.md";

/// Gemini's own context file name, kept in `context.fileName` when the driver adds its own.
const DEFAULT_CONTEXT_FILE: &str = "GEMINI.md";

/// Why a request cannot be written as Gemini settings. Names a field and a rule, never a
/// value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SettingsError {
    /// A name, a value or a header breaks the shared MCP rules; for Gemini an expansion is
    /// any `$`.
    #[error(transparent)]
    Mcp(#[from] McpRefError),
}

impl SettingsError {
    /// The rule broken, for [`driver_spi::ConfigError::invalid`].
    pub(crate) fn rule(&self) -> &'static str {
        match self {
            Self::Mcp(err) => err.rule(),
        }
    }
}

/// What one turn's settings say besides the MCP servers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SettingsPlan<'a> {
    /// `security.auth.selectedType`.
    pub(crate) auth_type: Option<&'a str>,
    /// `privacy.usageStatisticsEnabled: false`.
    pub(crate) offline: bool,
    /// `"trust": true` on every server.
    pub(crate) trust: bool,
    /// Whether [`INSTRUCTIONS_FILE`] is listed in `context.fileName`.
    pub(crate) instructions: bool,
}

/// Gemini's `${VAR}` references; any `$` in a plain value is refused (see the module docs).
const REFS: EnvRefs = EnvRefs::new("${", "}", "$");

/// One `mcpServers` entry.
fn server_entry(
    server: &McpServer,
    secret_env: &BTreeMap<&str, Vec<&str>>,
    trust: bool,
) -> Result<Map<String, Value>, SettingsError> {
    let entry = REFS.entry(server, secret_env)?;
    // Gemini's keys: `httpUrl` is streamable HTTP, `url` is SSE.
    let url_key = if matches!(entry, McpEntry::Http { sse: true, .. }) {
        "url"
    } else {
        "httpUrl"
    };
    let mut entry = entry.into_fields(url_key);
    if trust {
        entry.insert("trust".to_owned(), Value::Bool(true));
    }
    Ok(entry)
}

/// The whole `settings.json` of a turn.
///
/// Gemini keeps its sessions only 30 days by default and deletes older ones at startup;
/// `general.sessionRetention.enabled: false` leaves their lifetime to the host, whose
/// Threads may outlive that.
pub(crate) fn settings(
    servers: &[McpServer],
    secret_env: &BTreeMap<&str, Vec<&str>>,
    plan: SettingsPlan<'_>,
) -> Result<Value, SettingsError> {
    let entries = mcp_servers(servers, |server| {
        server_entry(server, secret_env, plan.trust)
    })?;
    let mut root = Map::new();
    root.insert(
        "general".to_owned(),
        json!({"sessionRetention": {"enabled": false}}),
    );
    root.insert("mcpServers".to_owned(), Value::Object(entries));
    if let Some(auth) = plan.auth_type {
        root.insert(
            "security".to_owned(),
            json!({"auth": {"selectedType": auth}}),
        );
    }
    if plan.offline {
        root.insert(
            "privacy".to_owned(),
            json!({"usageStatisticsEnabled": false}),
        );
    }
    if plan.instructions {
        root.insert(
            "context".to_owned(),
            json!({"fileName": [DEFAULT_CONTEXT_FILE, INSTRUCTIONS_FILE]}),
        );
    }
    Ok(Value::Object(root))
}

/// The turn's namespace files: `settings` merged over the namespace's own `settings.json`
/// (see [`merge`]), and `instructions` as the instructions file (or no such file). The
/// shared driver installs them under the turn lock and puts back what was there.
pub(crate) fn namespace_files(settings: Value, instructions: Option<String>) -> ConfigFiles {
    ConfigFiles::Namespace(NamespaceConfig {
        paths: vec![
            SETTINGS_PATH.to_owned(),
            format!(".gemini/{INSTRUCTIONS_FILE}"),
        ],
        contents: Box::new(move |previous| {
            let merged = merge(previous.first().and_then(Option::as_deref), settings);
            vec![
                Some(merged.to_string().into_bytes()),
                instructions.map(String::into_bytes),
            ]
        }),
    })
}

/// `ours` laid over the namespace's own settings (`previous`, the file as it was before the
/// turn): objects are merged key by key, everything else (arrays included) is replaced, and
/// `mcpServers` is replaced whole, so only the request's servers are configured. A previous
/// file that is not a plain JSON object (Gemini also accepts comments) is left out for the
/// turn.
fn merge(previous: Option<&[u8]>, ours: Value) -> Value {
    let base = previous.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
    let (Some(Value::Object(mut base)), Value::Object(ours)) = (base, &ours) else {
        return ours;
    };
    for (key, value) in ours {
        match base.get_mut(key) {
            Some(existing) if key != "mcpServers" => overlay(existing, value.clone()),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(base)
}

fn overlay(base: &mut Value, ours: Value) {
    match (base, ours) {
        (Value::Object(base), Value::Object(ours)) => {
            for (key, value) in ours {
                match base.get_mut(&key) {
                    Some(existing) => overlay(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, ours) => *base = ours,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn plan() -> SettingsPlan<'static> {
        SettingsPlan {
            auth_type: Some("gemini-api-key"),
            offline: true,
            trust: true,
            instructions: false,
        }
    }

    #[test]
    fn http_sse_and_stdio_servers_in_geminis_dialect() {
        let http = McpServer::streamable_http("agent-ui", "http://127.0.0.1:4101/mcp")
            .with_bearer_token_env("UI_TOKEN")
            .with_header("X-Tenant", "t1")
            .with_secret_header("X-Api-Key", "UI_KEY");
        let sse = McpServer::sse("legacy", "http://127.0.0.1:4102/sse")
            .with_secret_header("Cookie", "LEGACY_COOKIE");
        let stdio = McpServer::stdio("files", "/usr/bin/files-mcp")
            .with_args(["--root", "/srv"])
            .with_env("MODE", "ro");
        let secrets = BTreeMap::from([("files", vec!["FILES_TOKEN"])]);
        let value = settings(&[http, sse, stdio], &secrets, plan()).unwrap();
        assert_eq!(
            value,
            json!({
                "general": {"sessionRetention": {"enabled": false}},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": false},
                "mcpServers": {
                    "agent-ui": {
                        "httpUrl": "http://127.0.0.1:4101/mcp",
                        "headers": {
                            "X-Tenant": "t1",
                            "Authorization": "Bearer ${UI_TOKEN}",
                            "X-Api-Key": "${UI_KEY}"
                        },
                        "trust": true
                    },
                    "legacy": {
                        "url": "http://127.0.0.1:4102/sse",
                        "headers": {"Cookie": "${LEGACY_COOKIE}"},
                        "trust": true
                    },
                    "files": {
                        "command": "/usr/bin/files-mcp", "args": ["--root", "/srv"],
                        "env": {"MODE": "ro", "FILES_TOKEN": "${FILES_TOKEN}"}, "trust": true
                    }
                }
            })
        );
    }

    #[test]
    fn optional_sections_follow_the_plan() {
        let none = BTreeMap::new();
        let bare = SettingsPlan {
            auth_type: None,
            offline: false,
            trust: false,
            instructions: true,
        };
        let s = McpServer::streamable_http("a", "http://x");
        let value = settings(&[s], &none, bare).unwrap();
        assert!(value.get("security").is_none() && value.get("privacy").is_none());
        assert!(value["mcpServers"]["a"].get("trust").is_none());
        assert_eq!(
            value["context"]["fileName"],
            json!(["GEMINI.md", INSTRUCTIONS_FILE])
        );
    }

    #[test]
    fn the_namespaces_own_settings_are_kept_under_ours() {
        let previous = json!({
            "ui": {"theme": "Dracula"},
            "general": {"preferredEditor": "vim", "sessionRetention": {"enabled": true, "maxAge": "7d"}},
            "privacy": {"usageStatisticsEnabled": true},
            "mcpServers": {"old": {"httpUrl": "http://old"}},
            "context": {"fileName": ["AGENTS.md"]},
        });
        let ours = settings(
            &[McpServer::streamable_http("a", "http://x")],
            &BTreeMap::new(),
            SettingsPlan {
                instructions: true,
                ..plan()
            },
        )
        .unwrap();
        let merged = merge(Some(previous.to_string().as_bytes()), ours.clone());
        assert_eq!(merged["ui"]["theme"], "Dracula");
        assert_eq!(
            merged["general"],
            json!({"preferredEditor": "vim", "sessionRetention": {"enabled": false, "maxAge": "7d"}})
        );
        assert_eq!(merged["privacy"]["usageStatisticsEnabled"], false);
        assert_eq!(
            merged["mcpServers"], ours["mcpServers"],
            "servers replaced whole"
        );
        assert_eq!(merged["context"], ours["context"]);
        assert_eq!(merged["security"], ours["security"]);
        // No file, or one that is not a JSON object: ours alone.
        assert_eq!(merge(None, ours.clone()), ours);
        assert_eq!(merge(Some(b"// comment\n{}"), ours.clone()), ours);
        assert_eq!(merge(Some(b"[1]"), ours.clone()), ours);
    }

    #[test]
    fn expansions_names_and_plain_authorization_are_refused() {
        let none = BTreeMap::new();
        let p = plan();
        let refused = |s: McpServer| settings(&[s], &none, p).unwrap_err();
        // Bare `$VAR` expands in Gemini too, not only `${VAR}`.
        assert_eq!(
            refused(McpServer::streamable_http("a", "http://x/$GEMINI_API_KEY")),
            SettingsError::Mcp(McpRefError::Expansion { field: "url" })
        );
        assert_eq!(
            refused(McpServer::streamable_http("a", "http://x").with_header("X-Key", "${HOME}")),
            SettingsError::Mcp(McpRefError::Expansion { field: "header" })
        );
        assert_eq!(
            refused(McpServer::stdio("s", "run").with_args(["$OPENAI_API_KEY"])),
            SettingsError::Mcp(McpRefError::Expansion { field: "arg" })
        );
        assert_eq!(
            refused(
                McpServer::streamable_http("a", "http://x")
                    .with_header("authorization", "Bearer x")
            ),
            SettingsError::Mcp(McpRefError::PlainAuthorization)
        );
        assert!(matches!(
            refused(McpServer::streamable_http("a", "http://x").with_bearer_token_env("BAD}")),
            SettingsError::Mcp(McpRefError::InvalidVarName { .. })
        ));
        for name in ["", "a.b", "a b", &"x".repeat(65)] {
            assert!(matches!(
                refused(McpServer::streamable_http(name, "http://x")),
                SettingsError::Mcp(McpRefError::InvalidServerName { .. })
            ));
        }
        let s = McpServer::streamable_http("a", "http://x");
        assert_eq!(
            settings(&[s.clone(), s], &none, p).unwrap_err(),
            SettingsError::Mcp(McpRefError::DuplicateServerName)
        );
    }
}
