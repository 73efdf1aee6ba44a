//! `agentctl run` and `agentctl threads explain`: both build the agent from the same
//! [`RunOptions`] through [`build_agent`], so an explanation describes exactly the run.

use std::path::PathBuf;
use std::sync::Arc;

use agent::{Agent, SessionOutcome, Thread, ThreadError, ThreadEventKind, Verdict};
use clap::Args;
use driver_cli::{BuildError, CommonArgs};
use run_service::McpServer;
use serde_json::json;
use thread_store::ThreadStore;

use crate::env::{EnvOptions, builder as env_builder, registered, runtime_parser};
use crate::terminal::{Shown, terminal_safe};
use crate::{Failure, exit, output};

/// The `--runtime` that needs no CLI: the SDK's in-process reference runtime, whose sessions
/// live on disk in the credential namespace (`reference-runtime`), as a CLI's do.
pub(crate) const REFERENCE: &str = "reference";

/// The configuration of a run: what enters its compatibility fingerprint.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunOptions {
    /// The runtime to drive: `reference` (the SDK's in-process runtime, its sessions kept in
    /// the namespace) or a registered CLI runtime.
    #[arg(long, default_value = REFERENCE, value_parser = runtime_parser(&[REFERENCE]))]
    runtime: String,
    /// Refuse instead of starting a new conversation.
    #[arg(long)]
    resume_only: bool,
    /// Fork the conversation of this Thread into the new key.
    #[arg(long, value_name = "KEY")]
    fork_from: Option<String>,
    /// The model.
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// An MCP server (Streamable HTTP), repeatable. Its identity for resume is its name: a
    /// new port or token keeps a Thread resumable; adding, removing or renaming one does not.
    #[arg(long = "mcp", value_name = "NAME=URL")]
    mcp: Vec<String>,
    /// The variable of agentctl's environment holding the bearer token of the MCP server NAME,
    /// repeatable. The value reaches the runtime as a secret under the same name.
    #[arg(long = "mcp-bearer-env", value_name = "NAME=VAR")]
    mcp_bearer_env: Vec<String>,
    /// The runtime's binary (default: the runtime's variable, `$CODEX_BIN`, `$CLAUDE_BIN`,
    /// `$CODEBUDDY_BIN`, `$CURSOR_BIN` or `$GEMINI_BIN`, else its program on PATH).
    #[arg(long, value_name = "PATH")]
    runtime_bin: Option<PathBuf>,
    /// The model endpoint, instead of the vendor's (a Responses API for Codex, a Messages API
    /// for Claude Code, a Chat Completions API for CodeBuddy, the Gemini API for Gemini;
    /// Cursor takes none).
    #[arg(long, value_name = "URL")]
    provider_url: Option<String>,
    /// The variable of agentctl's environment holding the model API key, handed to the
    /// runtime as a secret (default, when set: the runtime's, `OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY`, `CODEBUDDY_API_KEY`, `CURSOR_API_KEY` or `GEMINI_API_KEY`).
    #[arg(long, value_name = "VAR")]
    provider_key_env: Option<String>,
    /// What the runtime may do without asking (part of the Thread's fingerprint).
    #[command(flatten)]
    policy: crate::approve::PolicyOptions,
    /// Who answers the runtime's approval requests: `ask` (on a terminal: each request is
    /// shown and answered y/n), `deny` or `allow`. Default: `ask` on a terminal, else `deny`.
    #[arg(long, value_enum, value_name = "WHO")]
    approve: Option<crate::approve::Approve>,
    /// A JSON Schema file: the answer must be JSON matching it, and the validated JSON is all
    /// `run` prints on stdout (not part of the fingerprint).
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
    /// With `--output-schema`: put the schema in the prompt instead of passing it to the
    /// runtime natively (for runtimes without structured output); validated the same way.
    #[arg(long, requires = "output_schema")]
    schema_in_prompt: bool,
    /// Seconds an approval request waits for its answer before it is denied.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub(crate) approval_timeout: u64,
    /// Where the runtime's state lives: the credential namespace and level.
    #[command(flatten)]
    pub(crate) env: EnvOptions,
    /// Any ACP agent by its command, instead of `--runtime`.
    #[command(flatten)]
    acp: crate::acp_agent::AcpAgentOptions,
}

