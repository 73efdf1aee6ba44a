//! A pre-warm ([`Driver::prewarm`](driver_spi::Driver::prewarm)) in resident mode: steps 1–4
//! of a resident turn (see the [module docs](super)) without a prompt, then the process back
//! in the pool, idle, for the run it was warmed for.
//!
//! 1. the launch invocation and signature, exactly as the run computes them ([`Launch`]);
//! 2. the place: a resume's session, or the place reserved under the pre-warm's ticket for
//!    this plan; the pool reuses a live idle process of equal signature there (nothing is
//!    started), else retires it first;
//! 3. a new process: spawned and its handshake, as for a turn;
//! 4. its session opened, as for a turn (a refusal is the run's: `UnknownSession` becomes
//!    `ResumeRejected`, and so does a process that ends saying it does not know the session); then the protocol's [`warm_up`](ResidentProtocol::warm_up) call, so
//!    a CLI that would only finish starting at its first message (the stream-json CLIs, which
//!    print nothing before one) is ready;
//! 5. the process checked in idle under its place, marked pre-warmed: the run that takes it
//!    does not open its session again, and a new session is the one it opened. Unused, it is
//!    evicted like any idle process (idle timeout, `max_live`, close).

use driver_process::command::CliCommand;
use driver_process::pool::{ConversationKey, ProcessPool};
use driver_process::process::Finished;
use driver_spi::{
    DriverError, FailureKind, PrewarmTicket, Redactor, ResumeRejectReason, RunFailure,
};

use super::launch::Launch;
use super::open::{Opened, open};
use super::{InFlight, Pending, ResidentProcess, ResidentProtocol, rpc_failure, with_stderr};
use crate::dialect::session::SessionPlan;
use crate::dialect::{ConfigFiles, Dialect, Invocation, Turn};

/// Pre-warms `turn`'s process (steps 1–5 of the module docs); whether a live idle process
/// already fit (nothing started).
pub(crate) async fn prewarm<D: Dialect>(
    dialect: &D,
    protocol: &dyn ResidentProtocol,
    pool: &ProcessPool<ConversationKey, ResidentProcess>,
    turn: &Turn<'_>,
    config: ConfigFiles,
    command: impl Fn(Invocation, Redactor) -> CliCommand,
    ticket: &PrewarmTicket,
) -> Result<bool, DriverError> {
    let launch = Launch::new(dialect, protocol, pool, turn, config, command)?;
    // With a ticket every plan has a place; a refusal, not a panic, should that ever change.
    let Some(place) = launch.place(Some(ticket)) else {
        return Err(DriverError::Failed(RunFailure::new(
            FailureKind::Other,
            "no pool place for this pre-warm",
        )));
    };
    if let SessionPlan::Fork(parent) = turn.plan {
        // As the run would: no other process holds the parent while the fork opens.
        pool.retire(&launch.key(parent)).await;
    }
    let mut checkout = pool
        .check_out(Some(&place), &launch.signature)
        .await
        .map_err(|e| DriverError::Failed(RunFailure::new(FailureKind::Limit, e.to_string())))?;
    if let Some(process) = checkout.process.take() {
        checkout.check_in(place, process).await;
        return Ok(true);
    }
    let mut flight = InFlight {
        process: Some(launch.start().await?),
        interrupt: None,
        endings: pool.endings(),
        pending: Pending::default(),
    };
    match open(&mut flight, protocol, turn).await {
        Ok(Some(session)) => flight.process().loaded = Some(session),
        Ok(None) => {}
        Err(Opened::Gone(failure)) => {
            let finished = flight.finish().close().await;
            return Err(ended(dialect, turn, failure, &finished));
        }
        Err(Opened::Refused(err)) => {
            let finished = flight.finish().close().await;
            return Err(match err {
                DriverError::Failed(failure) => {
                    DriverError::Failed(with_stderr(failure, &finished))
                }
                other => other,
            });
        }
    }
    if let Some(call) = protocol.warm_up()
        && let Err(err) = flight.process().send(&call).await
    {
        let failure = rpc_failure(protocol, call.method, err);
        let finished = flight.finish().close().await;
        return Err(ended(dialect, turn, failure, &finished));
    }
    let mut process = flight.finish();
    process.prewarmed = true;
    checkout.check_in(place, process).await;
    Ok(false)
}

/// The error of a pre-warm whose process ended before it was ready: a resume the CLI says, in
/// its own words, it does not know is the run's `ResumeRejected` (as the turn's judgement
/// decides: Claude Code names the session on stderr and exits when started with an unknown
/// `--resume`), anything else the process failure with its stderr tail.
fn ended<D: Dialect>(
    dialect: &D,
    turn: &Turn<'_>,
    failure: RunFailure,
    finished: &Finished,
) -> DriverError {
    if turn.plan.is_resuming() {
        // A translator that read nothing: what it knows is the finished process's output.
        let translator = dialect.translator(turn.request, turn.request.redactor());
        if dialect.unknown_session(&translator, finished) {
            return ResumeRejectReason::UnknownSession.into();
        }
    }
    DriverError::Failed(with_stderr(failure, finished))
}
