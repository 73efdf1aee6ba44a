//! [`Dialect`]: what one CLI does differently, for the one [`CliDriver`](crate::CliDriver);
//! and [`Translator`]: the one shape of every CLI's event translator.
//!
//! The split follows tower's `retry::Policy`: the driver is the service, written once; a
//! dialect is pure, pluggable behaviour with no I/O of its own. A dialect never spawns,
//! waits, locks or writes: it returns values ([`Invocation`], [`ConfigFiles`]) and judges
//! what it is shown, so the order of checks, the one event loop, terminate-then-fail and the
//! judgement skeleton cannot differ between CLIs.

pub(crate) mod events;
pub(crate) mod session;
pub(crate) mod tool_names;

use std::fmt;
use std::ops::Deref;
use std::path::Path;

use driver_spi::{
    Capabilities, ConfigError, ConfigFingerprintBuilder, DriverError, DriverEvent, ExitStatus,
    FailureKind, GuardedCodec, Redactor, Request, RunFailure, Usage,
};
use run_service::{EnvBinding, TransportKind};
use runtime_env::RuntimeEnv;
use serde_json::Value;

use crate::dialect::events::TurnEvents;
use crate::dialect::session::SessionPlan;
use crate::driver::options::CommonOptions;
use crate::registry::Runtime;
use driver_process::process::Finished;

/// A known event whose shape is broken: the driver stops the turn with a protocol failure
/// naming the line number, never the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed event")]
pub struct MalformedEvent;

/// The status of one MCP server as the CLI reported it at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpStatus {
    /// The server name, as declared in the request.
    pub name: String,
    /// The CLI's word for its state (`connected` when it is usable).
    pub status: String,
}

impl McpStatus {
    /// A status line.
    pub fn new(name: impl Into<String>, status: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: status.into(),
        }
    }
}

/// The string field `key` of `value`: the shape every translator checks most.
///
/// # Errors
/// [`MalformedEvent`] when the field is missing or not a string.
pub fn str_field<'v>(value: &'v Value, key: &str) -> Result<&'v str, MalformedEvent> {
    value.get(key).and_then(Value::as_str).ok_or(MalformedEvent)
}

/// The content blocks of a chat-style event's `message.content`, as Claude Code, CodeBuddy and
/// Cursor print their assistant and user messages: none when it is plain text or absent.
///
/// # Errors
/// [`MalformedEvent`] when it is neither blocks, text nor absent.
pub fn message_content(event: &Value) -> Result<&[Value], MalformedEvent> {
    match event.pointer("/message/content") {
        Some(Value::Array(blocks)) => Ok(blocks),
        Some(Value::String(_)) | None => Ok(&[]),
        Some(_) => Err(MalformedEvent),
    }
}

/// One CLI event as the driver hands it to a [`Translator`].
#[derive(Debug)]
#[non_exhaustive]
pub struct CliEvent<'a> {
    /// Its `type` (an event without a string `type` is malformed before a translator sees it).
    pub kind: &'a str,
    /// The whole event.
    pub value: &'a Value,
    /// The bookkeeping every translator shares: the run's start, the open tool calls, the
    /// session id an event carried.
    pub turn: &'a mut TurnEvents,
    /// Where the event's translation goes.
    pub out: &'a mut Vec<DriverEvent>,
}

impl<'a> CliEvent<'a> {
    /// `(kind, value, turn, out)`, for a translator's `match kind`.
    pub fn into_parts(
        self,
    ) -> (
        &'a str,
        &'a Value,
        &'a mut TurnEvents,
        &'a mut Vec<DriverEvent>,
    ) {
        (self.kind, self.value, self.turn, self.out)
    }
}

