//! Resume a Thread across a host restart while a run-service provider hands out a new
//! loopback port and a new bearer token, and see what still refuses to resume.
//!
//! Run with `cargo run -p agent --example resume_after_restart`. It needs nothing but Rust:
//! the driver is the in-process reference driver (two driver instances share one simulated
//! provider backend, as two host processes share one provider account), and the Thread store
//! is a SQLite file in a temporary directory.
//!
//! The example checks every outcome it narrates and exits with an error if one differs.

use std::collections::BTreeSet;
use std::error::Error;
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agent::tools::{HostedTool, ToolOutput, ToolRejection};
use agent::{Agent, SessionOutcome, ThreadError};
use compat_fingerprint::{ComponentName, ShortDigest};
use driver_spi::reference::{RecordedRequest, ReferenceBackend, ReferenceDriver};
use driver_spi::{Request, SessionMode};
use run_service::{
    EnvBinding, ExposeSecret, Lifecycle, McpServer, McpTransport, RunAttachment, RunId,
    RunServiceCompatibility, RunServiceError, RunServiceProvider, SecretString,
    SemanticFingerprint, ServiceRef, TransportKind, async_trait,
};
use thread_store::sqlite::{SqliteConfig, SqliteStore};

mod support {
    pub(crate) mod mcp_client;
}

/// The logical role this provider fills. Its meaning never changes; a different role would
/// get a different id.
const COMPATIBILITY_ID: &str = "com.example.agent-ui";

// ---------------------------------------------------------------------------------------
// An example run-service provider
// ---------------------------------------------------------------------------------------

/// A provider that serves an "Agent UI" MCP server on a loopback port.
///
/// Like a real one, it opens its server when the host first needs it, on whatever port the
/// OS hands out, with a freshly minted bearer token; the server (and so the port and token)
/// lives until the agent closes the provider. A restarted host therefore gets a new port and
/// a new token while offering the same capability.
#[derive(Debug)]
struct AgentUiProvider {
    /// The revision of the `ask_user` tool this build serves. Changing it is a semantic
    /// change, so it is part of the semantic fingerprint.
    tool_revision: &'static str,
    /// Whether the provider declares a [`RunServiceCompatibility`].
    opt_in: bool,
    server: Mutex<Option<LoopbackServer>>,
}

#[derive(Debug)]
struct LoopbackServer {
    /// Holds the port. A real provider would serve MCP on it.
    _listener: TcpListener,
    port: u16,
    token: SecretString,
}

impl AgentUiProvider {
    fn new(tool_revision: &'static str, opt_in: bool) -> Arc<Self> {
        Arc::new(Self {
            tool_revision,
            opt_in,
            server: Mutex::new(None),
        })
    }

    fn server(&self) -> std::sync::MutexGuard<'_, Option<LoopbackServer>> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The port of the running server, if it runs.
    fn port(&self) -> Option<u16> {
        self.server().as_ref().map(|s| s.port)
    }

    /// Whether `value` is the token this provider minted. The token itself is never shown.
    fn minted(&self, value: &str) -> bool {
        self.server()
            .as_ref()
            .is_some_and(|s| s.token.expose_secret() == value)
    }

    /// Every semantic property that decides whether a conversation may safely continue, and
    /// nothing allocated: no port, URL, token, run id or time. The builder has no method that
    /// could take one.
    fn semantic_fingerprint(&self) -> String {
        SemanticFingerprint::new()
            .service_role("agent-ui")
            .mcp_server("agent-ui", TransportKind::StreamableHttp, true)
            .tool(
                "ask_user",
                &serde_json::json!({
                    "type": "object",
                    "properties": {"question": {"type": "string"}},
                    "required": ["question"],
                }),
                self.tool_revision,
            )
            .authorization("bearer", "ui:ask")
            .protocol_revision("2025-06-18")
            .finish()
    }
}