fn split_pair<'a>(flag: &str, value: &'a str) -> Result<(&'a str, &'a str), Failure> {
    value
        .split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| Failure::new(exit::USAGE, format!("{flag} takes NAME=VALUE")))
}

/// The agent a run with these options uses.
pub(crate) async fn build_agent(
    options: &RunOptions,
    store: Arc<dyn ThreadStore>,
) -> Result<Agent, Failure> {
    agent_builder(options, store).await?.build().map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("invalid configuration: {}", crate::with_causes(&e)),
        )
    })
}

/// The builder of the agent a run with these options uses (`agentctl acp` adds the editor's
/// MCP servers to it).
pub(crate) async fn agent_builder(
    options: &RunOptions,
    store: Arc<dyn ThreadStore>,
) -> Result<agent::AgentBuilder, Failure> {
    let workspace = match &options.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| {
            Failure::new(
                exit::FAILURE,
                format!("cannot read the current directory: {e}"),
            )
        })?,
    };
    let driver: Arc<dyn driver_spi::Driver> = match options.runtime.as_str() {
        _ if options.acp.given() => {
            if options.runtime != REFERENCE {
                return Err(Failure::new(
                    exit::USAGE,
                    "--runtime: an ACP agent named by --acp-agent or --acp-command is the runtime",
                ));
            }
            if options.env.worker.is_some() {
                return Err(Failure::new(
                    exit::USAGE,
                    "--worker: a worker knows the registry's runtimes only, not an ACP agent \
                     registered by this run",
                ));
            }
            let entry = crate::acp_agent::entry(&options.acp, &options.env, &workspace).await?;
            cli_driver(entry, options, &workspace)?
        }
        REFERENCE => reference_driver(options, &workspace)?,
        name => cli_driver(registered(name)?, options, &workspace)?,
    };
    let mut builder = Agent::builder(driver)
        .store(store)
        .workspace(workspace.to_string_lossy().into_owned())
        .permissions(options.policy.policy()?);
    if let Some(model) = &options.model {
        builder = builder.model(model.clone());
    }
    let servers = mcp_servers(options)?;
    if !servers.is_empty() {
        builder = builder.run_service(Arc::new(CliMcp { servers }));
    }
    Ok(builder)
}