/// One CLI's event translator: its JSONL events in, [`DriverEvent`]s out, and what the events
/// said about the turn.
///
/// A translator is pure and total: unknown event types are ignored, a known event with a
/// broken shape is [`MalformedEvent`] and changes nothing (see
/// [`Tracked`](crate::Tracked)), and provider text it emits or keeps (answer text, tool
/// arguments and results, error messages) has passed the turn's redactor
/// ([`Dialect::translator`]). The shared harness fuzzes every translator against these rules.
pub trait Translator: fmt::Debug + Send {
    /// Translates one event into `event.out`, recording in `event.turn` what every translator
    /// records the same way: the run's start, the tool calls opened and closed, the session
    /// id an event carried. It may fail after changing `event.turn` (the driver undoes that),
    /// but must change nothing of its own before the event is known to be well formed.
    ///
    /// # Errors
    /// [`MalformedEvent`] for a known event whose shape is broken.
    fn translate(&mut self, event: CliEvent<'_>) -> Result<(), MalformedEvent>;

    /// The session (thread, chat) id, when the CLI reports it other than as a `session_id`
    /// field [`TurnEvents::note_session`] records.
    fn session_id(&self) -> Option<&str> {
        None
    }

    /// The final answer so far.
    fn output(&self) -> &str;

    /// Whether the CLI reported a successful end of the turn.
    fn succeeded(&self) -> bool;

    /// The failure the CLI reported for the turn, classified, if it reported one.
    fn reported_failure(&self) -> Option<RunFailure>;

    /// Token usage of this turn, if the CLI reported it.
    fn usage(&self) -> Option<Usage>;

    /// The final answer as data, when the CLI reports a structured answer apart from its
    /// text (Claude Code's and CodeBuddy's `structured_output`), redacted like text. The
    /// judgement puts it in [`Response::structured_output`](driver_spi::Response) of a clean
    /// turn whose request has an output schema. The default: none (the answer is the text).
    fn structured_output(&self) -> Option<Value> {
        None
    }

    /// The last error text the CLI printed as an event (redacted), if any.
    fn last_error(&self) -> Option<&str> {
        None
    }

    /// The MCP servers' statuses, once the CLI reported them. The driver stops the turn
    /// when a required server is not `connected`.
    fn mcp_servers(&self) -> Option<&[McpStatus]> {
        None
    }

    /// Driver data to keep in the checkpoint besides the session id (non-secret).
    fn checkpoint_data(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Whether the events so far ended the turn. A resident process's output does not end
    /// with its turn, so its one event loop stops here; one process per turn stops at the
    /// end of output, and its translators keep the default.
    fn turn_ended(&self) -> bool {
        false
    }

    /// Takes what the previous turn on the same resident process carried (see
    /// [`carried`](Self::carried)); called before the turn's first event. The default ignores
    /// it.
    fn continue_from(&mut self, carried: Option<&Value>) {
        let _ = carried;
    }

    /// A follow-up was delivered into the running turn (a resident protocol's
    /// [`steer`](crate::ResidentProtocol::steer)). A translator whose CLI runs a follow-up
    /// that came too late for the running turn as a turn of its own (Claude Code's
    /// stream-json input, after the model's last tool call) keeps
    /// [`turn_ended`](Self::turn_ended) false until that turn ended too, so the follow-up is
    /// part of the turn that finalizes. The default: nothing (the CLI keeps it in the turn).
    fn steered(&mut self) {}

    /// What this turn's events leave for the next turn on the same resident process: counts
    /// a CLI reports per process rather than per turn (CodeBuddy's usage), so the next turn
    /// can report its own. Never secret. The default: nothing.
    fn carried(&self) -> Option<Value> {
        None
    }
}

/// How a dialect's CLI gets the config it cannot take as flags.
#[derive(Debug, Default)]
#[non_exhaustive]
pub enum ConfigFiles {
    /// Nothing is written: argv and the environment carry the whole configuration.
    #[default]
    None,
    /// One private per-run file (0600, in a directory of the run's own under the namespace,
    /// removed when the run ends); [`Dialect::invocation`] gets its path.
    RunFile {
        /// The file name.
        name: &'static str,
        /// Its contents: variable names, never secret values.
        contents: Vec<u8>,
    },
    /// Files of the namespace that the CLI reads from a fixed place: installed under the
    /// namespace's turn lock (one turn at a time), merged over what was there, and put back
    /// when the turn ends, fails or is cancelled.
    Namespace(NamespaceConfig),
}

/// What a turn writes to its namespace files, given what was there (one entry per path, in
/// order; `None` for no file).
pub type MergeFiles = Box<dyn FnOnce(&[Option<Vec<u8>>]) -> Vec<Option<Vec<u8>>> + Send>;

/// The namespace files of [`ConfigFiles::Namespace`].
pub struct NamespaceConfig {
    /// The files, relative to the runtime's state directory.
    pub paths: Vec<String>,
    /// What to write given what was there (one entry per path, in order; `None` for no
    /// file).
    pub contents: MergeFiles,
}

impl fmt::Debug for NamespaceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceConfig")
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

/// What a dialect adds to the one command of a turn. The driver adds the program and the
/// request's secrets, builds the turn's one redactor (see [`Dialect::translator`]), and runs it
/// in the namespace's environment.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Invocation {
    /// Argv, without the program.
    pub args: Vec<String>,
    /// Plain (non-secret) variables.
    pub vars: Vec<(String, String)>,
    /// Secrets of the driver's own (a key option), added after the request's so that they
    /// win. The turn's redactor knows their values: they are hidden from its events, output
    /// and stderr like the request's.
    pub secrets: Vec<EnvBinding>,
    /// The text for stdin; `None` writes the request's prompt.
    pub stdin: Option<String>,
}

impl Invocation {
    /// An invocation with these arguments and the prompt on stdin.
    pub fn new(args: Vec<String>) -> Self {
        Self {
            args,
            ..Self::default()
        }
    }

