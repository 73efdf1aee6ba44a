//! Step 5 of a resident turn: the prompt sent once, then the turn's messages read until the
//! translator says it ended, answering the process's requests (approvals by the run's policy
//! or the host) on the way.
//!
//! The answer to a prompt sent as a request is the turn's last message from the process's
//! side: it reaches the translator as a message of the prompt's method, after every message
//! the process sent before it, so a protocol whose turn ends with that answer (ACP's
//! `session/prompt` returns the stop reason) ends the turn there.
//!
//! Where the protocol names turns ([`ResidentProtocol::turn_of`]), only this turn's messages
//! are read: a notification that names a turn before the prompt's answer named this one is
//! held (in order, at most [`MAX_HELD`]) and then read or dropped by its turn.

use std::collections::VecDeque;

use super::steer::{FollowUps, Steered};
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

/// Sends the prompt and forwards the turn's translated messages until the translator says
/// the turn ended. Approval requests are redacted with the turn's `redactor`, as its events
/// are.
#[allow(
    clippy::too_many_arguments,
    reason = "one turn's parts, borrowed separately"
)]
pub(super) async fn read_turn<T: crate::dialect::Translator>(
    flight: &mut InFlight,
    request: &Request,
    redactor: &Redactor,
    protocol: &dyn ResidentProtocol,
    prompt: &Call,
    session: Option<&str>,
    translator: &mut Tracked<T>,
    gate: Gate<'_>,
    started: &mut bool,
    sink: &dyn EventSink,
) -> Read {
    let InFlight {
        process,
        interrupt,
        pending,
        ..
    } = flight;
    let Some(process) = process.as_mut() else {
        return Read::Stopped(Stop::Ended);
    };
    let limits = process.limits;
    let deadline = deadline_after(Instant::now(), limits.total_timeout);
    let ResidentProcess { peer, incoming, .. } = process;
    let sent = if prompt.notification {
        peer.notify(prompt.method, prompt.wire_params())
            .await
            .map(|()| None)
    } else {
        peer.send_request(prompt.method, prompt.wire_params())
            .await
            .map(Some)
    };
    let mut follow_ups = super::steer::FollowUps::new(request, protocol);
    let answer = match sent {
        Ok(answer) => answer,
        Err(err) => return Read::Undelivered(rpc_failure(protocol, prompt.method, err)),
    };
    follow_ups.prompt_delivered();
    // Delivered: from now on a cancellation interrupts the turn.
    *interrupt = protocol.interrupt(session, None);
    let mut answered = answer.is_none();
    let mut answer = std::pin::pin!(async move {
        match answer {
            Some(answer) => answer.wait(limits.idle_timeout).await,
            None => std::future::pending().await,
        }
    });
    let mut reader = Reader {
        request,
        redactor,
        protocol,
        prompt,
        peer,
        translator,
        gate,
        started,
        sink,
        received: 0,
        own: None,
        held: VecDeque::new(),
        notes: TurnNotes::default(),
        pending,
    };
    loop {
        if answered && reader.translator.turn_ended() {
            follow_ups.settle(reader.translator, (reader.sink, redactor));
            break Read::Ended;
        }
        let now = Instant::now();
        if now >= deadline {
            break Read::Stopped(Stop::Cli(ProcessError::TotalTimeout {
                after: limits.total_timeout,
            }));
        }
        let idle = deadline_after(now, limits.idle_timeout).min(deadline);
        tokio::select! {
            // The answer first: the reader routed it before any message that follows it on
            // the wire, so taking it first keeps the process's order (a crash right after a
            // turn's first messages still shows them).
            biased;
            result = &mut answer, if !answered => {
                answered = true;
                let value = match result {
                    Ok(value) => value,
                    Err(err) => {
                        // What the process sent before its output ended is the turn's: an
                        // ACP prompt is answered last, so its updates are queued here.
                        if matches!(err, RpcError::Closed) {
                            while let Some(message) = incoming.try_recv() {
                                if let Some(stop) = reader.message(message, answered).await {
                                    return Read::Stopped(stop);
                                }
                            }
                        }
                        let failure = rpc_failure(protocol, prompt.method, err);
                        break Read::Stopped(Stop::Refused(failure));
                    }
                };
                // What a cancellation sends from now on, with the turn's id.
                if let Some(id) = protocol.prompt_accepted(&value) {
                    *interrupt = protocol.interrupt(session, Some(&id));
                    reader.own = Some(id);
                }
                if let Some(stop) = reader.answered(incoming, value).await {
                    break Read::Stopped(stop);
                }
            }
            message = incoming.recv() => {
                let Some(message) = message else {
                    break Read::Stopped(Stop::Ended);
                };
                if let Some(stop) = reader.message(message, answered).await {
                    break Read::Stopped(stop);
                }
            }
            steered = follow_ups.next(), if follow_ups.active(answered && *reader.started) => {
                let shown = (reader.sink, redactor);
                match steered {
                    Steered::Next(follow_up) => {
                        let names = (session, reader.own.as_deref());
                        follow_ups
                            .deliver(follow_up, reader.peer, protocol, names, limits.idle_timeout,
                                     reader.translator, shown)
                            .await;
                    }
                    Steered::Answered(follow_up, result) => {
                        FollowUps::answered(follow_up, result, reader.translator, shown);
                    }
                }
            }
            () = tokio::time::sleep_until(idle) => {
                break Read::Stopped(Stop::Cli(if idle >= deadline {
                    ProcessError::TotalTimeout { after: limits.total_timeout }
                } else {
                    ProcessError::IdleTimeout { after: limits.idle_timeout }
                }));
            }
        }
    }
}