/// The reference runtime's driver, its sessions in the namespace's state. It has no binary,
/// model endpoint or key, so those flags are refused rather than ignored.
fn reference_driver(
    options: &RunOptions,
    workspace: &std::path::Path,
) -> Result<Arc<dyn driver_spi::Driver>, Failure> {
    let refused = [
        ("--runtime-bin", options.runtime_bin.is_some()),
        ("--provider-url", options.provider_url.is_some()),
        ("--provider-key-env", options.provider_key_env.is_some()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
        return Err(Failure::new(
            exit::USAGE,
            format!("{flag}: the reference runtime runs in process and takes none"),
        ));
    }
    if options.env.worker.is_some() {
        return crate::via_worker::driver(&options.env, None, workspace);
    }
    let env = env_builder(&options.env, workspace.to_path_buf())?;
    let driver = reference_runtime::driver(env).map_err(|e| {
        Failure::new(
            exit::FAILURE,
            format!("cannot build the runtime environment: {e}"),
        )
    })?;
    // `/tool <action> <name> [arguments]` prompts try the policy and approvals without a CLI.
    let config = driver_spi::reference::ReferenceConfig::new().with_prompt_tools(true);
    Ok(Arc::new(driver.with_config(config)))
}

/// A registered runtime's driver, built by its registry entry: the namespace's isolated
/// environment working in the workspace, the binary, the model endpoint and the model key (if
/// any), which reaches the runtime only as a secret. The entry decides which variable carries
/// the key and whether the runtime takes an endpoint at all.
fn cli_driver(
    runtime: &'static driver_cli::Runtime,
    options: &RunOptions,
    workspace: &std::path::Path,
) -> Result<Arc<dyn driver_spi::Driver>, Failure> {
    let binary = options.runtime_bin.clone().or_else(|| {
        std::env::var_os(runtime.bin_var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let key_var = options
        .provider_key_env
        .as_deref()
        .unwrap_or(runtime.key_var);
    let key = match std::env::var(key_var) {
        Ok(key) if !key.is_empty() => Some(run_service::EnvBinding::new(key_var, key)),
        _ if options.provider_key_env.is_some() => {
            return Err(Failure::new(
                exit::USAGE,
                format!("--provider-key-env names {key_var}, which is not set"),
            ));
        }
        _ => None,
    };
    let mut args = CommonArgs::default();
    args.binary = binary;
    args.base_url.clone_from(&options.provider_url);
    args.key = key;
    // `--model` goes to the agent, into every request, not into the driver's options: the
    // driver's config fingerprint stays what agentctl's stored Threads were made with.
    if options.env.worker.is_some() {
        return crate::via_worker::driver(&options.env, Some((runtime, args)), workspace);
    }
    let env = env_builder(&options.env, workspace.to_path_buf())?;
    runtime.build(env, args).map_err(|e| match e {
        BuildError::Config(e) if e.field() == "base_url" => Failure::new(
            exit::USAGE,
            format!("--provider-url: {}", crate::with_causes(&e)),
        ),
        BuildError::Config(e) => Failure::new(
            exit::USAGE,
            format!("invalid configuration: {}", crate::with_causes(&e)),
        ),
        e => Failure::new(
            exit::FAILURE,
            format!("cannot build the runtime environment: {e}"),
        ),
    })
}

/// One `--mcp` server: its name, URL and bearer variable with the value agentctl read.
struct McpEntry {
    name: String,
    url: String,
    bearer: Option<(String, secrecy::SecretString)>,
}

/// The `--mcp` and `--mcp-bearer-env` flags, with each bearer value read from agentctl's own
/// environment (the runtime's is isolated, so the value travels as a secret binding).
fn mcp_servers(options: &RunOptions) -> Result<Vec<McpEntry>, Failure> {
    let mut bearers = Vec::new();
    for pair in &options.mcp_bearer_env {
        bearers.push(split_pair("--mcp-bearer-env", pair)?);
    }
    let mut servers = Vec::new();
    for pair in &options.mcp {
        let (name, url) = split_pair("--mcp", pair)?;
        let bearer = match bearers.iter().find(|(n, _)| *n == name) {
            Some((_, var)) => {
                let value = std::env::var(var)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        Failure::new(
                            exit::USAGE,
                            format!("--mcp-bearer-env names {var}, which is not set"),
                        )
                    })?;
                Some(((*var).to_owned(), secrecy::SecretString::from(value)))
            }
            None => None,
        };
        servers.push(McpEntry {
            name: name.to_owned(),
            url: url.to_owned(),
            bearer,
        });
    }
    if let Some((name, _)) = bearers
        .iter()
        .find(|(n, _)| !servers.iter().any(|s| s.name == *n))
    {
        return Err(Failure::new(
            exit::USAGE,
            format!("--mcp-bearer-env names `{name}`, which no --mcp declares"),
        ));
    }
    Ok(servers)
}

/// The `--mcp` servers as a run-service provider that declares a semantic identity: each
/// server's name, transport and whether it takes a bearer. So a server that comes back on
/// another port, or a rotated token, does not make a stored Thread incompatible, while a
/// server added, removed, renamed or switched to or from a bearer does.
struct CliMcp {
    servers: Vec<McpEntry>,
}

/// The compatibility id of the `--mcp` servers.
const CLI_MCP_COMPATIBILITY_ID: &str = "dev.agentctl.mcp";

#[run_service::async_trait]
impl run_service::RunServiceProvider for CliMcp {
    async fn attach_run(
        &self,
        _run: &run_service::RunId,
    ) -> Result<run_service::RunAttachment, run_service::RunServiceError> {
        use secrecy::ExposeSecret;
        let mut semantic = run_service::SemanticFingerprint::new().service_role("agentctl-mcp");
        let mut services = Vec::new();
        for server in &self.servers {
            let mut mcp = McpServer::streamable_http(&server.name, &server.url);
            let mut service =
                run_service::ServiceRef::new(&server.name, &server.name).with_url(&server.url);
            semantic = semantic.mcp_server(
                &server.name,
                run_service::TransportKind::StreamableHttp,
                false,
            );
            if let Some((var, value)) = &server.bearer {
                mcp = mcp.with_bearer_token_env(var);
                service = service.with_secret_env(run_service::EnvBinding::new(
                    var.clone(),
                    value.expose_secret().to_owned(),
                ));
                semantic = semantic.authorization("bearer", &server.name);
            }
            services.push(service.with_mcp(mcp));
        }
        Ok(
            run_service::RunAttachment::new(services).with_resume_compatibility(
                run_service::RunServiceCompatibility::new(
                    CLI_MCP_COMPATIBILITY_ID,
                    semantic.finish(),
                ),
            ),
        )
    }

    async fn detach_run(
        &self,
        _run: &run_service::RunId,
    ) -> Result<(), run_service::RunServiceError> {
        Ok(())
    }
}

/// The `--output-schema` file as a schema (prompt-only with `--schema-in-prompt`).
fn output_schema(options: &RunOptions) -> Result<Option<driver_spi::OutputSchema>, Failure> {
    let Some(path) = &options.output_schema else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("--output-schema: cannot read the file: {e}"),
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|_| Failure::new(exit::USAGE, "--output-schema: the file is not JSON"))?;
    let schema = driver_spi::OutputSchema::new(value);
    Ok(Some(if options.schema_in_prompt {
        schema.prompt_only()
    } else {
        schema
    }))
}

/// The Thread a run with these options runs on.
pub(crate) fn thread(agent: &Agent, key: &str, options: &RunOptions) -> Thread {
    let thread = match &options.fork_from {
        Some(parent) => agent.thread(parent.clone()).fork(key),
        None => agent.thread(key),
    };
    if options.resume_only {
        thread.resume_only()
    } else {
        thread
    }
}

/// A string of the run (a tool name, a warning) as one field of a stderr line.
fn field(text: &str) -> std::borrow::Cow<'_, str> {
    terminal_safe(text, Shown::Field)
}

