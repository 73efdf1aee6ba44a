//! The argv of one `codex exec` invocation: the run's whole configuration as `-c` overrides.
//!
//! Why `-c` and not a config file: the overrides live only in this process's argv, so two
//! concurrent runs of one namespace can never share or clobber a file, nothing is left behind
//! when the host dies mid-run, and there is no lock to take. Nothing secret goes in: MCP
//! servers carry the *name* of their bearer variable (`bearer_token_env_var`), the provider the
//! *name* of its key variable (`env_key`), and the values reach Codex only through its
//! environment.

use std::collections::BTreeMap;

use run_service::{McpServer, McpTransport};

use crate::options::{CodexOptions, McpToolApproval};

/// What the invocation does with sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invocation<'a> {
    /// A new, persisted session.
    Start,
    /// A new session that is not persisted (`--ephemeral`).
    Stateless,
    /// Continue the stored thread.
    Resume(&'a str),
    /// Branch a new thread from the stored one.
    Fork(&'a str),
}

/// Why a request cannot be expressed as Codex configuration. Names a field and a rule, never
/// a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ArgvError {
    /// An MCP server name is not a Codex config key (`[A-Za-z0-9_-]`, 1–64 bytes).
    #[error("MCP server name is not a valid Codex key ({len} bytes)")]
    InvalidServerName {
        /// Its length in bytes.
        len: usize,
    },
    /// The same MCP server name appears twice.
    #[error("MCP server name appears twice")]
    DuplicateServerName,
    /// The MCP transport cannot be handed to Codex (SSE).
    #[error("Codex supports only streamable HTTP and stdio MCP servers")]
    UnsupportedTransport,
    /// The provider id is not a Codex config key.
    #[error("model provider id is not a valid Codex key ({len} bytes)")]
    InvalidProviderId {
        /// Its length in bytes.
        len: usize,
    },
    /// A session id to resume or fork is not a thread UUID.
    #[error("session id is malformed ({len} bytes)")]
    InvalidSessionId {
        /// Its length in bytes.
        len: usize,
    },
}

/// Whether `key` can be one segment of a dotted `-c` path.
pub(crate) fn is_config_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A TOML literal for a `-c key=value` override.
fn toml_str(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

fn toml_list<'a>(values: impl IntoIterator<Item = &'a String>) -> String {
    toml::Value::Array(
        values
            .into_iter()
            .map(|v| toml::Value::String(v.clone()))
            .collect(),
    )
    .to_string()
}

fn toml_table(map: &BTreeMap<String, String>) -> String {
    let table: toml::Table = map
        .iter()
        .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
        .collect();
    toml::Value::Table(table).to_string()
}

/// Collects `-c` overrides.
#[derive(Default)]
struct Overrides(Vec<String>);

impl Overrides {
    fn set(&mut self, key: &str, value: String) {
        self.0.push("-c".to_owned());
        self.0.push(format!("{key}={value}"));
    }
}

/// The names of the secret variables each MCP server's service carries, by server name
/// ([`Request::mcp_secret_names`](driver_spi::Request::mcp_secret_names)); forwarded to stdio
/// servers only.
pub(crate) type ForwardedEnv<'a> = BTreeMap<&'a str, Vec<&'a str>>;

