//! [`ReferenceConfig`]: what the reference driver is built with.

use run_service::EnvBinding;

#[cfg(doc)]
use super::{Behavior, ReferenceDriver};
#[cfg(doc)]
use crate::ConfigFingerprinter;

/// The construction config of a [`ReferenceDriver`]: what its
/// [`ConfigFingerprinter`] covers and its simulated processes run with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReferenceConfig {
    /// The simulated provider command.
    pub command: String,
    /// Flags passed to it.
    pub flags: Vec<String>,
    /// Default model, when the request sets none.
    pub model: Option<String>,
    /// Construction-time secret env (for example a provider API key).
    pub env: Vec<EnvBinding>,
    /// Whether a prompt `/tool <action> <tool> [arguments]` makes the run use that tool
    /// ([`Behavior::UseTool`]), and `/answer <text>` answer exactly the text
    /// ([`Behavior::Answer`]), when no behaviour is queued: a way to try the permission
    /// policy, approvals and structured output from a command line (`agentctl`). Not part of the config
    /// fingerprint: it changes what the simulated model does, not the runtime.
    pub prompt_tools: bool,
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        Self {
            command: "reference-agent".to_owned(),
            flags: Vec::new(),
            model: None,
            env: Vec::new(),
            prompt_tools: false,
        }
    }
}

impl ReferenceConfig {
    /// The default config: command `reference-agent`, nothing else.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the command.
    pub fn with_command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// Adds a flag.
    pub fn with_flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.push(flag.into());
        self
    }

    /// Sets the default model.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Adds a construction-time secret env binding.
    pub fn with_env(mut self, binding: EnvBinding) -> Self {
        self.env.push(binding);
        self
    }

    /// Turns prompt-scripted tool use on or off ([`prompt_tools`](Self::prompt_tools)).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// # use compat_fingerprint::{Fingerprint, Kind};
    /// use driver_spi::reference::{ReferenceConfig, ReferenceDriver};
    /// use driver_spi::{Action, CollectingSink, Driver, PermissionPolicy, ProfilePayload, Request};
    /// use run_service::RunId;
    /// # const K: Kind = Kind::new("example 2026-12-03 profile v1");
    /// # let fp = Fingerprint::of(K, |e| e.str("p"));
    ///
    /// let driver = ReferenceDriver::new().with_config(ReferenceConfig::new().with_prompt_tools(true));
    /// let request = Request::new(RunId::new("r"), "/tool write notes {\"path\":\"a.txt\"}", ProfilePayload::new(fp, fp))
    ///     .with_permissions(PermissionPolicy::default().allow(Action::Write));
    /// driver.run(request, Arc::new(CollectingSink::new())).await.unwrap();
    /// assert_eq!(driver.backend().performed(), ["notes"]);
    /// # });
    /// ```
    pub fn with_prompt_tools(mut self, on: bool) -> Self {
        self.prompt_tools = on;
        self
    }
}
