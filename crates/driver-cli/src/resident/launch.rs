//! Steps 1 and 3 of a resident turn, shared with a pre-warm: the launch invocation and its
//! exact signature, the place a turn's process takes in the pool, and a new process started
//! from them. Both launch the same way, so a pre-warmed process has the signature of the run
//! it is for.

use std::path::{Path, PathBuf};

use driver_process::command::CliCommand;
use driver_process::files::RunFiles;
use driver_process::pool::{ConversationKey, ProcessPool};
use driver_spi::{ConfigError, DriverError, PrewarmTicket, ProcessSignature, Redactor};

use super::{ResidentProcess, ResidentProtocol};
use crate::dialect::session::SessionPlan;
use crate::dialect::{ConfigFiles, Dialect, Invocation, Turn};
use crate::driver::options::CommonOptions as _;
use crate::driver::turn_redactor;

/// The file name a per-run config file has in the signature's argv: its real path differs
/// per process, its contents are a component of their own.
const RUN_FILE_PLACEHOLDER: &str = "<run-dir>";

/// How a turn (or a pre-warm) of one request launches a resident process.
pub(super) struct Launch<'a, D, C> {
    dialect: &'a D,
    protocol: &'a dyn ResidentProtocol,
    pool: &'a ProcessPool<ConversationKey, ResidentProcess>,
    turn: &'a Turn<'a>,
    run_file: Option<(&'static str, Vec<u8>)>,
    command: C,
    /// The launch invocation with a per-run file shown as a placeholder.
    pub(super) invocation: Invocation,
    /// The exact launch configuration.
    pub(super) signature: ProcessSignature,
}

impl<'a, D, C> Launch<'a, D, C>
where
    D: Dialect,
    C: Fn(Invocation, Redactor) -> CliCommand,
{
    /// Step 1: the invocation and its signature; refuses config a resident process cannot
    /// keep.
    pub(super) fn new(
        dialect: &'a D,
        protocol: &'a dyn ResidentProtocol,
        pool: &'a ProcessPool<ConversationKey, ResidentProcess>,
        turn: &'a Turn<'a>,
        config: ConfigFiles,
        command: C,
    ) -> Result<Self, DriverError> {
        let run_file = match config {
            ConfigFiles::None => None,
            ConfigFiles::RunFile { name, contents } => Some((name, contents)),
            ConfigFiles::Namespace(_) => {
                // A resident process cannot hold the namespace's turn lock between turns.
                return Err(ConfigError::invalid(
                    "process_mode",
                    "this CLI reads its config from namespace files, which resident mode cannot keep",
                )
                .into());
            }
        };
        let placeholder = run_file
            .as_ref()
            .map(|(name, _)| PathBuf::from(RUN_FILE_PLACEHOLDER).join(name));
        let shown = Turn {
            run_file: placeholder.as_deref(),
            ..*turn
        };
        let invocation = dialect.invocation(&shown)?;
        let cli = dialect.cli();
        let signature = signature(
            &cli.binary,
            &invocation,
            run_file.as_ref().map(|(_, c)| c.as_slice()),
            turn,
            cli.model.as_deref(),
        );
        Ok(Self {
            dialect,
            protocol,
            pool,
            turn,
            run_file,
            command,
            invocation,
            signature,
        })
    }

    /// The place of `conversation` in the driver's namespace.
    pub(super) fn key(&self, conversation: &str) -> ConversationKey {
        ConversationKey::new(self.turn.env.namespace().clone(), conversation)
    }

    /// The place whose idle process may serve the turn: a resume's session, or the place a
    /// pre-warm reserved under `ticket` for this very plan (a ticket warmed for another plan,
    /// or for another fork parent, finds nothing). `None`: a new process for a place known
    /// only after the turn.
    pub(super) fn place(&self, ticket: Option<&PrewarmTicket>) -> Option<ConversationKey> {
        // `:` is in no CLI session id (`is_safe_id`), so a ticket's place is never a session's.
        let ticket =
            |plan: &str| ticket.map(|t| self.key(&format!("prewarm:{plan}:{}", t.as_str())));
        match self.turn.plan {
            SessionPlan::Resume(id) => Some(self.key(id)),
            SessionPlan::Start(_) => ticket("start"),
            SessionPlan::Stateless => ticket("stateless"),
            SessionPlan::Fork(parent) => ticket(&format!("fork:{parent}")),
        }
    }

    /// Step 3: a new process, with its own config file (removed when it ends), the session
    /// named at launch, and the protocol's handshake.
    pub(super) async fn start(&self) -> Result<ResidentProcess, DriverError> {
        let turn = self.turn;
        let files = match &self.run_file {
            None => None,
            Some((name, contents)) => {
                let files = RunFiles::create(
                    turn.env,
                    &self.dialect.runtime().descriptor,
                    turn.request.run_id.as_str(),
                )?;
                let path = files.write(name, contents)?;
                Some((files.keep(), path))
            }
        };
        let launched = Turn {
            run_file: files.as_ref().map(|(_, path)| path.as_path()),
            ..*turn
        };
        let mut invocation = self.dialect.invocation(&launched)?;
        invocation.args.extend(self.protocol.launch_session(turn));
        // The launch's secrets: kept by the process for every turn it serves.
        let redactor = turn_redactor(turn, &invocation);
        let mut process = ResidentProcess::start(
            turn.env,
            (self.command)(invocation, redactor),
            self.dialect.cli().limits,
            self.pool.limits().max_idle_output,
            self.protocol,
        )
        .await?;
        process.files = files.map(|(files, _)| files);
        if self.protocol.open(turn, None).is_none() {
            // Named at launch: the plan's id, or the one the events will report.
            process.loaded = turn.plan.expected_id().map(str::to_owned);
        }
        Ok(process)
    }
}

/// The exact launch configuration of `command` for `turn`, as a private signature.
fn signature(
    binary: &Path,
    invocation: &Invocation,
    run_file: Option<&[u8]>,
    turn: &Turn<'_>,
    default_model: Option<&str>,
) -> ProcessSignature {
    let request = turn.request;
    let cwd = request
        .workspace
        .as_deref()
        .unwrap_or(turn.env.cwd().to_string_lossy().as_ref())
        .to_owned();
    let mut builder = ProcessSignature::builder()
        .command(binary.to_string_lossy(), invocation.args.iter().cloned())
        .cwd(cwd)
        .secret_env(&request.runtime.secret_env)
        .secret_env(&invocation.secrets)
        .services(&request.runtime.services)
        .mcp(&request.mcp)
        .model(request.model.as_deref().or(default_model))
        .component("namespace", turn.env.namespace().as_str())
        // What the process may do: a protocol may apply it only when it opens a session
        // (Codex's `untrusted` thread), which a reused process with the session loaded skips.
        .component("permissions", request.permissions.to_string());
    for (name, value) in &invocation.vars {
        builder = builder.env(name.clone(), value.clone());
    }
    if let Some(contents) = run_file {
        builder = builder.component("run_file", String::from_utf8_lossy(contents));
    }
    builder.finish()
}