    /// Adds a plain variable.
    pub fn var(mut self, name: &str, value: impl Into<String>) -> Self {
        self.vars.push((name.to_owned(), value.into()));
        self
    }

    /// Adds plain variables, when `on` (a switch such as an offline mode).
    pub fn vars_if(mut self, on: bool, vars: &[(&str, &str)]) -> Self {
        if on {
            let owned = vars.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned()));
            self.vars.extend(owned);
        }
        self
    }
}

/// What a turn's dialect methods are shown.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Turn<'a> {
    /// The namespace the CLI runs in.
    pub env: &'a RuntimeEnv,
    /// The request.
    pub request: &'a Request,
    /// What the turn does with sessions.
    pub plan: SessionPlan<'a>,
    /// The per-run config file, for [`ConfigFiles::RunFile`].
    pub run_file: Option<&'a Path>,
    /// Whether the turn runs on a process speaking the dialect's
    /// [`ResidentProtocol`](crate::ResidentProtocol): in resident mode, and for a per-turn
    /// turn whose policy asks the host (a one-turn process, closed after it). The dialect's
    /// [`invocation`](Dialect::invocation) then returns its resident argv.
    pub resident: bool,
}

impl Turn<'_> {
    /// The JSON Schema the CLI must be given for this turn: the request's
    /// [`OutputSchema`](driver_spi::OutputSchema) when it is delivered natively (a prompt-only
    /// schema is the core's business; the dialect sees an ordinary request).
    pub fn output_schema(&self) -> Option<&Value> {
        self.request
            .output_schema
            .as_ref()
            .filter(|s| s.delivery() == driver_spi::SchemaDelivery::Native)
            .map(driver_spi::OutputSchema::schema)
    }
}

/// How a new session gets its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewSessionId {
    /// The driver chooses a UUIDv7 and passes it (`--session-id`), so it is known before the
    /// CLI starts.
    Host,
    /// The CLI chooses it and reports it in its events.
    Cli,
}

/// What a CLI driver can do: every CLI here resumes its sessions and streams its events; `fork`
/// and the MCP `transports` it takes differ.
///
/// ```
/// use run_service::TransportKind;
///
/// let caps = driver_cli::cli_capabilities(false, &[TransportKind::StreamableHttp]);
/// assert!(caps.resume && caps.streaming && !caps.fork);
/// assert!(caps.supports_mcp_transport(TransportKind::StreamableHttp));
/// ```
pub fn cli_capabilities(fork: bool, transports: &[TransportKind]) -> Capabilities {
    let resumable = Capabilities::none().with_resume(true).with_streaming(true);
    transports
        .iter()
        .fold(resumable.with_fork(fork), |caps, t| {
            caps.with_mcp_transport(*t)
        })
}

/// Who a dialect's driver is ([`Dialect::identity`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Identity {
    /// The driver type: part of every Thread's fingerprint.
    pub driver_type: &'static str,
    /// The name people read.
    pub display_name: &'static str,
    /// The session codec: the CLI's session id and the [`SessionGuard`](driver_spi::SessionGuard)
    /// values, nothing else. It keeps any id that is safe as one argv element
    /// ([`is_safe_id`](crate::is_safe_id)); the driver resumes only UUIDs.
    pub codec: GuardedCodec,
    /// Who picks a new session's id.
    pub new_session_id: NewSessionId,
    /// Whether a stored session id of any safe shape ([`is_safe_id`](crate::is_safe_id)) is
    /// resumed, not only a UUID: for protocols that never put the id on a command line and
    /// whose agents choose ids of their own shape (ACP). The default: UUIDs only, since CLIs
    /// take other strings as session *names*.
    pub opaque_ids: bool,
}

