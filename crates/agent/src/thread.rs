//! [`Thread`]: a durable conversation under a key.

use compat_fingerprint::Fingerprint;
use driver_spi::{Approvals, OutputSchema, PermissionPolicy};
use run_service::RunId;
use thread_store::{Query, RecordId, Timestamp};
use tokio::sync::{mpsc, oneshot, watch};

use crate::explain::Explanation;
use crate::pipeline;
use crate::{Agent, RunResult, RunStream, ThreadError};

/// What a Thread does when it has a stored conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Resume when compatible, otherwise archive and start a new conversation.
    ContinueOrStart,
    /// Resume, or fail; never start over.
    ResumeOnly,
}

/// A durable conversation under a key, created by [`Agent::thread`].
///
/// - By default a run **continues or starts**: it resumes the stored conversation when the
///   stored compatibility fingerprint matches the current configuration, and otherwise
///   archives it and starts a new one ([`SessionOutcome::Restarted`](crate::SessionOutcome)
///   says what changed).
/// - [`resume_only`](Self::resume_only) refuses instead of starting over:
///   [`ThreadError::NotFound`], [`ThreadError::CheckpointMissing`] or
///   [`ThreadError::Incompatible`], always before the driver runs.
/// - Either way, a Thread another credential namespace owns is refused with
///   [`ThreadError::Foreign`] before the driver runs, never started over or archived (see
///   [`AgentBuilder::namespace`](crate::AgentBuilder::namespace)).
/// - [`fork`](Self::fork) branches a new key from this Thread's conversation.
///
/// Every decision compares the run's **session view**, so a provider that opted into
/// [`RunServiceCompatibility`](run_service::RunServiceCompatibility) may hand out a new port
/// and token on every restart, while the driver still receives the current concrete ones.
#[derive(Debug, Clone)]
pub struct Thread {
    pub(crate) agent: Agent,
    pub(crate) key: String,
    pub(crate) mode: Mode,
    pub(crate) fork_from: Option<String>,
    /// Overrides the agent's permission policy for this handle's runs.
    pub(crate) permissions: Option<PermissionPolicy>,
    /// Overrides the agent's approvals for this handle's runs.
    pub(crate) approvals: Option<Approvals>,
    /// The output schema of this handle's runs.
    pub(crate) output_schema: Option<OutputSchema>,
}

/// The stored resume handle of a Thread, for audit. Carries no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadCheckpoint {
    /// The record id.
    pub record_id: RecordId,
    /// The provider's session id.
    pub resume_id: String,
    /// The provider's display id, if any.
    pub display_id: Option<String>,
    /// The stored compatibility fingerprint.
    pub fingerprint: Fingerprint,
    /// The fingerprint scheme it was written under.
    pub scheme_version: u32,
    /// The driver type that wrote it.
    pub driver_type: String,
    /// When the record was last written.
    pub updated_at: Timestamp,
}

