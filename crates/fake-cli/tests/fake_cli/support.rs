//! Running the fake with a scenario.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use fake_cli::{SCENARIO_ENV, Scenario};
use tempfile::TempDir;

pub(crate) struct Run {
    _dir: TempDir,
    pub(crate) scenario: PathBuf,
}

impl Run {
    pub(crate) fn new(scenario: &Scenario) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.json");
        scenario.write_to(&path).unwrap();
        Self {
            _dir: dir,
            scenario: path,
        }
    }

    /// A command for the fake with an otherwise empty environment.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(fake_cli::binary_path());
        cmd.args(args)
            .env_clear()
            .env(SCENARIO_ENV, &self.scenario)
            .stdin(Stdio::null());
        cmd
    }

    pub(crate) fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    pub(crate) fn with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}
