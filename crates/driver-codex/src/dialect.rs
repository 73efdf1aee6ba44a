//! The Codex dialect of [`CliDriver`](driver_cli::CliDriver): the whole configuration of a
//! turn as `-c` overrides in argv, and Codex's own "unknown thread" answers.
//!
//! Why `-c` and not a config file: the overrides live only in this process's argv, so two
//! concurrent runs of one namespace can never share or clobber a file, nothing is left behind
//! when the host dies mid-run, and there is no lock to take ([`ConfigFiles::None`]). Nothing
//! secret goes in: MCP servers carry the *name* of their bearer variable
//! (`bearer_token_env_var`) and of each secret header's (`env_http_headers`), the provider
//! the *name* of its key variable (`env_key`), and the values reach Codex only through its
//! environment.
//!
//! The one file: a turn's output schema, which `exec --output-schema` takes only as a file
//! path, is the per-run file [`OUTPUT_SCHEMA_FILE`] (private, removed when the run ends). The
//! app-server takes it inline in `turn/start` (`outputSchema`), for that turn only, so a
//! resident turn writes nothing. Either way the schema goes in OpenAI's strict form
//! ([`OutputSchema::strict`](driver_spi::OutputSchema::strict)): Codex asks the model API for
//! `strict: true` with the schema verbatim, and the API refuses a schema that is not strict
//! (a plain struct's derived schema); one with no strict form is refused before launch.

use std::collections::{BTreeMap, BTreeSet};

use driver_cli::{
    CliEvent, ConfigFiles, Dialect, Identity, Invocation, MalformedEvent, NewSessionId,
    ProcessMode, Runtime, SessionPlan, Translator, Turn, cli_capabilities,
};
use driver_process::process::Finished;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, Permission, Redactor,
    Request, RunFailure, SessionMode, Unsupported, Usage,
};
use run_service::{McpServer, McpTransport, TransportKind};
use runtime_env::RuntimeEnv;

use crate::app_server::events::AppServerTranslator;
use crate::events::EventTranslator;
use crate::options::CodexOptions;

/// The per-run file of an `exec` turn's output schema (`--output-schema <file>`).
pub(crate) const OUTPUT_SCHEMA_FILE: &str = "output-schema.json";

/// What a config key must be: one segment of a dotted `-c` path.
const KEY_RULE: &str = "must be 1-64 ASCII letters, digits, `-` or `_`";

/// Phrases Codex prints when the thread id is unknown to its `CODEX_HOME`, lower-cased. The
/// exit code says nothing here (every failure exits 1), so the decision rests on Codex's
/// messages; each phrase was observed from the pinned `codex` release (see the tests).
const UNKNOWN_SESSION: &[&str] = &[
    "no rollout found for thread id",
    "no rollout found for conversation id",
    "thread not found",
    "session not found",
];

driver_cli::dialect!(
    /// The Codex dialect of the one CLI driver, over [`CodexOptions`].
    Codex(CodexOptions)
);

impl Dialect for Codex {
    type Translator = CodexTranslator;