impl Identity {
    /// The identity of a driver named `driver_type` (`display_name` for people), whose
    /// sessions the codec named `codec` stores and whose new session ids `new_session_id`
    /// picks. The driver type and the codec name are part of every Thread's fingerprint:
    /// changing either makes stored Threads of the driver unresumable.
    ///
    /// ```
    /// use driver_cli::{Identity, NewSessionId};
    /// use driver_spi::{SessionCodec, SessionState};
    ///
    /// const ID: Identity = Identity::new("example", "Example CLI", "example/v1", NewSessionId::Cli);
    /// let state = SessionState::new("0199a213-81c0-7800-8aa1-bbab2a035a53");
    /// assert!(ID.codec.to_params(Some(&state)).unwrap().is_some());
    /// assert!(ID.codec.to_params(Some(&SessionState::new("--continue"))).is_err());
    /// ```
    pub const fn new(
        driver_type: &'static str,
        display_name: &'static str,
        codec: &'static str,
        new_session_id: NewSessionId,
    ) -> Self {
        Self {
            driver_type,
            display_name,
            codec: crate::dialect::session::session_codec(codec),
            new_session_id,
            opaque_ids: false,
        }
    }

    /// The identity, resuming stored session ids of any safe shape
    /// ([`opaque_ids`](Self::opaque_ids)).
    pub const fn with_opaque_ids(mut self) -> Self {
        self.opaque_ids = true;
        self
    }
}

