//! [`CliDriver::side_command`]: a command of the CLI besides turns (Cursor's `create-chat`),
//! run the way a turn's process runs: in the driver's environment and within its limits.

use crate::dialect::Dialect;
use crate::driver::CliDriver;
use crate::driver::options::CommonOptions as _;
use driver_process::command::CliCommand;
use driver_process::error::ProcessError;
use driver_process::output::SideOutput;
use driver_process::process::CliProcess;

impl<D: Dialect> CliDriver<D> {
    /// Runs `<binary> <args>` once, after the version check, as a turn's process runs: in the
    /// driver's namespace and its isolated environment (the environment's injected secrets,
    /// no request's), in its own process group, within the driver's [`Limits`](driver_process::command::Limits),
    /// with stdin empty; and returns its stdout lines and how it ended.
    ///
    /// # Errors
    /// The errors of [`check_version`](Self::check_version); [`ProcessError::NotFound`] and the
    /// other start failures; and the first read error ([`ProcessError::IdleTimeout`],
    /// [`ProcessError::TotalTimeout`], [`ProcessError::LineTooLong`], [`ProcessError::NonUtf8`]), after
    /// which the process group is ended.
    pub async fn side_command(&self, args: &[&str]) -> Result<SideOutput, ProcessError> {
        self.check_version().await?;
        let cli = self.options().cli();
        // No turn: the environment's secrets are all it carries.
        let env = self.runtime_env();
        let command = CliCommand::new(&cli.binary, env.redactor()).args(args.iter().copied());
        let process = CliProcess::spawn(env, command, cli.limits)?;
        process.collect().await
    }
}