    fn runtime(&self) -> &'static Runtime {
        &crate::RUNTIME
    }

    /// The session codec of the Codex driver.
    ///
    /// The resume id is the Codex thread id from `thread.started`; the driver resumes only UUIDs,
    /// because Codex takes anything else for a thread *name*. The stored state holds the thread
    /// id, the [`SessionGuard`](driver_spi::SessionGuard) values and the thread's usage totals
    /// (`codex.usage_total`): no secret, no URL, port or env-var name.
    ///
    /// Codex chooses the thread id and reports it in `thread.started`.
    fn identity(&self) -> &Identity {
        &IDENTITY
    }

    /// Structured output: `exec --output-schema` and the app-server's `outputSchema`; the
    /// answer is the final message's text (Codex checks neither the schema nor the answer:
    /// the core does).
    fn capabilities(&self) -> Capabilities {
        cli_capabilities(true, &[TransportKind::StreamableHttp, TransportKind::Stdio])
            .with_structured_output(true)
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        let provider = self.provider.as_ref();
        builder
            .opt_str(
                "reasoning_effort",
                self.reasoning_effort.map(|e| e.as_str()),
            )
            // The sandbox and approval options moved to the request's policy (issue 27);
            // their fields keep the default options' values, so stored Threads keep resuming.
            .str("sandbox", "read-only")
            .str("mcp_approval", "approve_request_servers")
            .opt_str("provider.id", provider.map(|p| p.id.as_str()))
            .opt_str("provider.base_url", provider.map(|p| p.base_url.as_str()))
            .opt_str("provider.wire_api", provider.map(|p| p.wire_api.as_str()))
            .opt_str(
                "provider.env_key",
                provider.and_then(|p| p.env_key.as_deref()),
            )
            .bool("hermetic_config", self.hermetic_config)
            .bool("skip_git_repo_check", self.skip_git_repo_check)
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        let Some(provider) = &self.provider else {
            return Ok(());
        };
        if !is_config_key(&provider.id) {
            return Err(ConfigError::invalid("provider.id", KEY_RULE));
        }
        if !(provider.base_url.starts_with("http://") || provider.base_url.starts_with("https://"))
        {
            return Err(ConfigError::invalid(
                "provider.base_url",
                "must be an http or https URL",
            ));
        }
        if provider
            .env_key
            .as_deref()
            .is_some_and(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            return Err(ConfigError::invalid(
                "provider.env_key",
                "must be an environment variable name",
            ));
        }
        Ok(())
    }

    /// Argv carries the whole configuration (a file carries only an output schema). The
    /// request's MCP servers are checked here (the provider id was, by
    /// [`validate`](Dialect::validate)), so that a request Codex would misread is refused
    /// before the version probe and the spawn.
    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        let model = request.model.as_deref().or(self.cli.model.as_deref());
        crate::permissions::check(&request.permissions, model)?;
        if let Some(schema) = native_schema(request) {
            schema.strict().map_err(Unsupported::StrictOutputSchema)?;
        }
        Ok(())
    }

    /// Nothing, except an `exec` turn's output schema ([`OUTPUT_SCHEMA_FILE`]).
    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        check_servers(&turn.request.mcp)?;
        Ok(match strict_schema(turn.request) {
            Some(schema) if !turn.resident => ConfigFiles::RunFile {
                name: OUTPUT_SCHEMA_FILE,
                contents: schema.to_string().into_bytes(),
            },
            _ => ConfigFiles::None,
        })
    }

    /// `codex exec` per turn (`--output-schema <file>` with an output schema), or
    /// `codex app-server` in resident mode.
    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        if turn.resident {
            return crate::app_server::launch(self, turn);
        }
        let mut args = build(self, turn.request, turn.plan);
        if let (Some(path), Some(_)) = (turn.run_file, turn.output_schema()) {
            // An `exec` option (`exec resume` and `exec fork` take it before the subcommand),
            // right after `exec --json`.
            let schema = ["--output-schema".to_owned(), path.display().to_string()];
            args.splice(2..2, schema);
        }
        Ok(Invocation::new(args))
    }

    /// `exec --json` events, or app-server notifications in resident mode. Both measure a
    /// continued turn's usage from the same checkpoint totals, so a Thread moves between
    /// modes.
    fn translator(&self, request: &Request, redactor: Redactor) -> CodexTranslator {
        // Codex reports the thread's running totals (the source thread's included for a
        // fork): a continued turn's usage is measured from the totals its stored state kept.
        let previous = match request.session.mode {
            SessionMode::Stateless => None,
            _ => request.session.state.as_ref(),
        };
        // App-server speaks in resident mode, and for a per-turn run whose policy asks (the
        // driver runs it on a one-turn app-server: `exec` cannot ask).
        let app_server =
            matches!(self.cli.process_mode, ProcessMode::Resident(_)) || request.permissions.asks();
        if app_server {
            CodexTranslator::AppServer(
                AppServerTranslator::new(redactor).with_previous_totals(previous),
            )
        } else {
            CodexTranslator::Exec(EventTranslator::new(redactor).with_previous_totals(previous))
        }
    }

    /// `codex app-server` ([`ProcessMode::Resident`](driver_cli::ProcessMode::Resident)).
    fn resident(&self) -> Option<&dyn driver_cli::ResidentProtocol> {
        Some(self)
    }

    /// Codex's own words on stderr, or in an `error` event.
    fn unknown_session(&self, translator: &CodexTranslator, finished: &Finished) -> bool {
        is_unknown_session(&finished.stderr_tail)
            || translator.last_error().is_some_and(is_unknown_session)
    }
}

