//! `agentctl`: an operator CLI for the Threads the SDK keeps.
//!
//! `run` runs a prompt on a Thread; `threads list` pages through the stored Threads,
//! `threads show` prints one record with its fingerprint components, `threads explain` is the
//! dry run of a run's compatibility decision ([`agent::Thread::explain`]), and
//! `threads delete` erases a Thread, honouring its lease unless `--force`. It works only
//! through the library crates' public APIs.
//!
//! Invariants:
//! - Read commands never write: a SQLite path that does not exist is reported, not created.
//! - Output never carries a secret: records hold none by contract, and a PostgreSQL URL (which
//!   may hold a password) is never printed.
//! - Output never carries a live control character from a string agentctl did not write (the
//!   model's text, a tool's name and arguments on the approval prompt, a runtime's message):
//!   everything printed passes through one function, `terminal::terminal_safe`, so escape
//!   sequences cannot hide what an operator approves.
//! - `threads list` holds one page at a time, whatever the number of Threads.
//! - Exit codes: 0 success, 1 any other failure, 2 usage error, 3 incompatible, 4 busy
//!   (leased), 5 not found, 6 another credential namespace's Thread (or one without an owner
//!   this namespace could not claim).
//! - A namespace sees and changes its own Threads: `run` and `threads explain` through the
//!   agent's ownership rule, `threads list`, `show` and `delete` by the record's owner, unless
//!   `--all-namespaces` asks for every one. Another namespace is named only by a digest.
//! - `run` and `threads explain` build their agent through one function from one set of
//!   options, so an explanation describes exactly the run.
//!
//! `acp` serves the Agent Client Protocol on stdio (crate `acp-agent`): an editor drives
//! durable Threads over it, each session's agent built from the same options as `run`.
//!
//! `auth status` and `runtime-env show` report what `runtime-env` sees for a namespace.
//!
//! `support-bundle` writes those reports, probed CLI versions and the SDK version to one file.
//!
//! `serve --dev` answers the same reports over loopback HTTP behind a one-time bearer token.
//!
//! With `RUST_LOG` set, the libraries' `tracing` output goes to stderr, redacted line by line.
//!
//! Long operations (listing, probing CLIs) note their progress on stderr when it is a terminal.
#![forbid(unsafe_code)]

mod acp;
mod acp_agent;
mod approve;
mod bundle;
mod env;
mod log;
mod output;
mod run;
mod serve;
mod store;
mod terminal;
mod via_worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use compat_fingerprint::ShortDigest;
use thread_store::{ListQuery, Query, StoreError, ThreadRecord, ThreadStore};

use crate::store::StoreSpec;

