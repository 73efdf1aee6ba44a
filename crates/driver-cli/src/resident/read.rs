//! Step 5 of a resident turn: the prompt sent once, then the turn's messages read until the
//! translator says it ended, answering the process's requests (approvals by the run's policy
//! or the host) on the way.
//!
//! Where the protocol names turns ([`ResidentProtocol::turn_of`]), only this turn's messages
//! are read: notifications that arrive before the prompt's answer names the turn are held
//! (in order, at most [`MAX_HELD`]) and then read or dropped by their turn.

use std::collections::VecDeque;

use super::*;

/// The most notifications held while the prompt's answer is awaited; more fail the turn.
const MAX_HELD: usize = 1024;

/// How reading a turn ended.
pub(super) enum Read {
    /// The translator said the turn ended.
    Ended,
    /// The prompt could not be written: it was never delivered.
    Undelivered(RunFailure),
    /// The turn stopped early, after the prompt was delivered.
    Stopped(Stop),
}

/// Sends the prompt and forwards the turn's translated notifications until the translator
/// says the turn ended; `Some` when it stopped early. Approval requests are redacted with the
/// turn's `redactor`, as its events are.
#[allow(
    clippy::too_many_arguments,
    reason = "one turn's parts, borrowed separately"
)]
pub(super) async fn read_turn<T: crate::Translator>(
    flight: &mut InFlight,
    request: &Request,
    redactor: &Redactor,
    protocol: &dyn ResidentProtocol,
    prompt: &Call,
    session: Option<&str>,
    translator: &mut Tracked<T>,
    mut gate: Gate<'_>,
    started: &mut bool,
    sink: &dyn EventSink,
) -> Read {
    let InFlight {
        process, interrupt, ..
    } = flight;
    let Some(process) = process.as_mut() else {
        return Read::Stopped(Stop::Ended);
    };
    let limits = process.limits;
    let deadline = deadline_after(Instant::now(), limits.total_timeout);
    let ResidentProcess { peer, incoming, .. } = process;
    let sent = if prompt.notification {
        peer.notify(prompt.method, prompt.params.clone())
            .await
            .map(|()| None)
    } else {
        peer.send_request(prompt.method, prompt.params.clone())
            .await
            .map(Some)
    };
    let answer = match sent {
        Ok(answer) => answer,
        Err(err) => return Read::Undelivered(rpc_failure(protocol, prompt.method, err)),
    };
    // Delivered: from now on a cancellation interrupts the turn.
    *interrupt = protocol.interrupt(session, None);
    let mut answered = answer.is_none();
    let mut answer = std::pin::pin!(async move {
        match answer {
            Some(answer) => answer.wait(limits.idle_timeout).await,
            None => std::future::pending().await,
        }
    });
    let mut received = 0usize;
    // This turn's id, once the prompt's answer named it; notifications wait in `held` until
    // then (afterwards each is read on the next pass).
    let mut own: Option<String> = None;
    let mut held: VecDeque<(String, Value)> = VecDeque::new();
    loop {
        if answered && let Some((method, params)) = held.pop_front() {
            if let Some(stop) = notified(
                protocol,
                own.as_deref(),
                &method,
                &params,
                &mut received,
                translator,
                &mut gate,
                started,
                sink,
            ) {
                break Read::Stopped(stop);
            }
            continue;
        }
        if answered && translator.turn_ended() {
            break Read::Ended;
        }
        let now = Instant::now();
        if now >= deadline {
            break Read::Stopped(Stop::Cli(CliError::TotalTimeout {
                after: limits.total_timeout,
            }));
        }
        let idle = deadline_after(now, limits.idle_timeout).min(deadline);
        tokio::select! {
            result = &mut answer, if !answered => {
                answered = true;
                match result {
                    Ok(value) => {
                        // What a cancellation sends from now on, with the turn's id.
                        if let Some(id) = protocol.prompt_accepted(&value) {
                            *interrupt = protocol.interrupt(session, Some(&id));
                            own = Some(id);
                        }
                    }
                    Err(err) => {
                        let failure = rpc_failure(protocol, prompt.method, err);
                        break Read::Stopped(Stop::Refused(failure));
                    }
                }
            }
            message = incoming.recv() => match message {
                None => break Read::Stopped(Stop::Ended),
                Some(Incoming::Notification { method, params }) => {
                    // Read at the top of the loop, once the prompt's answer named the turn.
                    if held.len() >= MAX_HELD {
                        let failure = RunFailure::new(
                            FailureKind::Protocol,
                            format!(
                                "resident process: more than {MAX_HELD} messages before the \
                                 answer to `{}`",
                                prompt.method
                            ),
                        );
                        break Read::Stopped(Stop::Refused(failure));
                    }
                    held.push_back((method, params));
                }
                Some(Incoming::Request { id, method, params })
                    if another_turn(protocol, own.as_deref(), &method, &params) =>
                {
                    tracing::debug!(method, "a request of another turn was refused");
                    if peer.respond_error(id, -32600, "not the current turn").await.is_err() {
                        break Read::Stopped(Stop::Ended);
                    }
                }
                Some(Incoming::Request { id, method, params }) => {
                    let sent = if let Some(query) = protocol.approval(request, &method, &params) {
                        // The CLI waits for this answer: no idle time runs meanwhile.
                        let decision =
                            crate::approval::decide(request, redactor, sink, query).await;
                        let result = protocol.approval_answer(&method, &params, &decision);
                        peer.respond(id, result).await
                    } else {
                        match protocol.answer(&method, &params) {
                            Some(result) => peer.respond(id, result).await,
                            None => {
                                peer.respond_error(id, -32601, "not supported by this client").await
                            }
                        }
                    };
                    if sent.is_err() {
                        break Read::Stopped(Stop::Ended);
                    }
                }
            },
            () = tokio::time::sleep_until(idle) => {
                break Read::Stopped(Stop::Cli(if idle >= deadline {
                    CliError::TotalTimeout { after: limits.total_timeout }
                } else {
                    CliError::IdleTimeout { after: limits.idle_timeout }
                }));
            }
        }
    }
}

/// Whether a message names a turn other than this one (`own`, once known).
fn another_turn(
    protocol: &dyn ResidentProtocol,
    own: Option<&str>,
    method: &str,
    params: &Value,
) -> bool {
    own.is_some_and(|own| {
        protocol
            .turn_of(method, params)
            .is_some_and(|theirs| theirs != own)
    })
}

/// Reads one notification of the turn into the translator and the sink (one of another turn
/// is dropped); `Some` when it stops the turn.
#[allow(
    clippy::too_many_arguments,
    reason = "one turn's parts, borrowed separately"
)]
fn notified<T: crate::Translator>(
    protocol: &dyn ResidentProtocol,
    own: Option<&str>,
    method: &str,
    params: &Value,
    received: &mut usize,
    translator: &mut Tracked<T>,
    gate: &mut Gate<'_>,
    started: &mut bool,
    sink: &dyn EventSink,
) -> Option<Stop> {
    if another_turn(protocol, own, method, params) {
        tracing::debug!(method, "a notification of another turn was dropped");
        return None;
    }
    *received += 1;
    let Ok(events) = translator.translate_kind(method, params) else {
        return Some(Stop::Cli(CliError::MalformedJson { line: *received }));
    };
    if let Some(stop) = gate.check(translator) {
        return Some(stop);
    }
    for event in events {
        sink.emit(event);
    }
    *started = translator.started();
    None
}

/// `now + d`, saturating to a far future instead of overflowing.
fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}