/// The exit code of a run's error.
pub(crate) fn failure(error: &ThreadError) -> Failure {
    let code = match error {
        ThreadError::Incompatible { .. } => exit::INCOMPATIBLE,
        ThreadError::Busy { .. } => exit::BUSY,
        ThreadError::NotFound { .. } => exit::NOT_FOUND,
        ThreadError::Foreign { .. } | ThreadError::Unclaimed { .. } => exit::FOREIGN,
        _ => exit::FAILURE,
    };
    let mut message = crate::with_causes(error);
    if let Some(incompatibility) = error.incompatibility() {
        for change in incompatibility.changes() {
            message.push_str(&format!("\n  drifted: {change}"));
        }
    }
    Failure::new(code, message)
}

/// `threads explain`: what a run would do, and exit as the run would fail before its driver.
pub(crate) async fn explain(
    store: Arc<dyn ThreadStore>,
    key: &str,
    options: &RunOptions,
    json: bool,
) -> Result<(), Failure> {
    let agent = build_agent(options, store).await?;
    let explained = thread(&agent, key, options).explain().await;
    agent.close().await;
    let mut out = output::Out::stdout();
    match explained {
        Ok(explanation) => {
            let fingerprint = explanation.fingerprint;
            let (text, value) = match explanation.verdict {
                Verdict::Resume { record } => (
                    format!("resume: record {}", record.as_str()),
                    json!({"would": "resume", "record_id": record.as_str()}),
                ),
                Verdict::Claim { record } => (
                    format!(
                        "resume and claim: record {} has no owning namespace yet; a resume \
                         claims it for this one",
                        record.as_str()
                    ),
                    json!({"would": "claim", "record_id": record.as_str()}),
                ),
                Verdict::Start {
                    replaces: None,
                    changes: _,
                } => (
                    "start: nothing is stored under this key".to_owned(),
                    json!({"would": "start", "replaces": null, "changes": []}),
                ),
                Verdict::Start {
                    replaces: Some(record),
                    changes,
                } => {
                    let mut text = format!("start over, archiving record {}", record.as_str());
                    if changes.is_empty() {
                        text.push_str(": it holds no checkpoint");
                    }
                    for change in &changes {
                        text.push_str(&format!("\n  drifted: {change}"));
                    }
                    let changes: Vec<String> = changes.iter().map(ToString::to_string).collect();
                    (
                        text,
                        json!({"would": "start", "replaces": record.as_str(), "changes": changes}),
                    )
                }
                Verdict::Fork { parent } => (
                    format!("fork: from record {}", parent.as_str()),
                    json!({"would": "fork", "parent_record_id": parent.as_str()}),
                ),
                _ => (
                    "an outcome this agentctl does not know".to_owned(),
                    json!({"would": "unknown"}),
                ),
            };
            if json {
                let mut value = value;
                value["fingerprint"] = json!(fingerprint.to_string());
                out.json(&value.to_string())
            } else {
                out.line(&text)?;
                out.line(&format!("fingerprint {fingerprint}"))
            }
        }
        Err(error) => {
            let failure = failure(&error);
            if json {
                let changes: Vec<String> = error
                    .incompatibility()
                    .map(|i| i.changes().iter().map(ToString::to_string).collect())
                    .unwrap_or_default();
                out.json(
                    &json!({"would": "refuse", "error": error.to_string(), "changes": changes})
                        .to_string(),
                )?;
            }
            Err(failure)
        }
    }
}

