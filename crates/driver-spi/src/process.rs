//! Persistent runtime processes: the [`ProcessLifecycle`] capability and private, in-memory
//! [`ProcessSignature`]s that decide whether a live process may serve the next prompt.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use compat_fingerprint::Encoder;
use run_service::{EnvBinding, McpServer, ServiceRef};
use secrecy::{ExposeSecret, SecretString};

use crate::{DriverError, Request};

/// The process-lifecycle capability of a driver that keeps runtime processes alive across
/// turns ([`Capabilities::persistent_processes`](crate::Capabilities::persistent_processes)).
///
/// # Contract
/// - [`close_processes`](Self::close_processes) closes every process the driver owns, waits
///   for them to exit, and is idempotent: a second call succeeds and does nothing.
/// - A later run may spawn new processes; closing is not a shutdown of the driver.
/// - A live process serves a prompt only if its [`ProcessSignature`] equals the signature of
///   the current request's exact effective configuration. Otherwise it is replaced **before**
///   the prompt is sent. A prompt is delivered at most once: a driver may fall back to a
///   fresh process only before the prompt was written, never replay it.
///
/// # Which conversations a live process holds (optional)
/// [`holds_conversation`](Self::holds_conversation) and [`changes`](Self::changes) let a host
/// keep a Thread's lease between turns (the agent's sticky leases) exactly as long as a
/// resident process holds the Thread's conversation. Both default to "no": a driver that
/// does not answer them keeps today's behaviour (the lease is released after every turn).
#[async_trait::async_trait]
pub trait ProcessLifecycle: Send + Sync {
    /// Closes every process the driver owns.
    async fn close_processes(&self) -> Result<(), DriverError>;

    /// Whether a live process the driver owns holds the conversation `session_id` (the
    /// [`SessionState::resume_id`](crate::SessionState::resume_id) of its checkpoint) now, so
    /// that its next turn goes to that process. A read-only look: it starts, ends and
    /// reserves nothing, and the answer may be stale by the time it is read. The default,
    /// `false`, means "not known to be held".
    fn holds_conversation(&self, session_id: &str) -> bool {
        let _ = session_id;
        false
    }

    /// A generation number the driver bumps whenever a process it owns ends (idle eviction,
    /// recycling, death, close), so a host watching it can ask
    /// [`holds_conversation`](Self::holds_conversation) again at once rather than at its next
    /// poll. `None` (the default): no notification; a host polls.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// A private fingerprint of the exact effective configuration of a runtime process:
/// command, arguments, cwd, env **including secret values**, MCP config, services, model and
/// flags.
///
/// It is a blake3 keyed hash under a key drawn at random once per OS process, so it means
/// nothing outside this process and cannot be tested against guessed secrets offline. It is
/// held in memory only: it has no `Display`, no `Serialize`, no accessor for its bytes, and
/// its `Debug` is `ProcessSignature(..)`. Equality is constant-time.
///
/// ```
/// use driver_spi::{ProcessAction, ProcessSignature};
/// use run_service::EnvBinding;
///
/// let sig = |token: &str| {
///     ProcessSignature::builder()
///         .command("codex", ["app-server"])
///         .secret_env([&EnvBinding::new("UI_TOKEN", token.to_owned())])
///         .finish()
/// };
/// let live = sig("token-a");
/// assert_eq!(ProcessSignature::decide(Some(&live), &sig("token-a")), ProcessAction::Reuse);
/// assert_eq!(ProcessSignature::decide(Some(&live), &sig("token-b")), ProcessAction::Replace);
/// assert_eq!(format!("{live:?}"), "ProcessSignature(..)");
/// // What changed, by component name (never a value), for a pool's recycle reason.
/// assert_eq!(sig("token-b").changed_components(&live), ["secret_env:UI_TOKEN"]);
/// ```
#[derive(Clone)]
pub struct ProcessSignature {
    /// The keyed hash of the whole configuration: what equality compares.
    whole: blake3::Hash,
    /// A keyed hash per component (`command`, `cwd`, `env:NAME`, `secret_env:NAME`, `mcp`,
    /// `model`, a driver component's name, …), in name order, to name what changed.
    parts: Vec<(String, blake3::Hash)>,
}

impl PartialEq for ProcessSignature {
    /// Constant-time, over the whole configuration.
    fn eq(&self, other: &Self) -> bool {
        self.whole == other.whole
    }
}

impl Eq for ProcessSignature {}

impl fmt::Debug for ProcessSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProcessSignature(..)")
    }
}

/// What to do with a runtime process before sending the next prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcessAction {
    /// No live process: spawn one.
    Spawn,
    /// The live process has the wanted signature: send the prompt to it.
    Reuse,
    /// The live process has another signature: close it, spawn a new one, then send.
    Replace,
}

