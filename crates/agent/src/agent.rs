//! [`Agent`]: a driver, a thread store and run-service providers, built once without I/O.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compat_fingerprint::Breakdown;
use compat_fingerprint::ShortDigest;
use driver_spi::{Approvals, Driver, PermissionPolicy};
use run_service::{
    EnvBinding, McpServer, RunId, RunServiceProvider, check_host_bearers, validate_run,
};
use runtime_env::CredentialNamespace;
use thread_store::{ListPage, ListQuery, ThreadStore};
use tokio::sync::watch;

use crate::compat::{DriverInfo, Profile, SchemeMigration, static_components};
#[cfg(feature = "tools")]
use crate::tools::Registry;
use crate::{BuildError, Thread, ThreadError};

/// The default time a Thread lease lives without renewal.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);
/// The default time budget for tearing down one run (detaching its providers).
pub const DEFAULT_TEARDOWN_BUDGET: Duration = Duration::from_secs(5);

/// Runs agent runtimes through one driver, with durable Threads.
///
/// Cheap to clone (an `Arc`). Build it with [`Agent::builder`]; construction does no I/O.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("driver", &self.inner.driver_info.driver_type)
            .field("providers", &self.inner.providers.len())
            .field("has_store", &self.inner.store.is_some())
            .field("scoped", &self.inner.namespace.is_some())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) driver: Arc<dyn Driver>,
    /// The driver's type, codec and capabilities, read once at build.
    pub(crate) driver_info: DriverInfo,
    pub(crate) store: Option<Arc<dyn ThreadStore>>,
    /// The credential namespace that owns the agent's Threads, or `None` (unscoped).
    pub(crate) namespace: Option<String>,
    pub(crate) providers: Vec<Arc<dyn RunServiceProvider>>,
    pub(crate) host_mcp: Vec<McpServer>,
    /// The host's own secret bindings, handed to the runtime on every run.
    pub(crate) host_secrets: Vec<EnvBinding>,
    pub(crate) endpoints: crate::EndpointPolicy,
    pub(crate) profile: Profile,
    pub(crate) statics: Breakdown,
    pub(crate) migrations: Vec<SchemeMigration>,
    pub(crate) lease_ttl: Duration,
    pub(crate) teardown_budget: Duration,
    /// Prefix of lease owners: unique per agent instance, so two hosts never share one.
    pub(crate) instance: String,
    pub(crate) closed: AtomicBool,
    /// Runs in flight, with the switch that cancels each.
    pub(crate) runs: Mutex<HashMap<RunId, watch::Sender<bool>>>,
    pub(crate) runs_done: tokio::sync::Notify,
    /// Where approval requests go, unless a Thread handle says otherwise.
    pub(crate) approvals: Approvals,
    /// The leases kept between turns, with sticky leases on (and a store).
    pub(crate) sticky: Option<crate::sticky::Sticky>,
    /// The attachments kept for pre-warmed Threads' next runs.
    pub(crate) prewarmed: crate::prewarm::Slots,
    /// The steerers of the runs in flight, by Thread key.
    pub(crate) steering: crate::steer::Registry,
}

impl Agent {
    /// Starts building an agent around `driver`.
    pub fn builder(driver: Arc<dyn Driver>) -> AgentBuilder {
        AgentBuilder {
            driver,
            store: None,
            namespace: None,
            providers: Vec::new(),
            host_mcp: Vec::new(),
            host_secrets: Vec::new(),
            endpoints: crate::EndpointPolicy::default(),
            profile: Profile {
                identity: "default".to_owned(),
                ..Profile::default()
            },
            skills: Vec::new(),
            migrations: Vec::new(),
            lease_ttl: DEFAULT_LEASE_TTL,
            teardown_budget: DEFAULT_TEARDOWN_BUDGET,
            approvals: Approvals::default(),
            sticky_leases: false,
            #[cfg(feature = "tools")]
            tools: Registry::default(),
        }
    }

    /// A Thread handle for `key`: its runs continue the stored conversation when the
    /// configuration still matches, and otherwise start a new one. See [`Thread`].
    pub fn thread(&self, key: impl Into<String>) -> Thread {
        Thread::new(self.clone(), key.into())
    }