/// `run`: streams the run, text on stdout, the rest on stderr (or NDJSON events with
/// `--json`); Ctrl-C cancels it.
pub(crate) async fn run(
    store: Arc<dyn ThreadStore>,
    key: &str,
    options: &RunOptions,
    prompt: String,
    json: bool,
) -> Result<(), Failure> {
    let agent = build_agent(options, store).await?;
    let approvals = crate::approve::approvals(options.approve)?
        .with_timeout(std::time::Duration::from_secs(options.approval_timeout));
    let schema = output_schema(options)?;
    let structured = schema.is_some();
    let mut thread = thread(&agent, key, options).with_approvals(approvals);
    if let Some(schema) = schema {
        thread = thread.with_output_schema(schema);
    }
    let mut stream = thread.stream(prompt).map_err(|e| failure(&e))?;
    let mut out = output::Out::stdout();
    let mut thinking = output::Thinking::new();
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = stream.next_event() => event,
            _ = &mut interrupt, if !interrupted => {
                interrupted = true;
                stream.cancel();
                continue;
            }
        };
        let Some(event) = event else { break };
        if json {
            out.json(&serde_json::to_string(&event).unwrap_or_default())?;
            continue;
        }
        if let ThreadEventKind::ReasoningDelta { delta } = &event.kind {
            thinking.push(delta);
            continue;
        }
        thinking.flush();
        match &event.kind {
            // With an output schema, stdout holds the validated JSON only.
            ThreadEventKind::TextDelta { .. } if structured => {}
            ThreadEventKind::TextDelta { delta } => out.text(delta)?,
            ThreadEventKind::ToolCallStarted { name, .. } => eprintln!("[tool] {}", field(name)),
            ThreadEventKind::ToolCallResult { is_error: true, .. } => eprintln!("[tool] failed"),
            ThreadEventKind::Plan { entries } => {
                for line in output::plan_lines(entries) {
                    eprintln!("{line}");
                }
            }
            ThreadEventKind::Warning { code, message } => {
                eprintln!("[warning] {}: {}", field(code), field(message));
            }
            ThreadEventKind::ApprovalResolved { outcome, .. } => {
                let outcome = serde_json::to_value(outcome).unwrap_or_default();
                eprintln!("[approval] {}", field(&outcome.to_string()));
            }
            // A failed run ends in an error, which `main` prints once, in words.
            _ => {}
        }
    }
    thinking.flush();
    let result = stream.result().await;
    agent.close().await;
    let result = result.map_err(|e| failure(&e))?;
    if let Some(value) = &result.structured {
        out.json(&value.to_string())?;
    } else if !json {
        out.line("")?;
    }
    let session = match &result.session {
        SessionOutcome::Started => "started".to_owned(),
        SessionOutcome::Resumed => "resumed".to_owned(),
        SessionOutcome::Restarted { changes } => format!("restarted ({} drifted)", changes.len()),
        SessionOutcome::RestartedAfterRejection => "restarted (resume rejected)".to_owned(),
        SessionOutcome::Forked { .. } => "forked".to_owned(),
        _ => "other".to_owned(),
    };
    let usage = result.usage.map_or_else(
        || "unknown".to_owned(),
        |u| format!("{} in / {} out", u.input_tokens, u.output_tokens),
    );
    let record = result
        .record_id
        .as_ref()
        .map_or("not persisted", |id| id.as_str());
    let summary = format!("session {session}; usage {usage}; record {record}");
    if json || structured {
        eprintln!("{summary}");
    } else {
        out.line(&summary)?;
    }
    Ok(())
}