/// What one CLI does differently. Implemented by a type private to the driver crate that
/// wraps its public options (see [`dialect!`](crate::dialect!)), so that the driver's public
/// API is its options and `CliDriver<Dialect>`, and the dialect's workings stay inside.
///
/// Everything a dialect returns names variables, never their values; everything it judges is
/// already redacted.
pub trait Dialect:
    Deref<Target: CommonOptions<Dialect = Self>> + fmt::Debug + Send + Sync + 'static
{
    /// The CLI's event translator.
    type Translator: Translator;

    /// The runtime's registry entry: its descriptor names the state directory that holds the
    /// per-run and namespace files, and the runtime the environment must serve. A method, not
    /// a constant, so that one dialect can serve entries registered at run time (the ACP
    /// dialect serves every ACP agent, each its own entry).
    fn runtime(&self) -> &'static Runtime;

    /// Who the driver is: its type and name, its session codec, who picks a new session's id.
    /// Constant for a driver's lifetime (its fingerprint and stored sessions depend on it).
    fn identity(&self) -> &Identity;

    /// What the CLI can do, checked against each request before a process runs.
    fn capabilities(&self) -> Capabilities;

    /// Adds the dialect's fields to the config fingerprint (after `model`, before the
    /// namespace and isolation level, which the driver adds).
    fn fingerprint(&self, builder: ConfigFingerprintBuilder) -> ConfigFingerprintBuilder;

    /// Checks the dialect's own options (the driver checked the common ones).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the option.
    fn validate(&self, env: &RuntimeEnv) -> Result<(), ConfigError> {
        let _ = env;
        Ok(())
    }

    /// Checks the request before anything runs, beyond capabilities and session (prompt
    /// size, values the CLI would misread).
    ///
    /// # Errors
    /// The [`DriverError`] to report; nothing has run.
    fn check_request(&self, request: &Request) -> Result<(), DriverError> {
        let _ = request;
        Ok(())
    }

    /// The config files of the turn.
    ///
    /// # Errors
    /// [`DriverError::InvalidConfig`] for MCP servers or values the CLI cannot take.
    fn config(&self, turn: &Turn<'_>) -> Result<ConfigFiles, DriverError>;

    /// The turn's argv, variables and stdin, once its config files are in place (and, for
    /// namespace files, under the turn lock). For a [`resident`](Turn::resident) turn it
    /// launches the resident process instead (stdin is then the protocol's): the
    /// dialect returns its resident argv, without the arguments naming a session
    /// ([`ResidentProtocol::launch_session`](crate::ResidentProtocol::launch_session)).
    ///
    /// # Errors
    /// The [`DriverError`] to report; nothing has been spawned.
    fn invocation(&self, turn: &Turn<'_>) -> Result<Invocation, DriverError>;

    /// A translator for one turn of `request`, which redacts with `redactor`: the turn's one
    /// redactor, built by the driver from every secret it knows for the turn (the
    /// namespace's injected secrets, the dialect's own keys in [`Invocation::secrets`], the
    /// request's bindings). The process's stderr tail is redacted with the same one. A
    /// dialect adds nothing to it: a key it knows belongs in its invocation's secrets.
    fn translator(&self, request: &Request, redactor: Redactor) -> Self::Translator;

    /// Whether the finished turn says, in the CLI's own words, that the resumed session is
    /// unknown.
    fn unknown_session(&self, translator: &Self::Translator, finished: &Finished) -> bool;

    /// Whether the driver runs `<binary> --version` before its first turn (and refuses a
    /// version below the minimum). The default: yes. An agent of unknown make (an ACP agent
    /// registered by its command) may have no `--version`; [`CliDriver::check_version`]
    /// still probes when a host calls it.
    ///
    /// [`CliDriver::check_version`]: crate::CliDriver::check_version
    fn probes_version(&self) -> bool {
        true
    }

    /// The resident mode's protocol, for dialects whose CLI has one
    /// ([`ProcessMode::Resident`](crate::ProcessMode::Resident)). The default: none.
    fn resident(&self) -> Option<&dyn crate::resident::ResidentProtocol> {
        None
    }

    /// The failure of a turn that was not clean. The default: the failure the CLI reported;
    /// else, after a successful exit, a protocol failure; else the exit's class with the
    /// last error event or the stderr tail.
    fn failure(&self, translator: &Self::Translator, finished: &Finished) -> RunFailure {
        default_failure(translator, finished)
    }
}

/// [`Dialect::failure`]'s default, for dialects that refine it.
pub fn default_failure(translator: &dyn Translator, finished: &Finished) -> RunFailure {
    if let Some(failure) = translator.reported_failure() {
        return failure;
    }
    match finished.status {
        ExitStatus::Success => RunFailure::new(
            FailureKind::Protocol,
            "the CLI exited without a successful result",
        ),
        status => RunFailure::new(
            driver_process::process::failure_kind(status).unwrap_or(FailureKind::Process),
            translator
                .last_error()
                .unwrap_or(&finished.stderr_tail)
                .to_owned(),
        ),
    }
}

/// Declares a driver crate's dialect: a type, private to the crate, that wraps the crate's
/// public options (`Deref` to them, `From` them) and implements [`Dialect`], and the options'
/// [`CommonOptions`] over their `cli: CliOptions` field. Write it in a private module and
/// name the driver `pub type XDriver = CliDriver<dialect::X>`. (The blocks are `ignore`d
/// sketches: a dialect is private to its driver crate, and every driver crate compiles its own.)
///
/// ```ignore
/// driver_cli::dialect!(
///     /// The Codex dialect.
///     Codex(CodexOptions)
/// );
/// impl Dialect for Codex { /* ... */ }
/// ```
///
/// Options whose dialect is a shared type generic over them (such as
/// `driver_stream_json::StreamJsonDialect<O>`) get only their [`CommonOptions`]:
///
/// ```ignore
/// driver_cli::dialect!(ClaudeCodeOptions => StreamJsonDialect<ClaudeCodeOptions>);
/// ```
#[macro_export]
macro_rules! dialect {
    ($(#[$meta:meta])* $name:ident($options:ty)) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub struct $name($options);

        impl ::core::ops::Deref for $name {
            type Target = $options;

            fn deref(&self) -> &$options {
                &self.0
            }
        }

        impl ::core::convert::From<$options> for $name {
            fn from(options: $options) -> Self {
                Self(options)
            }
        }

        $crate::dialect!($options => $name);
    };
    ($options:ty => $dialect:ty) => {
        impl $crate::CommonOptions for $options {
            type Dialect = $dialect;

            fn cli(&self) -> &$crate::CliOptions {
                &self.cli
            }

            fn cli_mut(&mut self) -> &mut $crate::CliOptions {
                &mut self.cli
            }
        }
    };
}
