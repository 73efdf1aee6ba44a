//! [`CursorOptions`]: the typed construction options of the Cursor driver, which are also its
//! [`Dialect`](driver_cli::Dialect) (see `dialect.rs`).

use driver_cli::CliOptions;
use driver_process::version::Version;

/// The binary the driver runs unless told otherwise. Newer Cursor builds also install it as
/// `agent`; pass that (or a path) to [`CommonOptions::with_binary`](driver_cli::CommonOptions::with_binary).
pub const DEFAULT_BINARY: &str = "cursor-agent";

/// The oldest `cursor-agent --version` the driver accepts: `2026.08.11`, the build whose
/// stream-json output third-party parsers captured and published. Unverified here: the
/// driver is tested against a fake CLI only. Cursor numbers builds by date, which
/// [`Version`] reads as `year.month.day`.
pub const MINIMUM_VERSION: Version = Version::new(2026, 8, 11);

/// How the prompt reaches the Cursor CLI.
///
/// Cursor's docs show the prompt as `-p`'s positional argument; they also say print mode is
/// inferred from piped stdin. The driver's default is stdin, which keeps the prompt out of
/// the process table and has no argv size limit, but no real Cursor build has been run here
/// (see the [crate docs](crate)). A build that ignores stdin needs [`PromptTransport::Argument`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PromptTransport {
    /// On stdin (the default): never in argv, so never in the process table.
    #[default]
    Stdin,
    /// As the last argv element, after every flag, as Cursor's docs show it. Visible in the
    /// process table to other processes of the same user; a prompt starting with `-` (which the
    /// CLI would read as a flag) or holding a NUL is refused before spawning.
    Argument,
}

/// The construction options of a [`CursorDriver`](crate::CursorDriver); the common ones
/// (binary, model, limits, minimum version) through [`CommonOptions`](driver_cli::CommonOptions).
///
/// The model and `trust_workspace` are part of the driver's config fingerprint:
/// changing them makes stored Threads incompatible. The binary, the prompt transport, the
/// limits and the version check are not.
///
/// ```
/// use driver_cursor::{CommonOptions, CursorOptions};
///
/// let options = CursorOptions::new()
///     .with_binary("agent")
///     .with_model("sonnet-4");
/// assert_eq!(options.model(), Some("sonnet-4"));
/// assert_eq!(options.binary().to_str(), Some("agent"));
/// ```
///
/// The total timeout of [`with_limits`](driver_cli::CommonOptions::with_limits) also bounds the wait for
/// another turn of the same namespace to finish (see the [crate docs](crate)).
#[derive(Debug, Clone)]
pub struct CursorOptions {
    pub(crate) cli: CliOptions,
    pub(crate) trust_workspace: bool,
    pub(crate) prompt: PromptTransport,
}

impl Default for CursorOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl CursorOptions {
    /// Defaults: binary [`DEFAULT_BINARY`] from `PATH`, Cursor's default model, the workspace
    /// trusted (`--trust`), the prompt on stdin, the default
    /// [`Limits`](driver_process::command::Limits) and [`MINIMUM_VERSION`].
    pub fn new() -> Self {
        Self {
            cli: CliOptions::new(DEFAULT_BINARY, MINIMUM_VERSION),
            trust_workspace: true,
            prompt: PromptTransport::Stdin,
        }
    }

    /// Whether the workspace is trusted without a prompt (`--trust`, the default). Builds that
    /// third parties report on refuse to run headless in an untrusted workspace, so turning
    /// this off only suits a workspace that Cursor already trusts.
    pub fn with_trust_workspace(mut self, trust: bool) -> Self {
        self.trust_workspace = trust;
        self
    }

    /// How the prompt reaches the CLI ([`PromptTransport::Stdin`] by default). Not part of the
    /// config fingerprint: it changes how a turn is delivered, not what the Thread is.
    pub fn with_prompt_transport(mut self, prompt: PromptTransport) -> Self {
        self.prompt = prompt;
        self
    }

    /// How the prompt reaches the CLI.
    pub fn prompt_transport(&self) -> PromptTransport {
        self.prompt
    }
}
