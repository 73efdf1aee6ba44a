//! `--allow`, `--ask`, `--deny` (the run's permission policy) and `--approve` (who answers
//! the runtime's approval requests): on a terminal `ask` shows each request on stderr and
//! reads `y` or `n` from the terminal; without one the default is `deny`.

use std::io::{IsTerminal as _, Write as _};
use std::sync::mpsc;

use clap::{Args, ValueEnum};
use driver_spi::{Action, ApprovalTicket, Approvals, Permission, PermissionPolicy};

use crate::terminal::{Shown, terminal_safe};
use crate::{Failure, exit};

/// The run's permission policy: what the runtime may do without asking.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PolicyOptions {
    /// Let the runtime do this without asking, repeatable: `write` (workspace files),
    /// `commands`, `network`, `mcp` (the `--mcp` servers' tools, allowed by default).
    #[arg(long = "allow", value_name = "ACTION", value_parser = action_parser())]
    allow: Vec<Action>,
    /// Make the runtime ask before doing this, repeatable (see `--approve`).
    #[arg(long = "ask", value_name = "ACTION", value_parser = action_parser())]
    ask: Vec<Action>,
    /// Forbid this, repeatable (write, commands and network are forbidden by default).
    #[arg(long = "deny", value_name = "ACTION", value_parser = action_parser())]
    deny: Vec<Action>,
}

/// One of the actions by name, listed in `--help`.
fn action_parser() -> impl clap::builder::TypedValueParser<Value = Action> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Action::ALL.map(Action::as_str))
        .try_map(|name| name.parse::<Action>())
}

impl PolicyOptions {
    /// The policy: the default, then `--allow`, `--ask` and `--deny`; an action named twice
    /// is a usage error.
    pub(crate) fn policy(&self) -> Result<PermissionPolicy, Failure> {
        let mut policy = PermissionPolicy::default();
        let mut named: Vec<Action> = Vec::new();
        for (actions, permission) in [
            (&self.allow, Permission::Allow),
            (&self.ask, Permission::Ask),
            (&self.deny, Permission::Deny),
        ] {
            for action in actions {
                if named.contains(action) {
                    return Err(Failure::new(
                        exit::USAGE,
                        format!("`{}` is given more than one permission", action.as_str()),
                    ));
                }
                named.push(*action);
                policy = policy.with(*action, permission);
            }
        }
        Ok(policy)
    }
}

/// Who answers approval requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Approve {
    /// Show each request and read `y` or `n` from the terminal.
    Ask,
    /// Deny every request.
    Deny,
    /// Approve every request.
    Allow,
}

/// The approvals of a run: `approve`, else `ask` on a terminal and `deny` without one.
pub(crate) fn approvals(approve: Option<Approve>) -> Result<Approvals, Failure> {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    match approve.unwrap_or(if terminal {
        Approve::Ask
    } else {
        Approve::Deny
    }) {
        Approve::Allow => Ok(Approvals::approve_all()),
        Approve::Deny => Ok(Approvals::deny_all("denied by agentctl (--approve deny)")),
        Approve::Ask if !terminal => Err(Failure::new(
            exit::USAGE,
            "--approve ask needs a terminal on stdin and stderr",
        )),
        Approve::Ask => Ok(prompter()),
    }
}

/// Tickets go to one thread that asks about them in turn, so prompts never interleave; the
/// handler itself only queues (it must not block the runtime).
fn prompter() -> Approvals {
    let (queue, tickets) = mpsc::channel::<ApprovalTicket>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for ticket in tickets {
            if !ticket.is_open() {
                continue;
            }
            let approve = ask(&ticket, &mut stdin.lock());
            // A late answer (the request timed out meanwhile) is refused and ignored.
            let _ = if approve {
                ticket.approve()
            } else {
                ticket.deny("denied by the user at the agentctl prompt")
            };
        }
    });
    let queue = std::sync::Mutex::new(queue);
    Approvals::new(std::sync::Arc::new(move |ticket: ApprovalTicket| {
        let sent = queue
            .lock()
            .map(|q| q.send(ticket.clone()))
            .unwrap_or(Ok(()));
        if sent.is_err() {
            let _ = ticket.deny("agentctl's prompt is gone");
        }
    }))
}

/// Shows one request on stderr and reads the answer: `y` or `yes` approves, anything else
/// (end of input included) denies. The tool and its arguments come from the model, so they
/// are shown escaped: what the operator reads is all there is.
fn ask(ticket: &ApprovalTicket, input: &mut impl std::io::BufRead) -> bool {
    let request = ticket.request();
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "[approve] {} `{}` {}\n[approve] allow? [y/N] ",
        request.action.as_str(),
        terminal_safe(&request.tool, Shown::Field),
        terminal_safe(&request.arguments, Shown::Field)
    );
    let _ = stderr.flush();
    let mut line = String::new();
    if input.read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn flags_build_the_policy_and_refuse_an_action_named_twice() {
        let options = PolicyOptions {
            allow: vec![Action::Write],
            ask: vec![Action::Commands],
            deny: vec![Action::Mcp],
        };
        assert_eq!(
            options.policy().unwrap().to_string(),
            "write=allow,commands=ask,network=deny,mcp=deny"
        );
        let twice = PolicyOptions {
            allow: vec![Action::Write],
            deny: vec![Action::Write],
            ..PolicyOptions::default()
        };
        assert!(twice.policy().is_err());
    }
}