/// Operate on the Threads an agent-sdk host keeps.
#[derive(Debug, Parser)]
#[command(name = "agentctl", version)]
struct Cli {
    /// The thread store: `sqlite:PATH` or a `postgresql://` URL. Default: the SQLite file
    /// `$XDG_DATA_HOME/agentctl/threads.sqlite3` (`~/.local/share/...` without XDG_DATA_HOME).
    #[arg(long, global = true, value_name = "STORE")]
    store: Option<String>,
    /// The PostgreSQL schema holding the store's tables.
    #[arg(
        long,
        global = true,
        default_value = "agent_threads",
        value_name = "SCHEMA"
    )]
    pg_schema: String,
    /// On failure, print the chain of causes too.
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt on a Thread: text on stdout, tool calls and progress on stderr, then a
    /// line with the session outcome, usage and record id.
    Run {
        /// The thread key.
        #[arg(long, value_name = "KEY")]
        thread: String,
        #[command(flatten)]
        options: Box<run::RunOptions>,
        /// Print the typed events as NDJSON on stdout instead.
        #[arg(long)]
        json: bool,
        /// The prompt.
        prompt: String,
    },
    /// Serve the Agent Client Protocol on stdio: an editor (Zed, a JetBrains IDE, a terminal
    /// client) starts `agentctl acp` and drives durable Threads over it, one per session.
    /// Only protocol messages go to stdout; logs (`RUST_LOG`) go to stderr.
    Acp {
        #[command(flatten)]
        options: Box<acp::AcpOptions>,
    },
    /// Stored Threads.
    #[command(subcommand)]
    Threads(ThreadsCommand),
    /// Runtime logins.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// The isolated runtime environment of a namespace.
    #[command(subcommand, name = "runtime-env")]
    RuntimeEnv(RuntimeEnvCommand),
    /// Write one JSON file for a support request: the SDK version, the probed CLI versions,
    /// the namespace, isolation level and mode, auth status and the config-source hashes. It
    /// holds no secret.
    SupportBundle {
        /// Where to write it (never over an existing file). Default:
        /// `agentctl-support-<unix time>.json` in the current directory.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        env: env::EnvOptions,
    },
    /// Serve `GET /auth/status` and `GET /runtime-env` as JSON for local debugging, behind a
    /// bearer token printed once at start. Loopback only. Stops on Ctrl-C.
    Serve {
        /// Required: this is a development aid, not a production endpoint.
        #[arg(long, required = true)]
        dev: bool,
        /// The loopback address to bind.
        #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
        bind: std::net::IpAddr,
        /// The port (0 lets the OS choose).
        #[arg(long, default_value_t = 0, value_name = "PORT")]
        port: u16,
        #[command(flatten)]
        env: env::EnvOptions,
    },
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Per runtime: logged in or not, how, and a safe label of the credential (a variable
    /// name or a placeholder path; never an account or a value). Opens no credential file.
    Status {
        /// Only this runtime (a registered one).
        #[arg(long, value_parser = env::runtime_parser(&[]))]
        runtime: Option<String>,
        #[command(flatten)]
        env: env::EnvOptions,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum RuntimeEnvCommand {
    /// The effective HOME/XDG/state paths (as placeholders), the child's variable names, auth
    /// status and the snapshot of config and policy sources. No value, no secret.
    Show {
        #[command(flatten)]
        env: env::EnvOptions,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Whose Threads `threads list`, `show` and `delete` work on.
#[derive(Debug, Clone, clap::Args)]
struct Scope {
    /// The credential namespace whose Threads to work on: `kind` or `kind:id`.
    #[arg(long, default_value = "default", value_name = "NAMESPACE")]
    namespace: String,
    /// Every namespace's Threads, and those without an owner (an operator's view).
    #[arg(long, conflicts_with = "namespace")]
    all_namespaces: bool,
}

impl Scope {
    /// The namespace to keep to, or `None` for every one.
    fn namespace(&self) -> Result<Option<String>, Failure> {
        if self.all_namespaces {
            return Ok(None);
        }
        let namespace: runtime_env::CredentialNamespace = self
            .namespace
            .parse()
            .map_err(|e| Failure::new(exit::USAGE, format!("--namespace: {e}")))?;
        Ok(Some(namespace.into()))
    }

    /// Refuses `record` unless the scope covers it: its owner is the namespace, or the scope
    /// is every namespace.
    fn check(&self, record: &ThreadRecord) -> Result<(), Failure> {
        let Some(namespace) = self.namespace()? else {
            return Ok(());
        };
        match record.namespace.as_deref() {
            Some(owner) if owner == namespace => Ok(()),
            Some(owner) => Err(Failure::new(
                exit::FOREIGN,
                format!(
                    "the Thread belongs to another credential namespace (owner {}); \
                     --all-namespaces works on every namespace's Threads",
                    ShortDigest::of_str(owner)
                ),
            )),
            None => Err(Failure::new(
                exit::FOREIGN,
                "the Thread has no owning namespace yet (it was stored before ownership was \
                 recorded; a run of its namespace resumes and claims it); --all-namespaces \
                 works on every namespace's Threads",
            )),
        }
    }
}

#[derive(Debug, Subcommand)]
enum ThreadsCommand {
    /// List a namespace's Threads (every namespace's with `--all-namespaces`), in key order,
    /// a page at a time.
    List {
        /// Only keys starting with this prefix.
        #[arg(long, default_value = "")]
        prefix: String,
        /// Archived records too (superseded by a restart).
        #[arg(long)]
        archived: bool,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: Scope,
    },
    /// Show one of the namespace's Threads: its active record's ids, driver, session,
    /// fingerprint components.
    Show {
        /// The thread key.
        key: String,
        /// A JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scope: Scope,
    },
    /// What a run with these options would do: resume, start, start over (and why) or be
    /// refused. Takes no lease, runs nothing, writes nothing; exits as the run would fail.
    Explain {
        /// The thread key.
        key: String,
        #[command(flatten)]
        options: Box<run::RunOptions>,
        /// A JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete one of the namespace's Threads. Refused while a host holds its lease, unless
    /// `--force`.
    Delete {
        /// The thread key.
        key: String,
        /// Delete even while a run holds the Thread's lease. That run keeps going, but its
        /// checkpoint is refused (the erase fences it), so its conversation is lost.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        scope: Scope,
    },
}

/// A failure, with its exit code. Messages never hold a secret.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
    chain: Vec<String>,
}

impl Failure {
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            chain: Vec::new(),
        }
    }

    fn store(context: &str, error: &StoreError) -> Self {
        let code = match error {
            StoreError::Busy { .. } => exit::BUSY,
            StoreError::NotFound { .. } => exit::NOT_FOUND,
            _ => exit::FAILURE,
        };
        Self {
            code,
            message: format!("{context}: {error}"),
            chain: causes(error).collect(),
        }
    }
}

/// An error and its causes, each once, joined with `: `: the workspace's errors name their own
/// layer and leave their cause to `source()`.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    std::iter::once(error.to_string())
        .chain(causes(error))
        .collect::<Vec<_>>()
        .join(": ")
}

/// The messages of `error`'s causes, outermost first (`error` itself excluded).
fn causes(error: &dyn std::error::Error) -> impl Iterator<Item = String> + '_ {
    std::iter::successors(error.source(), |cause| cause.source()).map(ToString::to_string)
}