impl ProcessSignature {
    /// A builder for a signature.
    pub fn builder() -> ProcessSignatureBuilder {
        ProcessSignatureBuilder::default()
    }

    /// The action for a live process with signature `live` (if any) when the next prompt
    /// needs `wanted`.
    pub fn decide(live: Option<&ProcessSignature>, wanted: &ProcessSignature) -> ProcessAction {
        match live {
            None => ProcessAction::Spawn,
            Some(live) if live == wanted => ProcessAction::Reuse,
            Some(_) => ProcessAction::Replace,
        }
    }

    /// The names of the components that differ between `self` and `other` (added, removed
    /// or changed), in name order: `command`, `args`, `cwd`, `env:NAME`, `secret_env:NAME`,
    /// `mcp`, `services`, `model`, `flags`, or a driver component's name. Names are the
    /// builder's and the variables' names, never a value; empty when the signatures are equal.
    /// A process pool logs them as the reason it recycles a process.
    pub fn changed_components(&self, other: &ProcessSignature) -> Vec<String> {
        if self == other {
            return Vec::new();
        }
        let mut changed: Vec<String> = Vec::new();
        let (mut a, mut b) = (self.parts.iter().peekable(), other.parts.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some((name, _)), None) | (None, Some((name, _))) => {
                    changed.push(name.clone());
                    a.next_if(|(n, _)| n == name);
                    b.next_if(|(n, _)| n == name);
                }
                (Some((na, ha)), Some((nb, hb))) => match na.cmp(nb) {
                    std::cmp::Ordering::Less => {
                        changed.push(na.clone());
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        changed.push(nb.clone());
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if ha != hb {
                            changed.push(na.clone());
                        }
                        a.next();
                        b.next();
                    }
                },
            }
        }
        changed
    }
}

/// Collects the exact effective configuration of a runtime process and hashes it into a
/// [`ProcessSignature`].
///
/// Everything is kept as given (secret values as [`SecretString`]) until
/// [`finish`](Self::finish); `Debug` redacts secret values. Env entries are a map (order does
/// not matter, a later value for a name wins); arguments, flags, MCP servers and services are
/// taken in order.
#[derive(Debug, Clone, Default)]
pub struct ProcessSignatureBuilder {
    command: Option<String>,
    args: Vec<String>,
    cwd: Option<String>,
    env: BTreeMap<String, String>,
    secret_env: BTreeMap<String, SecretString>,
    mcp: Vec<McpServer>,
    services: Vec<ServiceRef>,
    model: Option<String>,
    flags: Vec<String>,
    components: BTreeMap<&'static str, String>,
}

impl ProcessSignatureBuilder {
    /// The program and its arguments.
    pub fn command<I, S>(mut self, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.command = Some(command.into());
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The working directory.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// One plain environment variable.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Secret environment bindings, by value.
    pub fn secret_env<'a>(mut self, bindings: impl IntoIterator<Item = &'a EnvBinding>) -> Self {
        for binding in bindings {
            self.secret_env
                .insert(binding.name().to_owned(), binding.value().clone());
        }
        self
    }

