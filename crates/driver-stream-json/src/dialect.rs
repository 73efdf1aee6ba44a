//! The one dialect of the stream-json CLIs: [`StreamJsonDialect<C>`] implements [`Dialect`]
//! once, over the options of the CLI `C`, and `C` (a type private to its driver crate) says
//! what its CLI does differently by implementing [`StreamJsonCli`].

use std::fmt;
use std::ops::Deref;

use driver_cli::{
    CommonOptions, ConfigFiles, Dialect, Identity, Invocation, ResidentProtocol, Runtime, Turn,
};
use driver_process::process::Finished;
use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, FailureKind, Redactor,
    Request,
};
use runtime_env::RuntimeEnv;

use crate::{McpDialect, PermissionFlags, Resident, StreamJson, TurnResult};

/// What one stream-json CLI (Claude Code, CodeBuddy) does differently from the other,
/// implemented by a type private to its driver crate; everything else is
/// [`StreamJsonDialect`].
///
/// The argv of a turn is [`HEAD`](Self::HEAD), then the flags both CLIs share (session,
/// `--model`, `--append-system-prompt`, `--max-turns`, `--json-schema`, `--mcp-config`), then
/// the permission flags. The environment gets the base URL under
/// [`BASE_URL_VAR`](Self::BASE_URL_VAR), the CLI's own variables
/// ([`vars`](Self::vars)) and, offline, [`OFFLINE_VARS`](Self::OFFLINE_VARS).
pub trait StreamJsonCli: Sized + Send + Sync + 'static {
    /// The CLI's options (public, in its driver crate).
    type Options: CommonOptions<Dialect = StreamJsonDialect<Self>>;
    /// The runtime's registry entry.
    const RUNTIME: &'static Runtime;
    /// Who the driver is (see [`Dialect::identity`]).
    const IDENTITY: Identity;
    /// The first arguments: `-p --output-format stream-json` and whatever the CLI needs beside.
    const HEAD: &'static [&'static str];
    /// The flag of a stateless turn, where the CLI has one (without it a stateless turn is a
    /// new session whose checkpoint is not returned).
    const NO_PERSISTENCE: Option<&'static str>;
    /// How the CLI takes the permission policy.
    const PERMISSIONS: PermissionFlags;
    /// How the CLI's `mcp.json` differs.
    const MCP: McpDialect;
    /// The variable that takes [`base_url`](Self::base_url).
    const BASE_URL_VAR: &'static str;
    /// The variables that switch off the CLI's non-essential traffic when offline.
    const OFFLINE_VARS: &'static [(&'static str, &'static str)];
    /// Whether a resident process takes a follow-up into its running turn: another `user`
    /// line on stdin, which the CLI echoes when it takes it (`--replay-user-messages`, added
    /// to its resident argv), so the driver knows whether the turn took it or the CLI runs it
    /// next (see `docs/stream-json-resident.md`). The default: no.
    const STEERS: bool = false;

    /// The model endpoint (http or https), if not the CLI's default.
    fn base_url(options: &Self::Options) -> Option<&str>;
    /// The `--max-turns` of a turn.
    fn max_turns(options: &Self::Options) -> Option<u32>;
    /// Whether the CLI's non-essential traffic is switched off.
    fn offline(options: &Self::Options) -> bool;
    /// The config-fingerprint fields of options the CLI no longer has, at the values they had
    /// by default, so stored Threads keep resuming; they come first.
    fn former_fields(builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder;
    /// The failure class of a failed `result` event.
    fn classify(result: &TurnResult) -> FailureKind;
    /// Checks of the CLI's own options, beyond the base URL.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the option.
    fn validate(options: &Self::Options) -> Result<(), ConfigError> {
        let _ = options;
        Ok(())
    }
    /// The CLI's own variables and secrets of a turn.
    fn vars(options: &Self::Options, invocation: Invocation) -> Invocation {
        let _ = options;
        invocation
    }
    /// Whether a `result` event's usage counts the whole process rather than the turn.
    fn usage_per_process(options: &Self::Options) -> bool {
        let _ = options;
        false
    }
}

/// The dialect of the stream-json CLI `C`, over its options.
pub struct StreamJsonDialect<C: StreamJsonCli>(C::Options);

impl<C: StreamJsonCli> fmt::Debug for StreamJsonDialect<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StreamJsonDialect").field(&self.0).finish()
    }
}

impl<C: StreamJsonCli> Deref for StreamJsonDialect<C> {
    type Target = C::Options;

    fn deref(&self) -> &C::Options {
        &self.0
    }
}

impl<C: StreamJsonCli> StreamJsonDialect<C> {
    /// The dialect over `options`. (`From<C::Options>`, which the driver takes, is the driver
    /// crate's to write: a blanket one would overlap `From<T> for T`.)
    pub fn new(options: C::Options) -> Self {
        Self(options)
    }

    /// The resident mode: `--input-format stream-json`, one process per Thread.
    const RESIDENT: Resident = Resident::new(C::NO_PERSISTENCE).with_steer(C::STEERS);

    /// The argv (without the program): `HEAD`, the shared flags, then the permission flags
    /// with the variadic `--allowedTools` last.
    fn argv(&self, turn: &Turn<'_>) -> Vec<String> {
        let mut args = crate::argv(
            C::HEAD,
            turn,
            self.cli().model.as_deref(),
            C::NO_PERSISTENCE,
            C::max_turns(self),
            turn.resident,
        );
        if turn.resident && C::STEERS {
            args.push(crate::resident::REPLAY_FLAG.to_owned());
        }
        let servers = turn.request.mcp.iter().map(|s| s.name.as_str());
        args.extend(C::PERMISSIONS.args(&turn.request.permissions, servers, turn.resident));
        args
    }
}

impl<C: StreamJsonCli> Dialect for StreamJsonDialect<C> {
    type Translator = StreamJson;

    fn runtime(&self) -> &'static Runtime {
        C::RUNTIME
    }

    fn identity(&self) -> &Identity {
        &C::IDENTITY
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }

    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder {
        // The permission options moved to the request's policy (issue 27): `former_fields`
        // and an empty tool list keep the values the default options had.
        C::former_fields(builder)
            .list("allowed_tools", &[] as &[String])
            .opt_str("base_url", C::base_url(self))
            .opt_str(
                "max_turns",
                C::max_turns(self).map(|t| t.to_string()).as_deref(),
            )
    }

    fn validate(&self, _env: &RuntimeEnv) -> Result<(), ConfigError> {
        C::validate(self)?;
        crate::check_base_url(C::base_url(self))
    }

    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        Ok(C::PERMISSIONS.check(&request.permissions)?)
    }

    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError> {
        crate::mcp_file(turn.request, C::MCP)
    }

    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError> {
        let mut invocation = Invocation::new(self.argv(turn));
        if let Some(url) = C::base_url(self) {
            invocation = invocation.var(C::BASE_URL_VAR, url);
        }
        Ok(C::vars(self, invocation).vars_if(C::offline(self), C::OFFLINE_VARS))
    }

    fn translator(&self, request: &Request, redactor: Redactor) -> StreamJson {
        StreamJson::new(request, redactor, C::classify)
            .with_process_usage(C::usage_per_process(self))
    }

    fn resident(&self) -> Option<&dyn ResidentProtocol> {
        Some(&Self::RESIDENT)
    }

    fn unknown_session(&self, translator: &StreamJson, finished: &Finished) -> bool {
        translator.unknown_session(&finished.stderr_tail)
    }
}
