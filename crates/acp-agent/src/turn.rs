//! One turn of a session: `session/prompt` runs the Thread, streams its `session/update`s and
//! turns its approvals into `session/request_permission` requests.

use std::sync::{Arc, Mutex};

use agent::{Agent, ApprovalTicket, Approvals, ThreadError, ThreadEventKind};
use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

use crate::{Error, Server, SessionRecord, code, sessions, thread_error};

/// The prompt in flight of a session: its cancel signal and its open permission tickets.
#[derive(Clone)]
pub(crate) struct Running {
    cancel: Arc<tokio::sync::Notify>,
    cancelled: Arc<std::sync::atomic::AtomicBool>,
    tickets: Arc<Mutex<Vec<ApprovalTicket>>>,
}

impl Running {
    pub(crate) fn cancel(&self) {
        self.cancelled
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel.notify_one();
        let tickets = std::mem::take(&mut *self.tickets.lock().unwrap_or_else(|e| e.into_inner()));
        for ticket in tickets {
            let _ = ticket.deny("the editor cancelled the turn");
        }
    }
}

impl Server {
    pub(crate) async fn run_prompt(self: &Arc<Self>, params: Value) -> Result<Value, Error> {
        let request: acp::PromptRequest = crate::params("session/prompt", params)?;
        let session_id = request.session_id.0.to_string();
        let text = prompt_text(&request.prompt)?;
        let running = Running {
            cancel: Arc::new(tokio::sync::Notify::new()),
            cancelled: Arc::default(),
            tickets: Arc::default(),
        };
        let (agent, record) = {
            let mut live = self.lock_live();
            let Some(session) = live.get_mut(&session_id) else {
                return Err(Error::new(
                    code::NOT_FOUND,
                    format!(
                        "session {session_id} is not open: session/new or session/resume first"
                    ),
                ));
            };
            if session.running.is_some() {
                return Err(Error::new(code::BUSY, "the session has a prompt in flight"));
            }
            session.running = Some(running.clone());
            (session.agent.clone(), session.record.clone())
        };
        let outcome = self.drive(&agent, &record, text, &running).await;
        let mut live = self.lock_live();
        if let Some(session) = live.get_mut(&session_id) {
            session.running = None;
            if outcome.as_ref().is_ok_and(|stop| *stop == "end_turn") {
                let mut updated = session.record.clone();
                updated.prompted = true;
                updated.updated_ms = sessions::now_ms();
                match self.config.sessions.save(&updated) {
                    Ok(()) => session.record = updated,
                    Err(e) => tracing::error!("acp-agent: cannot update the session: {e}"),
                }
            }
        }
        drop(live);
        // Tickets still open after the run ended are denied (the run no longer waits on them).
        running.cancel();
        outcome.map(|stop| json!({"stopReason": stop}))
    }