/// The translator of a Codex turn: `exec --json` events or app-server notifications.
#[derive(Debug)]
pub enum CodexTranslator {
    /// One process per turn.
    Exec(EventTranslator),
    /// Resident (`app-server`).
    AppServer(AppServerTranslator),
}

/// Forwards a [`Translator`] method to the mode's translator.
macro_rules! either {
    ($self:ident.$method:ident($($arg:expr),*)) => {
        match $self {
            CodexTranslator::Exec(t) => t.$method($($arg),*),
            CodexTranslator::AppServer(t) => t.$method($($arg),*),
        }
    };
}

impl Translator for CodexTranslator {
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent> {
        either!(self.translate(event))
    }

    fn session_id(&self) -> Option<&str> {
        either!(self.session_id())
    }

    fn output(&self) -> &str {
        either!(self.output())
    }

    fn succeeded(&self) -> bool {
        either!(self.succeeded())
    }

    fn reported_failure(&self) -> Option<RunFailure> {
        either!(self.reported_failure())
    }

    fn usage(&self) -> Option<Usage> {
        either!(self.usage())
    }

    fn last_error(&self) -> Option<&str> {
        either!(self.last_error())
    }

    fn checkpoint_data(&self) -> Vec<(String, String)> {
        either!(self.checkpoint_data())
    }

    fn turn_ended(&self) -> bool {
        either!(self.turn_ended())
    }
}

/// Whether `text` (stderr, or an `error` event's message) says the session is unknown.
pub(crate) fn is_unknown_session(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    UNKNOWN_SESSION.iter().any(|p| lower.contains(p))
}

/// Whether `key` can be one segment of a dotted `-c` path.
fn is_config_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The request's output schema, when it is delivered natively.
fn native_schema(request: &Request) -> Option<&driver_spi::OutputSchema> {
    request
        .output_schema
        .as_ref()
        .filter(|s| s.delivery() == driver_spi::SchemaDelivery::Native)
}

/// The output schema as Codex sends it: in OpenAI's strict form (Codex asks for
/// `strict: true` and passes the schema verbatim; the API refuses a schema that is not
/// strict). The core checks the answer against the original. A schema with no strict form
/// was refused by `check_request`; it is sent as it is.
pub(crate) fn strict_schema(request: &Request) -> Option<serde_json::Value> {
    let schema = native_schema(request)?;
    Some(schema.strict().unwrap_or_else(|_| schema.schema().clone()))
}

/// Refuses MCP servers that cannot be expressed as Codex configuration: a name that is not a
/// config key, a name given twice, a transport Codex lacks. The errors name a field and a
/// rule, never a value.
pub(crate) fn check_servers(mcp: &[McpServer]) -> Result<(), DriverError> {
    let mut seen = BTreeSet::new();
    for server in mcp {
        if !is_config_key(&server.name) {
            return Err(ConfigError::invalid("mcp.name", KEY_RULE).into());
        }
        if !seen.insert(server.name.as_str()) {
            return Err(ConfigError::invalid("mcp.name", "must be unique within a run").into());
        }
        match server.transport {
            McpTransport::StreamableHttp { .. } | McpTransport::Stdio { .. } => {}
            ref other => return Err(Unsupported::McpTransport(other.kind()).into()),
        }
    }
    Ok(())
}