    /// The MCP servers the process is configured with.
    pub fn mcp<'a>(mut self, servers: impl IntoIterator<Item = &'a McpServer>) -> Self {
        self.mcp.extend(servers.into_iter().cloned());
        self
    }

    /// The run services the process is told about.
    pub fn services<'a>(mut self, services: impl IntoIterator<Item = &'a ServiceRef>) -> Self {
        self.services.extend(services.into_iter().cloned());
        self
    }

    /// The model.
    pub fn model(mut self, model: Option<&str>) -> Self {
        self.model = model.map(str::to_owned);
        self
    }

    /// One flag (ordered).
    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.push(flag.into());
        self
    }

    /// A named driver-specific component (sandbox mode, settings digest, binary digest).
    pub fn component(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.components.insert(name, value.into());
        self
    }

    /// Everything process-relevant in a request: workspace as cwd (unless set), the runtime
    /// secret env by value, services, MCP servers, model, instructions, the permission policy
    /// and the profile's exact fingerprint.
    pub fn request(mut self, request: &Request) -> Self {
        if self.cwd.is_none() {
            self.cwd = request.workspace.clone();
        }
        self = self
            .secret_env(&request.runtime.secret_env)
            .services(&request.runtime.services)
            .mcp(&request.mcp)
            .model(request.model.as_deref())
            .component("profile.exact", request.profile.exact.to_string())
            .component("permissions", request.permissions.to_string());
        if let Some(instructions) = &request.instructions {
            self = self.component("instructions", instructions.clone());
        }
        self
    }

    /// The signature: a keyed hash of the canonical encoding under the per-process key, and
    /// one per component (so [`ProcessSignature::changed_components`] can name what changed).
    pub fn finish(&self) -> ProcessSignature {
        ProcessSignature {
            whole: self.whole(),
            parts: self.parts(),
        }
    }

    /// A keyed hash per component, in name order.
    fn parts(&self) -> Vec<(String, blake3::Hash)> {
        let mut parts: Vec<(String, blake3::Hash)> = Vec::new();
        let mut part = |name: String, encode: &dyn Fn(&mut Encoder)| {
            let mut enc = Encoder::new();
            enc.str(&name);
            encode(&mut enc);
            let mut bytes = enc.into_bytes();
            parts.push((name, blake3::keyed_hash(process_key(), &bytes)));
            zeroize::Zeroize::zeroize(&mut bytes);
        };
        part("command".into(), &|e| {
            e.option(self.command.as_deref(), |e, c| e.str(c));
        });
        part("args".into(), &|e| e.list(&self.args, |e, a| e.str(a)));
        part("cwd".into(), &|e| {
            e.option(self.cwd.as_deref(), |e, c| e.str(c));
        });
        for (name, value) in &self.env {
            part(format!("env:{name}"), &|e| e.str(value));
        }
        for (name, value) in &self.secret_env {
            part(format!("secret_env:{name}"), &|e| {
                e.str(value.expose_secret())
            });
        }
        part("mcp".into(), &|e| e.list(&self.mcp, encode_mcp));
        part("services".into(), &|e| {
            e.list(&self.services, encode_service)
        });
        part("model".into(), &|e| {
            e.option(self.model.as_deref(), |e, m| e.str(m));
        });
        part("flags".into(), &|e| e.list(&self.flags, |e, f| e.str(f)));
        for (name, value) in &self.components {
            part((*name).to_owned(), &|e| e.str(value));
        }
        parts.sort_by(|x, y| x.0.cmp(&y.0));
        parts
    }

    /// The keyed hash of the whole canonical encoding.
    fn whole(&self) -> blake3::Hash {
        let mut enc = Encoder::new();
        enc.record(|r| {
            r.field(1, |e| e.str(SIGNATURE_VERSION));
            r.field(2, |e| e.option(self.command.as_deref(), |e, c| e.str(c)));
            r.field(3, |e| e.list(&self.args, |e, a| e.str(a)));
            r.field(4, |e| e.option(self.cwd.as_deref(), |e, c| e.str(c)));
            r.field(5, |e| e.map(&self.env, |e, k| e.str(k), |e, v| e.str(v)));
            r.field(6, |e| {
                e.map(
                    &self.secret_env,
                    |e, k| e.str(k),
                    |e, v| e.str(v.expose_secret()),
                )
            });
            r.field(7, |e| e.list(&self.mcp, encode_mcp));
            r.field(8, |e| e.list(&self.services, encode_service));
            r.field(9, |e| e.option(self.model.as_deref(), |e, m| e.str(m)));
            r.field(10, |e| e.list(&self.flags, |e, f| e.str(f)));
            r.field(11, |e| {
                e.map(&self.components, |e, k| e.str(k), |e, v| e.str(v))
            });
        });
        let mut bytes = enc.into_bytes();
        let hash = blake3::keyed_hash(process_key(), &bytes);
        // The encoding holds secret values in the clear; wipe it before it is freed. (Copies
        // left by the buffer's growth are not reachable from here; see docs/security.md.)
        zeroize::Zeroize::zeroize(&mut bytes);
        hash
    }
}

const SIGNATURE_VERSION: &str = "agent-sdk 2026-11-30 driver-spi process-signature v1";

fn encode_mcp(e: &mut Encoder, server: &McpServer) {
    // serde_json of an McpServer has no secrets (bearer tokens travel as env-var names) and
    // is exact; the signature is never persisted, so format stability does not matter here.
    e.str(&serde_json::to_string(server).unwrap_or_default());
}

fn encode_service(e: &mut Encoder, service: &ServiceRef) {
    // Serializes secret env names only; their values are in the secret env map.
    e.str(&serde_json::to_string(service).unwrap_or_default());
}

/// The random key of this OS process, drawn once.
fn process_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            key = fallback_key();
        }
        key
    })
}

/// Used only if the OS random source fails: a key from values that differ between processes.
/// Signatures stay private either way; this only weakens their unlinkability.
fn fallback_key() -> [u8; 32] {
    let mut hasher =
        blake3::Hasher::new_derive_key("agent-sdk 2026-11-30 driver-spi fallback-process-key v1");
    hasher.update(&std::process::id().to_le_bytes());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.update(&now.to_le_bytes());
    let local = 0u8;
    hasher.update(&std::ptr::from_ref(&local).addr().to_le_bytes());
    hasher.update(format!("{:?}", std::thread::current().id()).as_bytes());
    *hasher.finalize().as_bytes()
}