/// Exit codes.
pub(crate) mod exit {
    /// Any failure without a more specific code.
    pub(crate) const FAILURE: u8 = 1;
    /// A usage error (clap uses 2 as well).
    pub(crate) const USAGE: u8 = 2;
    /// The stored Thread is incompatible with the current configuration.
    pub(crate) const INCOMPATIBLE: u8 = 3;
    /// The Thread is leased by a running host.
    pub(crate) const BUSY: u8 = 4;
    /// No such Thread or store.
    pub(crate) const NOT_FOUND: u8 = 5;
    /// The Thread belongs to another credential namespace, or has no owner and this
    /// namespace could not claim it.
    pub(crate) const FOREIGN: u8 = 6;
    /// `--worker` was given but no `agent-worker` binary is where it was looked for, or
    /// `--worker=sandbox` found no `bwrap` or no runtime binary to show in the sandbox.
    pub(crate) const WORKER_MISSING: u8 = 7;
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    log::init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agentctl: cannot start the async runtime: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    match runtime.block_on(execute(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // Errors quote runtimes and stores (a CLI's own message, a key), so they are escaped.
            let shown = |text| terminal::terminal_safe(text, terminal::Shown::Text);
            eprintln!("agentctl: {}", shown(&failure.message));
            if cli.verbose {
                for cause in &failure.chain {
                    eprintln!("  caused by: {}", shown(cause));
                }
            }
            ExitCode::from(failure.code)
        }
    }
}

async fn execute(cli: &Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Auth(AuthCommand::Status { runtime, env, json }) => {
            return env::auth_status(env, runtime.as_deref(), *json);
        }
        Command::RuntimeEnv(RuntimeEnvCommand::Show { env, json }) => {
            return env::show(env, *json);
        }
        Command::SupportBundle { output, env } => {
            return bundle::write(env, output.as_deref()).await;
        }
        Command::Serve {
            dev: _,
            bind,
            port,
            env,
        } => return serve::serve(env, *bind, *port).await,
        _ => {}
    }
    let spec = StoreSpec::from_arg(cli.store.as_deref())?;
    match &cli.command {
        Command::Auth(_)
        | Command::RuntimeEnv(_)
        | Command::SupportBundle { .. }
        | Command::Serve { .. } => Ok(()),
        Command::Threads(ThreadsCommand::List {
            prefix,
            archived,
            json,
            scope,
        }) => {
            let namespace = scope.namespace()?;
            let store = spec.open_existing(&cli.pg_schema).await?;
            list(store.as_ref(), prefix, *archived, *json, namespace).await
        }
        Command::Threads(ThreadsCommand::Show { key, json, scope }) => {
            scope.namespace()?;
            let store = spec.open_existing(&cli.pg_schema).await?;
            show(store.as_ref(), key, *json, scope).await
        }
        Command::Run {
            thread,
            options,
            json,
            prompt,
        } => {
            let store = spec.open_or_create(&cli.pg_schema).await?;
            run::run(store, thread, options, prompt.clone(), *json).await
        }
        Command::Acp { options } => {
            let store = spec.open_or_create(&cli.pg_schema).await?;
            acp::serve(&spec, store, options).await
        }
        Command::Threads(ThreadsCommand::Explain { key, options, json }) => {
            let store = spec.open_existing(&cli.pg_schema).await?;
            run::explain(store, key, options, *json).await
        }
        Command::Threads(ThreadsCommand::Delete { key, force, scope }) => {
            scope.namespace()?;
            let store = spec.open_existing(&cli.pg_schema).await?;
            delete(store.as_ref(), key, *force, scope).await
        }
    }
}