fn url_of(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// The env var that carries the bearer token. It changes with the port, as a provider that
/// namespaces its credentials per server instance would do.
fn env_name_of(port: u16) -> String {
    format!("AGENT_UI_TOKEN_{port}")
}

/// Binds a loopback port the OS picks. The OS could, rarely, hand back a port this demo
/// already used, which would hide the rotation the demo is about; such a port is held open
/// while binding again, so the next one differs. A real provider need not care.
fn bind_fresh_port() -> std::io::Result<(TcpListener, u16)> {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    let mut held = Vec::new();
    loop {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        if handed_out.insert(port) {
            return Ok((listener, port));
        }
        held.push(listener);
    }
}

/// A demo token: unique and unguessable enough for a demo (UUIDv7 random bits), not a
/// reviewed credential scheme.
fn mint_token() -> SecretString {
    SecretString::from(format!("demo-token-{}", uuid::Uuid::now_v7().simple()))
}

#[async_trait]
impl RunServiceProvider for AgentUiProvider {
    async fn attach_run(&self, _run: &RunId) -> Result<RunAttachment, RunServiceError> {
        let (port, token) = {
            let mut server = self.server();
            if server.is_none() {
                let (listener, port) = bind_fresh_port().map_err(|e| {
                    RunServiceError::new(format!("cannot bind a loopback port: {e}"))
                })?;
                *server = Some(LoopbackServer {
                    _listener: listener,
                    port,
                    token: mint_token(),
                });
            }
            let running = server.as_ref().expect("started just above");
            (running.port, running.token.clone())
        };
        let (url, env_name) = (url_of(port), env_name_of(port));
        // Everything here is concrete materialization: delivered exactly to the driver.
        let service = ServiceRef::new("agent-ui", "Agent UI")
            .with_url(&url)
            .with_port(port)
            .with_lifecycle(Lifecycle::Shared)
            .with_reuse_key(format!("agent-ui@127.0.0.1:{port}"))
            .with_mcp(
                McpServer::streamable_http("agent-ui", &url)
                    .required(true)
                    .with_bearer_token_env(&env_name),
            )
            .with_secret_env(EnvBinding::new(env_name, token));
        let attachment = RunAttachment::new([service]);
        Ok(if self.opt_in {
            // Resume compatibility: a stable id plus the semantic fingerprint.
            attachment.with_resume_compatibility(RunServiceCompatibility::new(
                COMPATIBILITY_ID,
                self.semantic_fingerprint(),
            ))
        } else {
            attachment
        })
    }

    async fn detach_run(&self, _run: &RunId) -> Result<(), RunServiceError> {
        // The server is shared by every run of this host; nothing is per run.
        Ok(())
    }

    async fn close(&self) -> Result<(), RunServiceError> {
        // The agent is closing: stop the server, freeing its port and forgetting its token.
        self.server().take();
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------

/// Fails the example with `what` unless `condition` holds.
fn ensure(condition: bool, what: &str) -> Result<(), Box<dyn Error>> {
    if condition {
        Ok(())
    } else {
        Err(format!("unexpected outcome: {what}").into())
    }
}

/// Starts one "host process": a new connection to the store file, a new reference driver
/// instance on the shared backend, and this host's provider.
async fn start_host(
    db: &Path,
    backend: &ReferenceBackend,
    provider: &Arc<AgentUiProvider>,
) -> Result<Agent, Box<dyn Error>> {
    let store = SqliteStore::open(SqliteConfig::new(db)).await?;
    let driver = ReferenceDriver::with_backend(backend.clone());
    let agent = Agent::builder(Arc::new(driver))
        .store(Arc::new(store))
        .run_service(provider.clone())
        .model("reference-model")
        .instructions("Answer support questions briefly.")
        .tool(lookup_order_tool())
        .build()?;
    Ok(agent)
}

/// A host-defined Rust tool, served to the runtime over MCP by the SDK on every host. Its
/// catalog (name, description, schema, revision) is its semantic identity; the port and token
/// of its endpoint change with every host.
fn lookup_order_tool() -> HostedTool {
    HostedTool::new(
        "lookup_order",
        "Looks up the status of an order by id.",
        serde_json::json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"]
        }),
        |call| async move {
            match call.arguments.get("id").and_then(|v| v.as_str()) {
                Some(id) => Ok(ToolOutput::text(format!("order {id}: shipped"))),
                None => Err(ToolRejection::new("`id` must be a string")),
            }
        },
    )
    .with_revision("1")
}

/// Calls a hosted tool through the MCP endpoint the driver last received, as an MCP-capable
/// CLI would, with the URL and bearer token from that request. Returns the URL and the text.
async fn call_hosted_tool(
    backend: &ReferenceBackend,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<(String, String), Box<dyn Error>> {
    let (client, endpoint) = support::mcp_client::connect(backend).await?;
    let (text, _) = support::mcp_client::call(&client, tool, arguments).await?;
    client.cancel().await?;
    println!(
        "   tools/call {tool} via {} (token in ${}, {} hex digits, never printed) -> {text:?}",
        endpoint.url, endpoint.env_var, endpoint.token_len
    );
    Ok((endpoint.url, text))
}

/// Runs `thread` while the runtime calls the hosted `lookup_order` tool mid-run, as a real CLI
/// would: the reference driver stalls (a CLI at work), the call goes through the MCP endpoint
/// the driver received, then the run finishes. The tool server serves only runs in flight.
async fn run_calling_the_tool(
    thread: agent::Thread,
    prompt: &str,
    backend: &ReferenceBackend,
) -> Result<(agent::RunResult, (String, String)), Box<dyn Error>> {
    backend.push_behavior(driver_spi::reference::Behavior::Stall);
    let run = thread.stream(prompt.to_owned())?;
    backend.wait_for_stalled(1).await;
    let call = call_hosted_tool(backend, "lookup_order", serde_json::json!({"id": "42"})).await;
    backend.release_stalled();
    let result = run.result().await?;
    Ok((result, call?))
}

/// A run's relation to the stored conversation, in words.
fn describe(outcome: &SessionOutcome) -> String {
    match outcome {
        SessionOutcome::Started => "started a new conversation".to_owned(),
        SessionOutcome::Resumed => "resumed the stored conversation".to_owned(),
        SessionOutcome::Restarted { changes } => {
            let changes: Vec<String> = changes.iter().map(ToString::to_string).collect();
            format!(
                "archived the stored conversation and started a new one ({})",
                changes.join(", ")
            )
        }
        other => format!("{other:?}"),
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The MCP server the driver received: its URL and bearer-token env var.
fn mcp_endpoint(request: &Request) -> Option<(&str, Option<&str>)> {
    match &request.mcp.first()?.transport {
        McpTransport::StreamableHttp {
            url,
            bearer_token_env_var,
            ..
        } => Some((url.as_str(), bearer_token_env_var.as_deref())),
        _ => None,
    }
}

fn last_request(backend: &ReferenceBackend) -> Result<RecordedRequest, Box<dyn Error>> {
    backend
        .last_request()
        .ok_or_else(|| "the driver recorded no request".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("threads.db");
    // The provider side of the reference driver: its sessions outlive any one host.
    let backend = ReferenceBackend::new();
    let key = "support-42";

    println!("Resume after restart");
    println!("Thread store: SQLite file {}", db.display());
    println!();

    // 1. -------------------------------------------------------------------------------
    println!("1. Host 1 starts; the provider allocates port A and token A.");
    let provider_a = AgentUiProvider::new("1", true);
    let host1 = start_host(&db, &backend, &provider_a).await?;
    println!("   The runtime calls the host's `lookup_order` tool through the SDK's MCP endpoint");
    println!("   while the run is in flight:");
    let (first, (tools_url_a, answer)) =
        run_calling_the_tool(host1.thread(key), "My order has not arrived.", &backend).await?;
    let port_a = provider_a.port().ok_or("provider A did not start")?;
    let first_request = last_request(&backend)?;
    let stored = host1
        .thread(key)
        .checkpoint()
        .await?
        .ok_or("nothing was stored after the first run")?;
    println!("   endpoint A            {}", url_of(port_a));
    println!("   token env var A       {}", env_name_of(port_a));
    println!(
        "   compatibility         id {COMPATIBILITY_ID}, semantic fingerprint {}",
        provider_a.semantic_fingerprint()
    );
    println!("   run on Thread {key:?}  {}", describe(&first.session));
    println!("   driver replied        {:?}", first.output);
    println!(
        "   stored checkpoint     resume id {}, Thread fingerprint {}",
        stored.resume_id,
        stored.fingerprint.short()
    );
    ensure(
        first.session == SessionOutcome::Started,
        "the first run starts a conversation",
    )?;
    ensure(
        first.record_id.is_some(),
        "the first run stores a checkpoint",
    )?;
    println!();

    ensure(
        answer == "order 42: shipped",
        "the hosted tool answers on host 1",
    )?;
    println!();

    // 2. -------------------------------------------------------------------------------
    println!("2. Host 1 closes. Host 2 starts: a new store connection, a new driver instance,");
    println!("   and a new provider, which allocates port B and token B.");
    host1.close().await;
    ensure(host1.is_closed(), "host 1 is closed")?;
    ensure(
        provider_a.port().is_none(),
        "closing the agent closed the provider (its server and token are gone)",
    )?;
    drop(host1);
    println!("   host 1 closed; its provider stopped the server on port A");

    let provider_b = AgentUiProvider::new("1", true);
    let host2 = start_host(&db, &backend, &provider_b).await?;

    // 3. -------------------------------------------------------------------------------
    println!();
    println!("3. A resume-only run on host 2.");
    println!("   The resumed runtime calls the same tool, at host 2's new endpoint, mid-run:");
    let (second, (tools_url_b, answer)) = run_calling_the_tool(
        host2.thread(key).resume_only(),
        "Any news on my order?",
        &backend,
    )
    .await?;
    let port_b = provider_b.port().ok_or("provider B did not start")?;
    ensure(port_b != port_a, "the restarted provider got a new port")?;
    let recorded = last_request(&backend)?;
    let request = recorded.request();
    let (mcp_url, mcp_env) = mcp_endpoint(request).ok_or("the driver received no MCP server")?;
    let env_b = env_name_of(port_b);
    let token_b_delivered = recorded
        .expose_secret_env(&env_b)
        .is_some_and(|value| provider_b.minted(&value));
    let token_a_absent = recorded.expose_secret_env(&env_name_of(port_a)).is_none()
        && recorded.secret_env_names().iter().all(|name| {
            recorded
                .expose_secret_env(name)
                .is_none_or(|v| !provider_a.minted(&v))
        });
    ensure(
        answer == "order 42: shipped",
        "the hosted tool answers on host 2",
    )?;
    ensure(
        tools_url_b != tools_url_a,
        "the tool endpoint moved with the restart",
    )?;
    let resumed = host2
        .thread(key)
        .checkpoint()
        .await?
        .ok_or("nothing stored after the resume")?;
    println!(
        "   endpoint B            {} (token env var {})",
        url_of(port_b),
        env_name_of(port_b)
    );
    println!("   outcome               {}", describe(&second.session));
    println!(
        "   driver instance       {} (host 1 used {})",
        recorded.driver_instance(),
        first_request.driver_instance()
    );
    println!("   driver replied        {:?}", second.output);
    println!("   session mode sent     {:?}", request.session.mode);
    println!(
        "   service URL received  {}",
        request.runtime.services[0].url.as_deref().unwrap_or("-")
    );
    println!("   MCP URL received      {mcp_url}");
    println!("   MCP token env var     {}", mcp_env.unwrap_or("-"));
    println!(
        "   secret env received   {}",
        recorded.secret_env_names().join(", ")
    );
    println!("   matches token B: {}", yes(token_b_delivered));
    println!("   token A absent:  {}", yes(token_a_absent));
    println!(
        "   profile fingerprint   exact {} -> {} (changed), session {} -> {} (same)",
        first_request.request().profile.exact.short(),
        request.profile.exact.short(),
        first_request
            .request()
            .profile
            .session_compatibility
            .short(),
        request.profile.session_compatibility.short(),
    );
    println!(
        "   stored checkpoint     resume id {}, Thread fingerprint {}",
        resumed.resume_id,
        resumed.fingerprint.short()
    );
    ensure(
        second.session == SessionOutcome::Resumed,
        "the resume-only run resumes",
    )?;
    ensure(
        recorded.driver_instance() != first_request.driver_instance(),
        "host 2 ran a new driver instance",
    )?;
    ensure(
        request.session.mode == SessionMode::ContinueOnly,
        "the driver was asked to continue the stored session",
    )?;
    ensure(
        backend.session_turns(&stored.resume_id).ok().flatten() == Some(2),
        "the provider conversation continued (turn 2 of the same session)",
    )?;
    ensure(
        request.runtime.services[0].url.as_deref() == Some(url_of(port_b).as_str()),
        "the driver received endpoint B",
    )?;
    ensure(
        mcp_url == url_of(port_b),
        "the MCP declaration points at endpoint B",
    )?;
    ensure(
        mcp_env == Some(env_b.as_str()),
        "the MCP token env var is B's",
    )?;
    ensure(token_b_delivered, "the driver received token B")?;
    ensure(token_a_absent, "the driver did not receive token A")?;
    ensure(
        first_request.request().profile.exact != request.profile.exact,
        "the exact profile fingerprint follows the new endpoint",
    )?;
    ensure(
        first_request.request().profile.session_compatibility
            == request.profile.session_compatibility,
        "the session-compatibility profile fingerprint is stable",
    )?;
    ensure(
        resumed.resume_id == stored.resume_id && resumed.fingerprint == stored.fingerprint,
        "the same conversation is stored under the same Thread fingerprint",
    )?;
    host2.close().await;

    // 4. -------------------------------------------------------------------------------
    println!();
    println!("4. Host 3 starts with a provider that ships tool revision 2 (a semantic change),");
    println!("   so its semantic fingerprint changes. Resume-only must refuse.");
    let provider_c = AgentUiProvider::new("2", true);
    let host3 = start_host(&db, &backend, &provider_c).await?;
    let requests_before = backend.request_count();
    let refused = host3
        .thread(key)
        .resume_only()
        .run("And now?")
        .await
        .err()
        .ok_or("resume-only accepted a changed semantic fingerprint")?;
    println!("   error: {refused}");
    let component =
        ComponentName::with_digest("attachment.semantic", ShortDigest::of_str(COMPATIBILITY_ID))?;
    println!(
        "   {component} is the short digest of the id {COMPATIBILITY_ID:?}: the error names the \
         attachment without repeating the provider's string"
    );
    let names_it = refused
        .incompatibility()
        .is_some_and(|i| i.names(component.as_str()) && i.changes().len() == 1);
    ensure(
        matches!(refused, ThreadError::Incompatible { .. }) && names_it,
        "Incompatible names exactly the changed attachment",
    )?;
    ensure(
        backend.request_count() == requests_before,
        "the driver never ran for the refused resume",
    )?;
    host3.close().await;

    // 5. -------------------------------------------------------------------------------
    println!();
    println!("5. The same restart without a compatibility tuple (exact fingerprinting, the");
    println!("   default): a new port alone makes the stored Thread incompatible.");
    let exact_key = "support-43";
    let provider_d = AgentUiProvider::new("1", false);
    let host4 = start_host(&db, &backend, &provider_d).await?;
    host4.thread(exact_key).run("Where is my refund?").await?;
    let port_d = provider_d.port().ok_or("provider D did not start")?;
    host4.close().await;
    let provider_e = AgentUiProvider::new("1", false);
    let host5 = start_host(&db, &backend, &provider_e).await?;
    let requests_before = backend.request_count();
    let refused = host5
        .thread(exact_key)
        .resume_only()
        .run("Any news on my refund?")
        .await
        .err()
        .ok_or("resume-only accepted a changed exact endpoint")?;
    let port_e = provider_e.port().ok_or("provider E did not start")?;
    println!("   endpoint before       {}", url_of(port_d));
    println!("   endpoint after        {}", url_of(port_e));
    println!("   error: {refused}");
    ensure(
        refused
            .incompatibility()
            .is_some_and(|i| i.names_prefix("attachment.exact:")),
        "Incompatible names an attachment.exact: component",
    )?;
    ensure(
        backend.request_count() == requests_before,
        "the driver never ran for the refused resume",
    )?;
    // Without resume_only, a Thread continues or starts: it archives the old conversation
    // and starts a new one, saying what changed.
    let restarted = host5
        .thread(exact_key)
        .run("Any news on my refund?")
        .await?;
    println!("   without resume_only   {}", describe(&restarted.session));
    ensure(
        matches!(restarted.session, SessionOutcome::Restarted { .. }),
        "continue-or-start starts a new conversation",
    )?;
    host5.close().await;

    println!();
    println!("All outcomes as expected.");
    Ok(())
}