impl Thread {
    pub(crate) fn new(agent: Agent, key: String) -> Self {
        Self {
            agent,
            key,
            mode: Mode::ContinueOrStart,
            fork_from: None,
            permissions: None,
            approvals: None,
            output_schema: None,
        }
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Refuses instead of starting over: a run resumes the stored conversation or fails.
    pub fn resume_only(mut self) -> Self {
        self.mode = Mode::ResumeOnly;
        self
    }

    /// A handle whose first run branches `new_key` from this Thread's current conversation.
    /// The parent must be compatible with the current configuration (compared on the session
    /// view, like a resume), and `new_key` must be free ([`ThreadError::AlreadyExists`]).
    /// Continue the fork afterwards with `agent.thread(new_key)`.
    pub fn fork(&self, new_key: impl Into<String>) -> Thread {
        Thread {
            agent: self.agent.clone(),
            key: new_key.into(),
            mode: Mode::ContinueOrStart,
            fork_from: Some(self.key.clone()),
            permissions: self.permissions,
            approvals: self.approvals.clone(),
            output_schema: self.output_schema.clone(),
        }
    }

    /// Runs of this handle answer as data matching `schema` ([`RunResult::structured`]): the
    /// driver passes it to its runtime natively ([`SchemaDelivery::Native`], refused with
    /// [`Unsupported::StructuredOutput`](driver_spi::Unsupported::StructuredOutput) by a
    /// driver without structured output), or it goes into the prompt
    /// ([`SchemaDelivery::PromptOnly`]). Either way the core redacts the final answer (every
    /// string and object key, with the run's redactor, as the output text), checks the
    /// redacted answer against the schema, and fails the run with [`ThreadError::Output`]
    /// (nothing persisted) when it is not that data. A redaction can make an answer break
    /// the schema (a known secret echoed where the schema wants a short string or one of an
    /// enum's values); that is the same [`OutputError::Mismatch`](crate::OutputError::Mismatch)
    /// as any other. The schema is per call: it is not part of the Thread's compatibility
    /// fingerprint.
    ///
    /// [`SchemaDelivery::Native`]: driver_spi::SchemaDelivery::Native
    /// [`SchemaDelivery::PromptOnly`]: driver_spi::SchemaDelivery::PromptOnly
    pub fn with_output_schema(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Runs one prompt whose answer is a `T`: its JSON Schema derived by `schemars`, delivered
    /// natively, the answer redacted and checked against it as for
    /// [`with_output_schema`](Self::with_output_schema), and deserialized (so a known secret
    /// the model echoed reaches `T` as [`REDACTED`](runtime_env::REDACTED)).
    ///
    /// # The schema each runtime gets
    /// The derived schema is what the answer is checked against. A driver whose runtime's
    /// structured output wants another form sends that form: Codex sends OpenAI's strict form
    /// ([`OutputSchema::strict`](driver_spi::OutputSchema::strict): closed objects, every
    /// property required, so an `Option` field is answered `null`), and refuses a type with
    /// no strict form ([`Unsupported::StrictOutputSchema`](driver_spi::Unsupported), such as
    /// a `HashMap` field, whose text says what to change). No `#[serde(deny_unknown_fields)]`
    /// is needed.
    ///
    /// # Errors
    /// As [`run`](Self::run); [`ThreadError::Output`] when the answer is not JSON, breaks the
    /// schema ([`OutputError::Mismatch`](crate::OutputError::Mismatch): the rule's location in
    /// the schema and its keyword, never a key or a value of the answer) or does not
    /// deserialize into `T`; [`ThreadError::Unsupported`] before anything runs when the
    /// runtime's native mode cannot express `T`'s schema.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use agent::Agent;
    /// use driver_spi::reference::{Behavior, ReferenceBackend, ReferenceDriver};
    /// use thread_store::memory::MemoryStore;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict {
    ///     pass: bool,
    ///     reason: String,
    /// }
    ///
    /// let backend = ReferenceBackend::new();
    /// backend.push_behavior(Behavior::Answer(r#"{"pass":true,"reason":"tests pass"}"#.into()));
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::with_backend(backend)))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .build()?;
    /// let (verdict, result) = agent.thread("review").run_as::<Verdict>("Judge the change.").await?;
    /// assert!(verdict.pass);
    /// assert_eq!(result.structured.unwrap()["reason"], "tests pass");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_as<T>(&self, prompt: impl Into<String>) -> Result<(T, RunResult), ThreadError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let mut schema = serde_json::to_value(schemars::schema_for!(T))
            .map_err(|_| ThreadError::Output(crate::OutputError::InvalidSchema))?;
        // The draft is the validators' default; naming it only risks a CLI whose validator
        // does not know that draft dropping the schema.
        if let Some(map) = schema.as_object_mut() {
            map.remove("$schema");
        }
        let result = self
            .clone()
            .with_output_schema(OutputSchema::new(schema))
            .run(prompt)
            .await?;
        let value = result
            .structured
            .clone()
            .ok_or(ThreadError::Output(crate::OutputError::NotJson))?;
        let typed = serde_json::from_value(value)
            .map_err(|_| ThreadError::Output(crate::OutputError::Type))?;
        Ok((typed, result))
    }

    /// Runs of this handle use this permission policy instead of the agent's
    /// ([`AgentBuilder::permissions`](crate::AgentBuilder::permissions)). The policy is part of
    /// the Thread's compatibility fingerprint: a stored conversation started under another
    /// policy does not resume under this one (a resume-only handle refuses).
    pub fn with_permissions(mut self, permissions: PermissionPolicy) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Runs of this handle send approval requests here instead of to the agent's
    /// ([`AgentBuilder::approvals`](crate::AgentBuilder::approvals)).
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The permission policy this handle's runs use.
    pub fn permissions(&self) -> PermissionPolicy {
        self.permissions
            .unwrap_or(self.agent.inner.profile.permissions)
    }

    /// The approvals this handle's runs use, named after this Thread.
    pub(crate) fn approvals(&self) -> Approvals {
        self.approvals
            .clone()
            .unwrap_or_else(|| self.agent.inner.approvals.clone())
            .with_thread(self.key.clone())
    }

    /// The stored resume handle, or `None` when nothing is stored.
    ///
    /// # Errors
    /// As a run would refuse the record: [`ThreadError::Foreign`] when another credential
    /// namespace owns it, [`ThreadError::Unclaimed`] when it has no owner and this agent has a
    /// namespace; and [`ThreadError::StoreRequired`], [`ThreadError::InvalidKey`] or
    /// [`ThreadError::Store`].
    pub async fn checkpoint(&self) -> Result<Option<ThreadCheckpoint>, ThreadError> {
        let store = self
            .agent
            .inner
            .store
            .as_ref()
            .ok_or(ThreadError::StoreRequired)?;
        pipeline::check_key(&self.key)?;
        let record = store
            .resolve(&Query::key(self.key.clone()))
            .await
            .map_err(ThreadError::Store)?;
        if let Some(record) = &record {
            pipeline::check_readable(self, record)?;
        }
        Ok(record.map(|r| ThreadCheckpoint {
            record_id: r.id,
            resume_id: r.state.resume_id,
            display_id: r.state.display_id,
            fingerprint: r.compatibility.fingerprint,
            scheme_version: r.compatibility.scheme_version,
            driver_type: r.driver_type,
            updated_at: r.updated_at,
        }))
    }

    /// What a run of this Thread (with its mode and fork parent) would do now, decided by the
    /// same code a run uses, without a prompt: the providers attach and detach as for a run,
    /// the attachments are validated, the endpoint policy applies, and the stored record is
    /// resolved, judged and its checkpoint decoded. It takes no lease, does not run the
    /// driver and writes nothing.
    ///
    /// `Ok` says what the run would do; `Err` is exactly the error the run would fail with
    /// before its driver runs (`Incompatible` names the drifted components). The stored
    /// record may change before a later run; the run decides again, under its lease.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agent::{Agent, Verdict};
    /// # use driver_spi::reference::ReferenceDriver;
    /// # use thread_store::memory::MemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let agent = Agent::builder(Arc::new(ReferenceDriver::new()))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .build()
    ///     .unwrap();
    /// let thread = agent.thread("support/42");
    /// assert!(matches!(thread.explain().await.unwrap().verdict, Verdict::Start { replaces: None, .. }));
    /// thread.run("hello").await.unwrap();
    /// assert!(matches!(thread.explain().await.unwrap().verdict, Verdict::Resume { .. }));
    /// # }
    /// ```
    pub async fn explain(&self) -> Result<Explanation, ThreadError> {
        let run_id = new_run_id();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let registration = self.agent.register(run_id.clone(), cancel_tx)?;
        let explained = pipeline::explain(self, &run_id, cancel_rx).await;
        drop(registration);
        explained
    }

    /// Runs one prompt to completion.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunResult, ThreadError> {
        let run_id = new_run_id();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let registration = self.agent.register(run_id.clone(), cancel_tx)?;
        let result = pipeline::execute(self, prompt.into(), run_id, tx, cancel_rx).await;
        drop(registration);
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        result.map(|mut r| {
            r.events = events;
            r
        })
    }

    /// Starts one prompt and returns its event stream; [`RunStream::result`] gives the
    /// result. Needs a Tokio runtime (the run is spawned onto it).
    pub fn stream(&self, prompt: impl Into<String>) -> Result<RunStream, ThreadError> {
        let run_id = new_run_id();
        let (tx, rx) = mpsc::unbounded_channel();
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let registration = self.agent.register(run_id.clone(), cancel_tx.clone())?;
        let (result_tx, result_rx) = oneshot::channel();
        let thread = self.clone();
        let prompt = prompt.into();
        let id = run_id.clone();
        tokio::spawn(async move {
            let result = pipeline::execute(&thread, prompt, id, tx, cancel_rx).await;
            drop(registration);
            let _ = result_tx.send(result);
        });
        Ok(RunStream::new(run_id, rx, result_rx, cancel_tx))
    }
}

fn new_run_id() -> RunId {
    RunId::new(format!("run-{}", uuid::Uuid::now_v7().simple()))
}

/// Keeps a run in the agent's registry while it is in flight.
pub(crate) struct Registration {
    agent: Agent,
    run_id: RunId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut runs) = self.agent.inner.runs.lock() {
            runs.remove(&self.run_id);
        }
        self.agent.inner.runs_done.notify_waiters();
    }
}

impl Agent {
    pub(crate) fn register(
        &self,
        run_id: RunId,
        cancel: watch::Sender<bool>,
    ) -> Result<Registration, ThreadError> {
        let mut runs = self.inner.runs.lock().map_err(|_| ThreadError::Closed)?;
        // Checked under the lock, so close() sees every admitted run.
        if self.is_closed() {
            return Err(ThreadError::Closed);
        }
        runs.insert(run_id.clone(), cancel);
        Ok(Registration {
            agent: self.clone(),
            run_id,
        })
    }
}