    /// The credential namespace that owns this agent's Threads (its driver's, or the one given
    /// to [`AgentBuilder::namespace`]), or `None` for an unscoped agent. See
    /// [`AgentBuilder::namespace`] for what it decides.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// One page of the stored Threads this agent may see: a namespaced agent lists only the
    /// records its namespace owns (whatever `query.namespace` says), an unscoped one lists as
    /// `query` asks. To list every namespace's Threads, a host asks its store
    /// ([`ThreadStore::list`]) directly.
    ///
    /// # Errors
    /// [`ThreadError::StoreRequired`] without a store; [`ThreadError::Store`] when the store
    /// refuses the query or fails.
    pub async fn list_threads(&self, query: ListQuery) -> Result<ListPage, ThreadError> {
        let store = self
            .inner
            .store
            .as_ref()
            .ok_or(ThreadError::StoreRequired)?;
        let mut query = query;
        if let Some(namespace) = &self.inner.namespace {
            query.namespace = Some(namespace.clone());
        }
        store.list(&query).await.map_err(ThreadError::Store)
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Closes the agent: refuses new runs, cancels runs in flight and waits for their
    /// teardown (bounded by the teardown budget), closes every driver-owned process, and
    /// closes every provider ([`RunServiceProvider::close`]), and releases every Thread lease
    /// it kept between turns ([`AgentBuilder::sticky_leases`]). Idempotent: later calls only
    /// repeat the process sweep.
    ///
    /// This is the shutdown the agent promises. Dropping is only a backstop: when the last
    /// handle goes (clones, Threads and run streams hold one), the driver goes with it unless
    /// the host holds it too, and a CLI driver's pool then signals its idle resident processes
    /// (SIGTERM, then SIGKILL after the kill grace) without waiting; providers are dropped
    /// (a tool server of this crate's `tools` stops then) but never closed, and nothing is
    /// awaited.
    pub async fn close(&self) {
        let first = !self.inner.closed.swap(true, Ordering::SeqCst);
        let cancels: Vec<watch::Sender<bool>> = match self.inner.runs.lock() {
            Ok(runs) => runs.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        for cancel in &cancels {
            let _ = cancel.send(true);
        }
        // Kept leases first, before closing processes makes the renewal task release them too;
        // runs ending after this release their own.
        if let Some(sticky) = &self.inner.sticky {
            sticky.close().await;
        }
        // Processes first (a run stuck on a process is unblocked), then wait for teardown,
        // then again for anything a draining run started.
        self.close_processes().await;
        let budget = self.inner.teardown_budget.saturating_mul(2);
        let _ = tokio::time::timeout(budget, self.wait_for_runs()).await;
        self.close_processes().await;
        self.inner
            .prewarmed
            .release_all(self.inner.teardown_budget)
            .await;
        if first {
            self.close_providers().await;
        }
        if first {
            tracing::debug!(cancelled_runs = cancels.len(), "agent closed");
        }
    }

    /// Closes every provider, in reverse order, within one teardown budget.
    async fn close_providers(&self) {
        let close = async {
            for provider in self.inner.providers.iter().rev() {
                if provider.close().await.is_err() {
                    tracing::debug!("provider failed to close");
                }
            }
        };
        if tokio::time::timeout(self.inner.teardown_budget, close)
            .await
            .is_err()
        {
            tracing::warn!("closing providers exceeded the teardown budget");
        }
    }

    async fn close_processes(&self) {
        if let Some(lifecycle) = self.inner.driver.process_lifecycle() {
            let _ =
                tokio::time::timeout(self.inner.teardown_budget, lifecycle.close_processes()).await;
        }
    }

    async fn wait_for_runs(&self) {
        loop {
            let notified = self.inner.runs_done.notified();
            let empty = self.inner.runs.lock().map(|r| r.is_empty()).unwrap_or(true);
            if empty {
                return;
            }
            notified.await;
        }
    }
}

/// Builds an [`Agent`]. See [`Agent::builder`].
pub struct AgentBuilder {
    driver: Arc<dyn Driver>,
    store: Option<Arc<dyn ThreadStore>>,
    namespace: Option<CredentialNamespace>,
    providers: Vec<Arc<dyn RunServiceProvider>>,
    host_mcp: Vec<McpServer>,
    host_secrets: Vec<EnvBinding>,
    endpoints: crate::EndpointPolicy,
    profile: Profile,
    skills: Vec<(String, String)>,
    migrations: Vec<SchemeMigration>,
    lease_ttl: Duration,
    teardown_budget: Duration,
    approvals: Approvals,
    sticky_leases: bool,
    #[cfg(feature = "tools")]
    pub(crate) tools: Registry,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("providers", &self.providers.len())
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The thread store. Without one, Thread runs fail with
    /// [`ThreadError::StoreRequired`](crate::ThreadError::StoreRequired).
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The credential namespace that owns this agent's Threads, for a driver bound to none
    /// ([`Driver::credential_namespace`] is `None`). A driver bound to one (a CLI driver runs
    /// in its `RuntimeEnv`'s) sets it already; giving a different one here fails the build
    /// with [`BuildError::NamespaceConflict`].
    ///
    /// A Thread belongs to the namespace whose agent created it: the store keeps the owner
    /// with the record, and a run of an agent from another namespace (or of an unscoped
    /// agent, which has none) is refused with [`ThreadError::Foreign`] before the driver runs,
    /// never started over or archived. A Thread stored without an owner (before ownership was
    /// recorded) may only be resumed by a namespaced agent, which claims it
    /// ([`ThreadError::Unclaimed`] otherwise). Keys are global in one store: scope them per
    /// tenant anyway (see `docs/threads.md`, "Ownership").
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use agent::{Agent, ThreadError};
    /// use driver_spi::reference::ReferenceDriver;
    /// use thread_store::memory::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let agent_of = |tenant: &str| {
    ///     Agent::builder(Arc::new(ReferenceDriver::new()))
    ///         .store(store.clone())
    ///         .namespace(tenant.parse().unwrap())
    ///         .build()
    ///         .unwrap()
    /// };
    /// agent_of("user:alice").thread("alice/chat-1").run("hello").await?;
    /// let refused = agent_of("user:bob").thread("alice/chat-1").run("mine now").await;
    /// assert!(matches!(refused, Err(ThreadError::Foreign { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn namespace(mut self, namespace: CredentialNamespace) -> Self {
        self.namespace = Some(namespace);
        self
    }

    /// Adds a run-service provider (what attaches services to each run; not the model provider).
    /// Run-service providers attach in the order added; adding the same one (the same `Arc`)
    /// twice keeps the first.
    pub fn run_service(mut self, provider: Arc<dyn RunServiceProvider>) -> Self {
        // Compare data pointers only: vtable pointers of one type may differ across units.
        let ptr = Arc::as_ptr(&provider).cast::<()>();
        if !self
            .providers
            .iter()
            .any(|p| std::ptr::eq(Arc::as_ptr(p).cast::<()>(), ptr))
        {
            self.providers.push(provider);
        }
        self
    }

    /// Adds a run-service provider: the name of [`run_service`](Self::run_service) before
    /// issue 40.
    #[deprecated(
        note = "use `AgentBuilder::run_service`: \"provider\" also means the model provider"
    )]
    pub fn provider(self, provider: Arc<dyn RunServiceProvider>) -> Self {
        self.run_service(provider)
    }

    /// The endpoint policy: which network endpoints run services may point the runtime at
    /// (see [`EndpointPolicy`](crate::EndpointPolicy); any, by default). Checked on every run
    /// before anything launches.
    pub fn endpoint_policy(mut self, policy: crate::EndpointPolicy) -> Self {
        self.endpoints = policy;
        self
    }

    /// Declares an MCP server of the host's own. It is always compared exactly: no
    /// provider's compatibility tuple ever covers it. A server that takes a bearer token names
    /// its variable ([`McpServer::with_bearer_token_env`]) and the host binds it with
    /// [`secret_env`](Self::secret_env); [`build`](Self::build) refuses a bearer variable the
    /// host did not bind, so a server can never be handed the runtime's own credential.
    pub fn mcp_server(mut self, server: McpServer) -> Self {
        self.host_mcp.push(server);
        self
    }

    /// A secret binding of the host's own, handed to the runtime on every run (for example
    /// the bearer token of a server declared with [`mcp_server`](Self::mcp_server)). Its value
    /// is redacted from every event, result and error, and never stored; like a run service's
    /// binding, it may not set the runtime's loader, interpreter, endpoint or model key (a
    /// CLI driver refuses those).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent::Agent;
    /// use driver_spi::reference::ReferenceDriver;
    /// use run_service::{EnvBinding, McpServer};
    ///
    /// let docs = McpServer::streamable_http("docs", "http://127.0.0.1:4100/mcp")
    ///     .with_bearer_token_env("DOCS_TOKEN");
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
    ///     .mcp_server(docs.clone())
    ///     .secret_env(EnvBinding::new("DOCS_TOKEN", "host-token"))
    ///     .build();
    /// assert!(agent.is_ok());
    /// // Without the binding, the server's bearer variable is refused.
    /// assert!(Agent::builder(Arc::new(ReferenceDriver::new())).mcp_server(docs).build().is_err());
    /// ```
    pub fn secret_env(mut self, binding: EnvBinding) -> Self {
        self.host_secrets.push(binding);
        self
    }

    /// The model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.profile.model = Some(model.into());
        self
    }

    /// The instructions (system prompt addition).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.profile.instructions = Some(instructions.into());
        self
    }

    /// The workspace (working directory) of runs. It wins over the driver's own default: a CLI
    /// driver runs its process here, and in its `RuntimeEnv`'s cwd (the third argument of
    /// `RuntimeEnv::builder`, which also anchors the runtime's project files, such as
    /// `AGENTS.md`, in the environment's snapshots) only when no workspace is set. Part of
    /// every Thread's compatibility fingerprint: a Thread does not resume in another workspace.
    pub fn workspace(mut self, workspace: impl Into<String>) -> Self {
        self.profile.workspace = Some(workspace.into());
        self
    }

    /// The agent identity stored with every Thread (default `default`).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.profile.identity = identity.into();
        self
    }

    /// Declares a skill by name and revision.
    pub fn skill(mut self, name: impl Into<String>, revision: impl Into<String>) -> Self {
        self.skills.push((name.into(), revision.into()));
        self
    }

    /// Adds a profile resource (for example an instructions file the runtime reads), by name
    /// and content.
    pub fn profile_resource(mut self, name: impl Into<String>, content: impl Into<String>) -> Self {
        self.profile.resources.insert(name.into(), content.into());
        self
    }

    /// Accepts Threads stored under an older fingerprint scheme, for exactly this pair of
    /// identities.
    pub fn scheme_migration(mut self, migration: SchemeMigration) -> Self {
        self.migrations.push(migration);
        self
    }

    /// How long a Thread lease lives without renewal (default 30 s). Runs renew at a third.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Keeps a Thread's lease between turns while the driver's resident process holds the
    /// Thread (default off), renewed by each turn's finalize: a hot Thread's turn is one
    /// durable commit instead of two (acquire, then finalize-and-release). A driver that does
    /// not say which conversations it holds
    /// ([`ProcessLifecycle::holds_conversation`](driver_spi::ProcessLifecycle::holds_conversation))
    /// releases after every turn, as without. Kept leases are renewed off the turn path and
    /// released when the process no longer holds the Thread, when a run fails, and by
    /// [`Agent::close`]; other hosts get [`ThreadError::Busy`](crate::ThreadError::Busy)
    /// meanwhile.
    ///
    /// **Trade-off**: a host that crashes while it keeps a Thread holds it until the lease
    /// expires (up to one [`lease_ttl`](Self::lease_ttl)), not only when it crashes mid-turn.
    /// Fencing is unchanged: a host whose kept lease was lost writes nothing. See
    /// `docs/threads.md`, "Sticky leases".
    pub fn sticky_leases(mut self, on: bool) -> Self {
        self.sticky_leases = on;
        self
    }

    /// The time budget for one run's teardown (default 5 s): a hung provider cannot stall it.
    pub fn teardown_budget(mut self, budget: Duration) -> Self {
        self.teardown_budget = budget;
        self
    }

    /// What the runtime may do without asking (default: [`PermissionPolicy::default`]: the
    /// request's MCP tools only). Part of every Thread's compatibility fingerprint when it is
    /// not the default; [`Thread::with_permissions`](crate::Thread::with_permissions)
    /// overrides it per handle. A policy that asks needs a driver that declares approvals
    /// (else runs fail with [`Unsupported::Approvals`](driver_spi::Unsupported::Approvals)
    /// before anything starts) and a handler ([`approvals`](Self::approvals)); without one,
    /// every request is denied.
    pub fn permissions(mut self, permissions: PermissionPolicy) -> Self {
        self.profile.permissions = permissions;
        self
    }

    /// Where approval requests go (the handler and the approval timeout);
    /// [`Thread::with_approvals`](crate::Thread::with_approvals) overrides it per handle.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use agent::{Agent, ThreadEventKind};
    /// use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
    /// use driver_spi::{Action, ApprovalTicket, Approvals, PermissionPolicy};
    /// use thread_store::memory::MemoryStore;
    ///
    /// let backend = ReferenceBackend::new();
    /// backend.push_behavior(Behavior::UseTool {
    ///     action: Action::Write,
    ///     tool: "write_file".into(),
    ///     arguments: r#"{"path":"notes.txt"}"#.into(),
    /// });
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend.clone())))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .permissions(PermissionPolicy::default().ask(Action::Write))
    ///     .approvals(Approvals::new(Arc::new(|ticket: ApprovalTicket| {
    ///         // A real host would show `ticket.request()` to a person; this one approves.
    ///         let _ = ticket.approve();
    ///     })))
    ///     .build()?;
    /// let result = agent.thread("notes").run("write the notes").await?;
    /// assert_eq!(backend.performed(), ["write_file"]);
    /// # let _ = result;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// The namespace that owns the agent's Threads: the driver's, the builder's, or none; both
    /// given and different is a conflict.
    fn owning_namespace(&self) -> Result<Option<String>, BuildError> {
        let driver = self
            .driver
            .credential_namespace()
            .map(CredentialNamespace::new)
            .transpose()
            .map_err(BuildError::DriverNamespace)?;
        match (driver, &self.namespace) {
            (Some(driver), Some(builder)) if driver != *builder => {
                Err(BuildError::NamespaceConflict {
                    driver: ShortDigest::of_str(driver.as_str()),
                    builder: ShortDigest::of_str(builder.as_str()),
                })
            }
            (Some(driver), _) => Ok(Some(driver.into())),
            (None, builder) => Ok(builder.clone().map(String::from)),
        }
    }

    /// Validates the configuration and builds the agent. No I/O happens here.
    pub fn build(mut self) -> Result<Agent, BuildError> {
        self.driver.validate_config()?;
        let namespace = self.owning_namespace()?;
        validate_run(&[], &self.host_mcp).map_err(BuildError::HostMcp)?;
        let bound: Vec<&str> = self.host_secrets.iter().map(EnvBinding::name).collect();
        check_host_bearers(&self.host_mcp, &bound).map_err(BuildError::HostMcp)?;
        let identity = &self.profile.identity;
        if identity.trim().is_empty() || identity.chars().any(char::is_control) {
            return Err(BuildError::Identity);
        }
        let mut skills = BTreeMap::new();
        for (name, revision) in std::mem::take(&mut self.skills) {
            if name.is_empty() || revision.is_empty() || skills.insert(name, revision).is_some() {
                return Err(BuildError::Skill);
            }
        }
        self.profile.skills = skills;
        // Registered tools become one more ordinary provider, attached after the others.
        #[cfg(feature = "tools")]
        if let Some(provider) = std::mem::take(&mut self.tools).into_provider()? {
            self.providers.push(provider);
        }
        let driver_info = DriverInfo::of(self.driver.as_ref());
        let statics = static_components(&driver_info, &self.profile);
        let lease_ttl = self.lease_ttl.max(Duration::from_millis(100));
        let sticky = self
            .store
            .as_ref()
            .filter(|_| self.sticky_leases)
            .map(|store| crate::sticky::Sticky::new(store.clone(), self.driver.clone(), lease_ttl));
        Ok(Agent {
            inner: Arc::new(Inner {
                driver: self.driver,
                driver_info,
                store: self.store,
                namespace,
                providers: self.providers,
                host_mcp: self.host_mcp,
                host_secrets: self.host_secrets,
                endpoints: self.endpoints,
                profile: self.profile,
                statics,
                migrations: self.migrations,
                lease_ttl,
                teardown_budget: self.teardown_budget,
                instance: format!("agent-{}", uuid::Uuid::now_v7().simple()),
                closed: AtomicBool::new(false),
                runs: Mutex::new(HashMap::new()),
                runs_done: tokio::sync::Notify::new(),
                approvals: self.approvals,
                sticky,
                prewarmed: crate::prewarm::Slots::default(),
                steering: crate::steer::Registry::default(),
            }),
        })
    }
}
