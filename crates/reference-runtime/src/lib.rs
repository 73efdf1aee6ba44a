//! The SDK's reference runtime with its sessions on disk: `agentctl`'s default runtime.
//!
//! The reference driver (`driver_spi::reference`) simulates a provider in process; its
//! sessions live in a [`SessionTable`]. This crate supplies the table a real CLI would have:
//! [`FileSessions`] keeps one JSON file per session in the runtime's state directory inside
//! a credential namespace (`runtime_env`), so a later process resumes, forks and rejects
//! exactly as one process does with the in-memory table. [`driver`] builds the reference
//! driver on it.
//!
//! ```
//! use std::sync::Arc;
//! use compat_fingerprint::{Fingerprint, Kind};
//! use driver_spi::{CollectingSink, Driver, ProfilePayload, Request, SessionContext};
//! use run_service::RunId;
//! use runtime_env::{CredentialNamespace, RuntimeEnv};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let base = tempfile::tempdir().unwrap();
//! let env = || {
//!     let namespace: CredentialNamespace = "user:alice".parse().unwrap();
//!     RuntimeEnv::builder(base.path().join("env"), namespace, base.path().to_path_buf())
//! };
//! const K: Kind = Kind::new("example 2026-12-02 profile v1");
//! let profile = ProfilePayload::new(Fingerprint::of(K, |e| e.str("a")), Fingerprint::of(K, |e| e.str("s")));
//! let sink = Arc::new(CollectingSink::new());
//!
//! // One process starts a session…
//! let first = reference_runtime::driver(env()).unwrap();
//! let response = first.run(Request::new(RunId::new("r1"), "hello", profile), sink.clone()).await.unwrap();
//! let state = response.persistable_checkpoint().unwrap().clone();
//! drop(first);
//!
//! // …and a driver of another process, on the same namespace, resumes it.
//! let second = reference_runtime::driver(env()).unwrap();
//! let resumed = Request::new(RunId::new("r2"), "again", profile)
//!     .with_session(SessionContext::continue_only(state));
//! let response = second.run(resumed, sink).await.unwrap();
//! assert_eq!(response.output, "reference turn 2: again [earlier: hello]");
//! # });
//! ```
//!
//! # Invariants
//! - Session files live under `$REFERENCE_AGENT_HOME/sessions` (the runtime's state directory
//!   in the namespace), 0600 in 0700 directories, written atomically under the namespace's
//!   config lock, so two processes never interleave a read-modify-write.
//! - A session id the table could not have issued (another shape, a path) is unknown, never a
//!   file name: a tampered stored state is rejected as an unknown session.
//! - Errors name the operation; the cause (an I/O error naming a path) is their source. A
//!   session file holds turn counts and the latest prompts, never a secret of the request.
//!
//! # What it does not do
//! - It does not simulate processes, requests or behaviours across processes: those stay in
//!   the backend of each process (`driver_spi::reference::ReferenceBackend`).
//! - It never removes session files on its own (a CLI's sessions outlive its runs); deleting
//!   them is how a test, or a user, makes a provider lose a session.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use driver_spi::reference::{
    ReferenceBackend, ReferenceDriver, ReferenceSession, SessionTable, SessionTableError,
};
use runtime_env::{
    IsolationMode, KeyringUse, McpMechanism, RuntimeDescriptor, RuntimeEnv, RuntimeEnvBuilder,
    SessionId,
};

/// What `runtime-env` must know about the reference runtime: its state variable and the
/// `sessions` directory inside it. It has no binary, no credential and no config file.
pub static DESCRIPTOR: RuntimeDescriptor = RuntimeDescriptor {
    name: "reference",
    program: "reference-agent",
    state_var: "REFERENCE_AGENT_HOME",
    state_subdir: ".reference-agent",
    state_dir_must_exist: false,
    private_subdirs: &[SESSIONS_DIR],
    sources: &[],
    credential_files: &[],
    api_key_vars: &[],
    endpoint_vars: &[],
    keyring: KeyringUse::Never,
    mcp: McpMechanism::InRequest,
    supported_modes: &[IsolationMode::InProcess, IsolationMode::Subprocess],
};

/// The directory of session files, relative to the state directory.
const SESSIONS_DIR: &str = "sessions";
/// Every id this table issues starts with it.
const ID_PREFIX: &str = "ref-";
/// Longest id accepted: the prefix and a generated 32-digit id, with room to spare.
const MAX_ID_LEN: usize = 64;

/// The reference driver whose sessions live in the environment `env` builds (which is made to
/// serve [`DESCRIPTOR`]), bound to its credential namespace
/// ([`Driver::credential_namespace`](driver_spi::Driver::credential_namespace)): the runtime
/// `agentctl --runtime reference` drives.
///
/// # Errors
/// [`runtime_env::Error`] when the environment cannot be built.
pub fn driver(env: RuntimeEnvBuilder) -> Result<ReferenceDriver, runtime_env::Error> {
    let env = Arc::new(env.runtimes([&DESCRIPTOR]).build()?);
    let namespace = env.namespace().as_str().to_owned();
    let sessions = FileSessions::new(env)?;
    Ok(
        ReferenceDriver::with_backend(ReferenceBackend::with_sessions(sessions))
            .with_credential_namespace(namespace),
    )
}