/// One turn's reading state: what the process's messages go through.
struct Reader<'t, 'g, T: crate::dialect::Translator> {
    request: &'t Request,
    /// The turn's one redactor (approval requests pass it).
    redactor: &'t Redactor,
    protocol: &'t dyn ResidentProtocol,
    prompt: &'t Call,
    peer: &'t RpcPeer,
    translator: &'t mut Tracked<T>,
    gate: Gate<'g>,
    started: &'t mut bool,
    sink: &'t dyn EventSink,
    /// Messages translated so far (the line a malformed one is reported at).
    received: usize,
    /// This turn's id, once the prompt's answer named it.
    own: Option<String>,
    /// Notifications naming a turn, waiting for the answer that names this one.
    held: VecDeque<(String, Value)>,
    /// What the turn's notifications told its permission requests.
    notes: TurnNotes,
    /// The requests being decided, answered on cancellation.
    pending: &'t super::Pending,
}

impl<T: crate::dialect::Translator> Reader<'_, '_, T> {
    /// One message of the process; `Some` when it stops the turn.
    async fn message(&mut self, message: Incoming, answered: bool) -> Option<Stop> {
        match message {
            Incoming::Notification { method, params } => {
                // Noted on arrival, held or not: a request may follow before the answer.
                if !another_turn(self.protocol, self.own.as_deref(), &method, &params)
                    && let Some((key, value)) = self.protocol.note(&method, &params)
                {
                    self.notes.insert(key, value);
                }
                let names_a_turn = self.protocol.turn_of(&method, &params).is_some();
                if !answered && names_a_turn {
                    if self.held.len() >= MAX_HELD {
                        return Some(Stop::Refused(RunFailure::new(
                            FailureKind::Protocol,
                            format!(
                                "resident process: more than {MAX_HELD} messages before the \
                                 answer to `{}`",
                                self.prompt.method
                            ),
                        )));
                    }
                    self.held.push_back((method, params));
                    return None;
                }
                self.notified(&method, &params)
            }
            Incoming::Request { id, method, params } => self.requested(id, &method, &params).await,
        }
    }

    /// The prompt's answer arrived: what the process sent before it is read first (it is all
    /// queued: the reader reads in order), then the held notifications, then the answer
    /// itself, as a message of the prompt's method.
    async fn answered(&mut self, incoming: &mut Inbox, value: Value) -> Option<Stop> {
        while let Some(message) = incoming.try_recv() {
            if let Some(stop) = self.message(message, true).await {
                return Some(stop);
            }
        }
        while let Some((method, params)) = self.held.pop_front() {
            if let Some(stop) = self.notified(&method, &params) {
                return Some(stop);
            }
        }
        let method = self.prompt.method;
        self.notified(method, &value)
    }

    /// Answers a request of the process: an approval by the run's policy or the host, another
    /// by the protocol; one of another turn is refused.
    async fn requested(&mut self, id: Value, method: &str, params: &Value) -> Option<Stop> {
        let (protocol, request, peer) = (self.protocol, self.request, self.peer);
        let sent = if another_turn(protocol, self.own.as_deref(), method, params) {
            tracing::debug!(method, "a request of another turn was refused");
            peer.respond_error(id, -32600, "not the current turn").await
        } else if let Some(query) = protocol.approval(request, method, params, &self.notes) {
            // Answered for the process if the turn is cancelled while it is decided.
            let cancelled = protocol.cancelled_answer(method, params);
            if let Some(answer) = &cancelled {
                self.pending_mut().push((id.clone(), answer.clone()));
            }
            // The CLI waits for this answer: no idle time runs meanwhile.
            let decision =
                crate::resident::approval::decide(request, self.redactor, self.sink, query).await;
            if cancelled.is_some() {
                self.pending_mut().retain(|(pending, _)| *pending != id);
            }
            let result = protocol.approval_answer(request, method, params, &decision);
            peer.respond(id, result).await
        } else {
            match protocol.answer(method, params) {
                Some(result) => peer.respond(id, result).await,
                None => {
                    peer.respond_error(id, -32601, "not supported by this client")
                        .await
                }
            }
        };
        sent.is_err().then_some(Stop::Ended)
    }

    fn pending_mut(&self) -> std::sync::MutexGuard<'_, Vec<(Value, Value)>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads one notification of the turn into the translator and the sink (one of another
    /// turn is dropped); `Some` when it stops the turn.
    fn notified(&mut self, method: &str, params: &Value) -> Option<Stop> {
        if another_turn(self.protocol, self.own.as_deref(), method, params) {
            tracing::debug!(method, "a notification of another turn was dropped");
            return None;
        }
        self.received += 1;
        let Ok(events) = self.translator.translate_kind(method, params) else {
            return Some(Stop::Cli(ProcessError::MalformedJson {
                line: self.received,
            }));
        };
        if let Some(stop) = self.gate.check(self.translator) {
            return Some(stop);
        }
        for event in events {
            self.sink.emit(event);
        }
        *self.started = self.translator.started();
        None
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

/// `now + d`, saturating to a far future instead of overflowing.
fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}