    /// Runs one turn, streaming its updates; the stop reason.
    async fn drive(
        self: &Arc<Self>,
        agent: &Agent,
        record: &SessionRecord,
        text: String,
        running: &Running,
    ) -> Result<&'static str, Error> {
        let mut thread = agent.thread(record.thread_key.clone());
        // A prompted session, or one whose Thread exists, never starts over.
        let stored = thread.checkpoint().await.map_err(thread_error)?;
        if record.prompted || stored.is_some() {
            thread = thread.resume_only();
        }
        let approvals = Approvals::new(self.approval_handler(&record.session_id, running))
            .with_timeout(self.config.approval_timeout);
        let mut stream = thread
            .with_approvals(approvals)
            .stream(text)
            .map_err(thread_error)?;
        let session_id = record.session_id.clone();
        loop {
            let event = tokio::select! {
                event = stream.next_event() => event,
                () = running.cancel.notified() => {
                    stream.cancel();
                    continue;
                }
            };
            let Some(event) = event else { break };
            if let Some(update) = session_update(&event.kind) {
                let sent = self
                    .peer
                    .notify(
                        "session/update",
                        json!({"sessionId": session_id, "update": update}),
                    )
                    .await;
                if sent.is_err() {
                    stream.cancel();
                }
            } else if let ThreadEventKind::Warning { code, message } = &event.kind {
                tracing::warn!(code = %code, "acp-agent: {message}");
            }
        }
        let cancelled = running.cancelled.load(std::sync::atomic::Ordering::SeqCst);
        match stream.result().await {
            Ok(_) if cancelled => Ok("cancelled"),
            Ok(_) => Ok("end_turn"),
            Err(_) if cancelled => Ok("cancelled"),
            Err(ThreadError::Cancelled) => Ok("cancelled"),
            Err(e) => Err(thread_error(e)),
        }
    }

    /// Each ticket becomes one `session/request_permission`; the first answer stands.
    fn approval_handler(
        self: &Arc<Self>,
        session_id: &str,
        running: &Running,
    ) -> Arc<dyn agent::ApprovalHandler> {
        let server = Arc::downgrade(self);
        let session_id = session_id.to_owned();
        let tickets = Arc::clone(&running.tickets);
        let timeout = self.config.approval_timeout;
        let handle = tokio::runtime::Handle::current();
        Arc::new(move |ticket: ApprovalTicket| {
            tickets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ticket.clone());
            let Some(server) = server.upgrade() else {
                let _ = ticket.deny("the editor is gone");
                return;
            };
            let session_id = session_id.clone();
            handle.spawn(async move {
                let request = ticket.request();
                let call_id = request.call_id.clone().unwrap_or_else(|| request.id.clone());
                let params = json!({
                    "sessionId": session_id,
                    "toolCall": {
                        "toolCallId": call_id,
                        "title": format!("{} {}", request.action.as_str(), request.tool),
                        "status": "pending",
                        "rawInput": {"action": request.action.as_str(), "tool": request.tool, "arguments": request.arguments},
                    },
                    "options": [
                        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
                    ],
                });
                let answer = server
                    .peer
                    .request("session/request_permission", params, timeout)
                    .await;
                let selected = answer.ok().and_then(|v| {
                    serde_json::from_value::<acp::RequestPermissionResponse>(v).ok()
                });
                // A second answer (the timeout or a cancel came first) is refused by the ticket.
                let _ = match selected.map(|r| r.outcome) {
                    Some(acp::RequestPermissionOutcome::Selected(s))
                        if &*s.option_id.0 == "allow_once" =>
                    {
                        ticket.approve()
                    }
                    Some(acp::RequestPermissionOutcome::Selected(_)) => {
                        ticket.deny("rejected by the editor")
                    }
                    Some(_) => ticket.deny("the editor cancelled the request"),
                    None => ticket.deny("no answer from the editor"),
                };
            });
        })
    }
}

/// The prompt's text: text blocks as they are, resource links by their URI.
fn prompt_text(blocks: &[acp::ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(text) => parts.push(text.text.clone()),
            acp::ContentBlock::ResourceLink(link) => parts.push(link.uri.clone()),
            _ => {
                return Err(Error::new(
                    code::INVALID_PARAMS,
                    "only text and resource_link prompt blocks are supported",
                ));
            }
        }
    }
    Ok(parts.join("\n"))
}

/// The `session/update` of a run's event, if the editor is told about it.
fn session_update(kind: &ThreadEventKind) -> Option<Value> {
    Some(match kind {
        ThreadEventKind::TextDelta { delta } => json!({
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": delta},
        }),
        ThreadEventKind::ReasoningDelta { delta } => json!({
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": delta},
        }),
        ThreadEventKind::Plan { entries } => {
            let entries: Vec<Value> = entries
                .iter()
                .map(|e| {
                    json!({
                        "content": e.content,
                        "priority": serde_json::to_value(e.priority).unwrap_or(json!("medium")),
                        "status": serde_json::to_value(e.status).unwrap_or(json!("pending")),
                    })
                })
                .collect();
            json!({"sessionUpdate": "plan", "entries": entries})
        }
        ThreadEventKind::ToolCallStarted { call_id, name } => json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": name,
            "status": "in_progress",
        }),
        ThreadEventKind::ToolCallResult {
            call_id,
            output,
            is_error,
        } => json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": if *is_error { "failed" } else { "completed" },
            "content": [{"type": "content", "content": {"type": "text", "text": output}}],
        }),
        _ => return None,
    })
}