/// Records per page: large enough to be quick, small enough that memory stays flat.
const PAGE: u32 = 500;

async fn list(
    store: &dyn ThreadStore,
    prefix: &str,
    archived: bool,
    json: bool,
    namespace: Option<String>,
) -> Result<(), Failure> {
    let mut query = ListQuery::prefix(prefix).limit(PAGE);
    if archived {
        query = query.including_archived();
    }
    if let Some(namespace) = namespace {
        query = query.namespace(namespace);
    }
    let mut out = output::Out::stdout();
    if !json {
        out.line(&output::list_header())?;
    }
    let progress = output::Progress::new();
    let mut listed = 0usize;
    loop {
        let page = store
            .list(&query)
            .await
            .map_err(|e| Failure::store("cannot list Threads", &e))?;
        for record in &page.records {
            if json {
                out.json(&output::list_json(record).to_string())?;
            } else {
                out.line(&output::list_row(record))?;
            }
        }
        listed += page.records.len();
        progress.note(&format!("{listed} Threads listed…"));
        match page.next {
            Some(next) => query.after = Some(next),
            None => return Ok(()),
        }
    }
}

async fn show(
    store: &dyn ThreadStore,
    key: &str,
    json: bool,
    scope: &Scope,
) -> Result<(), Failure> {
    let record = store
        .resolve(&Query::key(key))
        .await
        .map_err(|e| Failure::store("cannot read the Thread", &e))?
        .ok_or_else(|| Failure::new(exit::NOT_FOUND, "no Thread is stored under that key"))?;
    scope.check(&record)?;
    let lease = store
        .lease_holder(&format!("{}{key}", agent::THREAD_LEASE_PREFIX))
        .await
        .map_err(|e| Failure::store("cannot read the Thread's lease", &e))?;
    let mut out = output::Out::stdout();
    if json {
        let mut value = output::show_json(&record);
        value["lease"] = match &lease {
            Some(holder) => serde_json::json!({
                "owner": holder.owner,
                "expires_in_ms": u64::try_from(holder.expires_in.as_millis()).unwrap_or(u64::MAX),
            }),
            None => serde_json::Value::Null,
        };
        out.json(&serde_json::to_string_pretty(&value).unwrap_or_default())
    } else {
        for line in output::show_text(&record) {
            out.line(&line)?;
        }
        out.line(&match &lease {
            Some(holder) => format!(
                "lease         held by {} for {} s more",
                holder.owner,
                holder.expires_in.as_secs()
            ),
            None => "lease         free".to_owned(),
        })
    }
}

/// How long the delete holds the Thread's lease; it needs it only for the erase itself.
const DELETE_LEASE_TTL: Duration = Duration::from_secs(30);

async fn delete(
    store: &dyn ThreadStore,
    key: &str,
    force: bool,
    scope: &Scope,
) -> Result<(), Failure> {
    let target = format!("{}{key}", agent::THREAD_LEASE_PREFIX);
    let owner = format!("agentctl/{}", std::process::id());
    let lease = match store.acquire_lease(&target, &owner, DELETE_LEASE_TTL).await {
        Ok(lease) => Some(lease),
        Err(StoreError::Busy { .. }) if force => None,
        Err(StoreError::Busy { .. }) => {
            return Err(Failure::new(
                exit::BUSY,
                "the Thread is leased by a running host; retry when its run ends, or pass \
                 --force (that run then cannot save its checkpoint, so its turn is lost)",
            ));
        }
        Err(e) => return Err(Failure::store("cannot lease the Thread", &e)),
    };
    // Whose it is, read under the lease (a run cannot move it meanwhile); nothing stored is
    // the delete's own "not found".
    let deleted = match store.resolve(&Query::key(key).including_archived()).await {
        Ok(Some(record)) => match scope.check(&record) {
            Ok(()) => store.delete(key).await,
            Err(refused) => {
                if let Some(lease) = &lease {
                    let _ = store.release_lease(lease).await;
                }
                return Err(refused);
            }
        },
        Ok(None) => store.delete(key).await,
        Err(e) => Err(e),
    };
    if let Some(lease) = &lease {
        // Best effort: the lease expires by itself within its TTL anyway.
        let _ = store.release_lease(lease).await;
    }
    let deleted = deleted.map_err(|e| Failure::store("cannot delete the Thread", &e))?;
    if deleted == 0 {
        return Err(Failure::new(
            exit::NOT_FOUND,
            "no Thread is stored under that key",
        ));
    }
    output::Out::stdout().line(&format!("deleted {deleted} record(s)"))
}