/// The reference runtime's sessions as files in a credential namespace: one
/// `sessions/<id>.json` per session, 0600. See the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct FileSessions {
    env: Arc<RuntimeEnv>,
}

impl FileSessions {
    /// The session table of the reference runtime in `env`.
    ///
    /// # Errors
    /// [`runtime_env::Error::UnknownRuntime`] when `env` does not serve [`DESCRIPTOR`].
    pub fn new(env: Arc<RuntimeEnv>) -> Result<Self, runtime_env::Error> {
        env.state_dir(&DESCRIPTOR)?;
        Ok(Self { env })
    }

    /// The directory holding the session files.
    pub fn dir(&self) -> PathBuf {
        // `new` checked that the environment serves the runtime.
        self.env
            .state_dir(&DESCRIPTOR)
            .map(|dir| dir.join(SESSIONS_DIR))
            .unwrap_or_default()
    }

    /// The session file of `id`, relative to the state directory; `None` for an id this
    /// table could not have issued.
    fn relative(id: &str) -> Option<String> {
        let tail = id.strip_prefix(ID_PREFIX)?;
        let well_formed = id.len() <= MAX_ID_LEN
            && !tail.is_empty()
            && tail
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        well_formed.then(|| format!("{SESSIONS_DIR}/{id}.json"))
    }

    fn read(&self, relative: &str) -> Result<Option<ReferenceSession>, SessionTableError> {
        let bytes = self
            .env
            .lock_config()
            .and_then(|lock| lock.read(&DESCRIPTOR, relative))
            .map_err(|e| SessionTableError::new("read a session", e))?;
        bytes
            .map(|bytes| serde_json::from_slice(&bytes))
            .transpose()
            .map_err(|e| SessionTableError::new("decode a session", e))
    }

    fn write(&self, relative: &str, session: &ReferenceSession) -> Result<(), SessionTableError> {
        let bytes = serde_json::to_vec(session)
            .map_err(|e| SessionTableError::new("encode a session", e))?;
        self.env
            .write_runtime_file(&DESCRIPTOR, relative, &bytes)
            .map(drop)
            .map_err(|e| SessionTableError::new("store a session", e))
    }
}

impl SessionTable for FileSessions {
    fn create(&mut self, session: &ReferenceSession) -> Result<String, SessionTableError> {
        let bytes = serde_json::to_vec(session)
            .map_err(|e| SessionTableError::new("encode a session", e))?;
        let lock = self
            .env
            .lock_config()
            .map_err(|e| SessionTableError::new("lock the sessions", e))?;
        // Under the lock no other process creates a session, so "absent" stays true until
        // the write; a generated id is fresh in all but astronomically rare cases.
        loop {
            let id = format!("{ID_PREFIX}{}", SessionId::generate().as_str());
            let Some(relative) = Self::relative(&id) else {
                return Err(SessionTableError::new(
                    "name a session",
                    "a generated id does not fit the id grammar",
                ));
            };
            let taken = lock
                .read(&DESCRIPTOR, &relative)
                .map_err(|e| SessionTableError::new("read a session", e))?;
            if taken.is_none() {
                lock.write(&DESCRIPTOR, &relative, &bytes)
                    .map_err(|e| SessionTableError::new("store a session", e))?;
                return Ok(id);
            }
        }
    }

    fn get(&self, id: &str) -> Result<Option<ReferenceSession>, SessionTableError> {
        match Self::relative(id) {
            Some(relative) => self.read(&relative),
            None => Ok(None),
        }
    }

    fn update(&mut self, id: &str, session: &ReferenceSession) -> Result<(), SessionTableError> {
        let relative = Self::relative(id)
            .ok_or_else(|| SessionTableError::new("store a session", "not an id of this table"))?;
        self.write(&relative, session)
    }

    fn remove(&mut self, id: &str) -> Result<bool, SessionTableError> {
        if Self::relative(id).is_none() {
            return Ok(false);
        }
        let _lock = self
            .env
            .lock_config()
            .map_err(|e| SessionTableError::new("lock the sessions", e))?;
        match std::fs::remove_file(self.dir().join(format!("{id}.json"))) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(SessionTableError::new("remove a session", e)),
        }
    }

    fn ids(&self) -> Result<Vec<String>, SessionTableError> {
        let entries = match std::fs::read_dir(self.dir()) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionTableError::new("list the sessions", e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| SessionTableError::new("list the sessions", e))?;
            let name = entry.file_name();
            let id = name.to_str().and_then(|n| n.strip_suffix(".json"));
            if let Some(id) = id.filter(|id| Self::relative(id).is_some()) {
                ids.push(id.to_owned());
            }
        }
        ids.sort();
        Ok(ids)
    }
}