/// A TOML literal for a `-c key=value` override.
fn toml_str(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

fn toml_list<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    toml::Value::Array(values.into_iter().map(toml::Value::from).collect()).to_string()
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

/// The argv (without the program) of one `exec` turn of `request` (the table in the
/// [crate docs](crate)), whose MCP servers passed [`check_servers`] and whose continued id is a
/// UUID ([`SessionPlan::of`]). The prompt is read from stdin (`-`).
fn build(options: &CodexOptions, request: &Request, plan: SessionPlan<'_>) -> Vec<String> {
    let mut args: Vec<String> = vec!["exec".into(), "--json".into()];
    if options.skip_git_repo_check {
        args.push("--skip-git-repo-check".into());
    }
    if options.hermetic_config {
        args.push("--ignore-user-config".into());
    }
    if plan == SessionPlan::Stateless {
        args.push("--ephemeral".into());
    }
    args.extend(overrides(options, request));
    match plan {
        SessionPlan::Resume(id) => args.extend(["resume".to_owned(), id.to_owned()]),
        SessionPlan::Fork(id) => args.extend(["fork".to_owned(), id.to_owned()]),
        _ => {}
    }
    args.push("-".into());
    args
}

/// The `-c` overrides of a turn's whole configuration (`request`'s permission policy, model,
/// instructions and MCP servers over `options`), for `exec` and `app-server` alike: the
/// permission policy's settings first. A stdio server gets the names of the secret variables
/// its service carries ([`Request::mcp_secret_names`]), and only those.
pub(crate) fn overrides(options: &CodexOptions, request: &Request) -> Vec<String> {
    let permissions = &request.permissions;
    let stdio_env = request.mcp_secret_names();
    let mut c = Overrides::default();
    for (key, value) in crate::permissions::settings(permissions) {
        c.set(key, value.to_owned());
    }
    if let Some(model) = request.model.as_deref().or(options.cli.model.as_deref()) {
        c.set("model", toml_str(model));
    }
    if let Some(effort) = options.reasoning_effort {
        c.set("model_reasoning_effort", toml_str(effort.as_str()));
    }
    if let Some(instructions) = &request.instructions {
        c.set("developer_instructions", toml_str(instructions));
    }
    if let Some(provider) = &options.provider {
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
    for server in &request.mcp {
        let key = format!("mcp_servers.{}", server.name);
        match &server.transport {
            McpTransport::StreamableHttp {
                url,
                headers,
                bearer_token_env_var,
                env_headers,
            } => {
                c.set(&format!("{key}.url"), toml_str(url));
                if let Some(var) = bearer_token_env_var {
                    c.set(&format!("{key}.bearer_token_env_var"), toml_str(var));
                }
                if !headers.is_empty() {
                    c.set(&format!("{key}.http_headers"), toml_table(headers));
                }
                // Codex reads each value from the named variable of its own environment.
                if !env_headers.is_empty() {
                    c.set(&format!("{key}.env_http_headers"), toml_table(env_headers));
                }
            }
            McpTransport::Stdio { command, args, env } => {
                c.set(&format!("{key}.command"), toml_str(command));
                c.set(
                    &format!("{key}.args"),
                    toml_list(args.iter().map(String::as_str)),
                );
                if !env.is_empty() {
                    c.set(&format!("{key}.env"), toml_table(env));
                }
                if let Some(names) = stdio_env.get(server.name.as_str()) {
                    c.set(&format!("{key}.env_vars"), toml_list(names.iter().copied()));
                }
            }
            // Refused by `check_servers` before anything runs.
            _ => continue,
        }
        if server.required {
            c.set(&format!("{key}.required"), "true".to_owned());
        }
        if permissions.mcp == Permission::Allow {
            c.set(
                &format!("{key}.default_tools_approval_mode"),
                toml_str("approve"),
            );
        }
    }
    c.0
}

/// Who the driver is.
const IDENTITY: Identity = Identity::new("codex", "Codex CLI", "codex/v1", NewSessionId::Cli);

#[cfg(test)]
mod tests;