/// Builds the argv (without the program) of one invocation. The prompt is read from stdin
/// (`-`).
pub(crate) fn build(
    options: &CodexOptions,
    model: Option<&str>,
    instructions: Option<&str>,
    mcp: &[McpServer],
    stdio_env: &ForwardedEnv<'_>,
    invocation: Invocation<'_>,
) -> Result<Vec<String>, ArgvError> {
    let mut args: Vec<String> = vec!["exec".into(), "--json".into()];
    if options.skip_git_repo_check {
        args.push("--skip-git-repo-check".into());
    }
    if options.hermetic_config {
        args.push("--ignore-user-config".into());
    }
    if invocation == Invocation::Stateless {
        args.push("--ephemeral".into());
    }
    if options.mcp_approval == McpToolApproval::DangerouslyBypassAll {
        args.push("--dangerously-bypass-approvals-and-sandbox".into());
    }

    let mut c = Overrides::default();
    if options.mcp_approval != McpToolApproval::DangerouslyBypassAll {
        c.set("approval_policy", toml_str("never"));
        c.set("sandbox_mode", toml_str(options.sandbox.as_str()));
    }
    if let Some(model) = model.or(options.model.as_deref()) {
        c.set("model", toml_str(model));
    }
    if let Some(effort) = options.reasoning_effort {
        c.set("model_reasoning_effort", toml_str(effort.as_str()));
    }
    if let Some(instructions) = instructions {
        c.set("developer_instructions", toml_str(instructions));
    }
    if let Some(provider) = &options.provider {
        if !is_config_key(&provider.id) {
            return Err(ArgvError::InvalidProviderId {
                len: provider.id.len(),
            });
        }
        let key = format!("model_providers.{}", provider.id);
        c.set("model_provider", toml_str(&provider.id));
        c.set(&format!("{key}.name"), toml_str(&provider.id));
        c.set(&format!("{key}.base_url"), toml_str(&provider.base_url));
        c.set(
            &format!("{key}.wire_api"),
            toml_str(provider.wire_api.as_str()),
        );
        if let Some(env_key) = &provider.env_key {
            c.set(&format!("{key}.env_key"), toml_str(env_key));
        }
        if let Some(n) = provider.request_max_retries {
            c.set(&format!("{key}.request_max_retries"), n.to_string());
        }
        if let Some(n) = provider.stream_max_retries {
            c.set(&format!("{key}.stream_max_retries"), n.to_string());
        }
    }
    if !options.unbounded_connection_retries {
        c.set("features.unbounded_connection_retries", "false".to_owned());
    }
    let mut seen = std::collections::BTreeSet::new();
    for server in mcp {
        if !is_config_key(&server.name) {
            return Err(ArgvError::InvalidServerName {
                len: server.name.len(),
            });
        }
        if !seen.insert(server.name.as_str()) {
            return Err(ArgvError::DuplicateServerName);
        }
        let key = format!("mcp_servers.{}", server.name);
        match &server.transport {
            McpTransport::StreamableHttp {
                url,
                headers,
                bearer_token_env_var,
            } => {
                c.set(&format!("{key}.url"), toml_str(url));
                if let Some(var) = bearer_token_env_var {
                    c.set(&format!("{key}.bearer_token_env_var"), toml_str(var));
                }
                if !headers.is_empty() {
                    c.set(&format!("{key}.http_headers"), toml_table(headers));
                }
            }
            McpTransport::Stdio { command, args, env } => {
                c.set(&format!("{key}.command"), toml_str(command));
                c.set(&format!("{key}.args"), toml_list(args));
                if !env.is_empty() {
                    c.set(&format!("{key}.env"), toml_table(env));
                }
                if let Some(names) = stdio_env.get(server.name.as_str()) {
                    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
                    c.set(&format!("{key}.env_vars"), toml_list(&names));
                }
            }
            _ => return Err(ArgvError::UnsupportedTransport),
        }
        if server.required {
            c.set(&format!("{key}.required"), "true".to_owned());
        }
        if options.mcp_approval == McpToolApproval::ApproveRequestServers {
            c.set(
                &format!("{key}.default_tools_approval_mode"),
                toml_str("approve"),
            );
        }
    }
    args.extend(c.0);

    match invocation {
        Invocation::Start | Invocation::Stateless => {}
        Invocation::Resume(id) | Invocation::Fork(id) => {
            // Codex takes anything but a UUID for a thread *name*, and starts a new thread when no
            // thread has that name.
            if !driver_cli::is_uuid(id) {
                return Err(ArgvError::InvalidSessionId { len: id.len() });
            }
            let sub = if matches!(invocation, Invocation::Resume(_)) {
                "resume"
            } else {
                "fork"
            };
            args.push(sub.into());
            args.push(id.into());
        }
    }
    args.push("-".into());
    Ok(args)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::options::{ModelProvider, SandboxMode};

    fn overrides(args: &[String]) -> BTreeMap<String, toml::Value> {
        args.windows(2)
            .filter(|w| w[0] == "-c")
            .map(|w| {
                let (k, v) = w[1].split_once('=').unwrap();
                let doc: toml::Table = toml::from_str(&format!("v = {v}")).unwrap();
                (k.to_owned(), doc["v"].clone())
            })
            .collect()
    }

    #[test]
    fn values_are_toml_literals_that_round_trip() {
        let tricky = "a \"quoted\" \\ path\nwith = and ' and é";
        let server = McpServer::stdio("local", tricky)
            .with_args(["--x=1", "two words"])
            .with_env("MODE", "a=b");
        let args = build(
            &CodexOptions::new(),
            Some(tricky),
            Some("line 1\nline 2"),
            &[server],
            &ForwardedEnv::new(),
            Invocation::Start,
        )
        .unwrap();
        let c = overrides(&args);
        assert_eq!(c["model"].as_str(), Some(tricky));
        assert_eq!(c["developer_instructions"].as_str(), Some("line 1\nline 2"));
        assert_eq!(c["mcp_servers.local.command"].as_str(), Some(tricky));
        assert_eq!(
            c["mcp_servers.local.args"],
            toml::Value::Array(vec!["--x=1".into(), "two words".into()])
        );
        assert_eq!(c["mcp_servers.local.env"]["MODE"].as_str(), Some("a=b"));
    }

    #[test]
    fn resume_and_fork_put_the_id_after_the_subcommand() {
        let options = CodexOptions::new().with_sandbox(SandboxMode::WorkspaceWrite);
        let resume = build(
            &options,
            None,
            None,
            &[],
            &ForwardedEnv::new(),
            Invocation::Resume("0199a213-81c0-7800-8aa1-bbab2a035a53"),
        )
        .unwrap();
        let n = resume.len();
        assert_eq!(
            &resume[n - 3..],
            ["resume", "0199a213-81c0-7800-8aa1-bbab2a035a53", "-"]
        );
        assert_eq!(&resume[..2], ["exec", "--json"]);
        let fork = build(
            &options,
            None,
            None,
            &[],
            &ForwardedEnv::new(),
            Invocation::Fork("01A22DF3-293F-7F41-947B-CFF0D35CC64E"),
        )
        .unwrap();
        assert_eq!(
            &fork[fork.len() - 3..],
            ["fork", "01A22DF3-293F-7F41-947B-CFF0D35CC64E", "-"]
        );
        // Thread names are not resumed: Codex would start a new thread when none matches.
        for bad in [
            "",
            "--last",
            "a b",
            "my-thread-name",
            "01a22df3-cb69-70f3",
            "01a22df3-293f-7f41-947b-cff0d35cc64g",
            "01a22df3_293f-7f41-947b-cff0d35cc64e",
        ] {
            assert!(matches!(
                build(
                    &options,
                    None,
                    None,
                    &[],
                    &ForwardedEnv::new(),
                    Invocation::Resume(bad)
                ),
                Err(ArgvError::InvalidSessionId { .. })
            ));
        }
    }

    #[test]
    fn server_and_provider_keys_are_validated() {
        let options = CodexOptions::new();
        for bad in ["", "a.b", "a b", "ü"] {
            let server = McpServer::streamable_http(bad, "http://127.0.0.1:1/mcp");
            assert!(matches!(
                build(
                    &options,
                    None,
                    None,
                    &[server],
                    &ForwardedEnv::new(),
                    Invocation::Start
                ),
                Err(ArgvError::InvalidServerName { .. })
            ));
        }
        let dup = McpServer::streamable_http("x", "http://127.0.0.1:1/mcp");
        assert_eq!(
            build(
                &options,
                None,
                None,
                &[dup.clone(), dup],
                &ForwardedEnv::new(),
                Invocation::Start
            ),
            Err(ArgvError::DuplicateServerName)
        );
        let sse = McpServer::sse("legacy", "http://127.0.0.1:1/sse");
        assert_eq!(
            build(
                &options,
                None,
                None,
                &[sse],
                &ForwardedEnv::new(),
                Invocation::Start
            ),
            Err(ArgvError::UnsupportedTransport)
        );
        let bad_provider = options.with_provider(ModelProvider::new("a.b", "http://x"));
        assert!(matches!(
            build(
                &bad_provider,
                None,
                None,
                &[],
                &ForwardedEnv::new(),
                Invocation::Start
            ),
            Err(ArgvError::InvalidProviderId { .. })
        ));
    }
}
