//! The turns the kit drives (A, B, C, the fork and the process lifecycle) and the checks of
//! their events (EVT), responses (RSP), materialization (CUR) and processes (PRC).

use super::*;

impl Kit<'_> {
    /// Builds and runs one turn, and checks its events.
    pub(super) async fn turn(
        &mut self,
        label: &'static str,
        session: SessionContext,
        endpoint: &Endpoint,
        profile: ProfilePayload,
    ) -> Turn {
        self.runs += 1;
        let request = self
            .factory
            .prepare(self.request(session, endpoint, profile));
        let sink = Arc::new(CollectingSink::new());
        let result = CatchUnwind(self.driver.run(request, sink.clone())).await;
        let turn = Turn {
            label,
            events: sink.events(),
            result,
        };
        self.check_events(&turn);
        turn
    }

    pub(super) fn request(
        &self,
        session: SessionContext,
        endpoint: &Endpoint,
        profile: ProfilePayload,
    ) -> Request {
        let server = self.transport.map(|t| match t {
            TransportKind::Stdio => McpServer::stdio("kit-mcp", "kit-mcp-server")
                .with_args(["--endpoint", endpoint.url]),
            TransportKind::Sse => {
                McpServer::sse("kit-mcp", endpoint.url).with_bearer_token_env(endpoint.env_name)
            }
            _ => McpServer::streamable_http("kit-mcp", endpoint.url)
                .with_bearer_token_env(endpoint.env_name),
        });
        let mut service = ServiceRef::new("kit-mcp", "Kit MCP service")
            .with_url(endpoint.url)
            .with_secret_env(EnvBinding::new(endpoint.env_name, endpoint.secret));
        if let Some(server) = &server {
            service = service.with_mcp(server.clone());
        }
        Request::new(
            RunId::new(format!("kit-run-{}", self.runs)),
            PROMPT,
            profile,
        )
        .with_session(session)
        .with_runtime(RuntimePayload::from_services([service]))
        .with_mcp(server)
    }

    pub(super) fn check_events(&mut self, turn: &Turn) {
        let label = turn.label;
        let events = &turn.events;
        let result = match &turn.result {
            Ok(result) => result,
            // A panic is reported by the clause the turn serves.
            Err(Panicked) => return,
        };
        if result.is_err() && events.is_empty() {
            // Failing before the start is allowed: no events at all.
            for clause in [
                Clause::Evt01,
                Clause::Evt02,
                Clause::Evt03,
                Clause::Evt04,
                Clause::Evt05,
            ] {
                self.r.pass(clause);
            }
            return;
        }
        let at = |e: crate::SequenceError| format!("{label}: {e}");
        self.r.check(Clause::Evt01, check_start(events).map_err(at));
        let terminal = check_terminal(events);
        self.r
            .check(Clause::Evt02, terminal.clone().map(|_| ()).map_err(at));
        self.r.check(
            Clause::Evt03,
            match terminal {
                Ok(index) if index + 1 < events.len() => Err(format!(
                    "{label}: event {} comes after the terminal event",
                    index + 1
                )),
                _ => Ok(()),
            },
        );
        self.r
            .check(Clause::Evt04, check_lifecycles(events).map_err(at));
        let last = events.last();
        self.r.check(
            Clause::Evt05,
            match (result, last) {
                (Ok(r), Some(DriverEvent::RunFinished)) if r.is_clean() => Ok(()),
                (Ok(r), Some(DriverEvent::RunFailed { .. })) if !r.is_clean() => Ok(()),
                (Err(_), Some(DriverEvent::RunFailed { .. })) => Ok(()),
                (Ok(r), _) if r.is_clean() => Err(format!(
                    "{label}: a clean response must end with run-finished"
                )),
                _ => Err(format!(
                    "{label}: a failed run ({}) must end with run-failed",
                    turn.outcome()
                )),
            },
        );
    }

    /// RSP-01 and RSP-02 on one turn; returns the state the core would store, after the
    /// codec round trip.
    ///
    /// A turn that returned an error has no checkpoint to judge. Only when it is the first
    /// turn, which every driver must complete, do both clauses fail (closed); otherwise the
    /// clause the turn serves reports it.
    pub(super) fn check_response(
        &mut self,
        turn: &Turn,
        session_turn: bool,
    ) -> Option<SessionState> {
        let label = turn.label;
        let Some(response) = turn.response() else {
            if label == FIRST_TURN {
                let why = format!("not checked: {label} ended with {}", turn.outcome());
                self.r.fail(Clause::Rsp01, why.clone());
                self.r.fail(Clause::Rsp02, why);
            }
            return None;
        };
        let valid = response.checkpoint.as_ref().filter(|c| c.valid);
        self.r.check(
            Clause::Rsp01,
            match valid {
                Some(_) if !response.is_clean() => Err(format!(
                    "{label}: a valid checkpoint after a failed outcome ({})",
                    response.exit
                )),
                Some(c) if c.state.resume_id.trim().is_empty() => {
                    Err(format!("{label}: a valid checkpoint without a resume id"))
                }
                Some(_) if !session_turn => {
                    Err(format!("{label}: a valid checkpoint from a stateless run"))
                }
                _ => Ok(()),
            },
        );
        if !session_turn {
            self.r.skip(Clause::Rsp02, "resume is not declared");
            return None;
        }
        let Some(checkpoint) = valid else {
            self.r.fail(
                Clause::Rsp02,
                format!("{label}: a clean session turn gave no valid checkpoint"),
            );
            return None;
        };
        let Some(codec) = self.driver.session_codec() else {
            self.r.fail(Clause::Rsp02, "no session codec");
            return None;
        };
        let state = &checkpoint.state;
        let restored = match catch(|| codec.to_params(Some(state))) {
            Ok(Ok(Some(params))) => match catch(|| {
                let guard = codec.guard_fingerprint(&params);
                (codec.from_params(Some(&params)), guard)
            }) {
                Ok((Ok(Some(restored)), _)) => Ok(restored),
                Ok((Ok(None), _)) => Err("from_params returned None".to_owned()),
                Ok((Err(e), _)) => Err(format!("from_params rejected it: {e}")),
                Err(p) => Err(p),
            },
            Ok(Ok(None)) => Err("to_params returned None".to_owned()),
            Ok(Err(e)) => Err(format!("to_params rejected it: {e}")),
            Err(p) => Err(p),
        };
        match restored {
            Ok(restored) if restored.resume_id == state.resume_id => {
                self.r.pass(Clause::Rsp02);
                Some(restored)
            }
            Ok(_) => {
                self.r.fail(
                    Clause::Rsp02,
                    format!("{label}: the codec round trip changed the checkpoint's resume id"),
                );
                None
            }
            Err(why) => {
                self.r.fail(
                    Clause::Rsp02,
                    format!("{label}: the driver's own codec cannot store its checkpoint: {why}"),
                );
                None
            }
        }
    }

    pub(super) fn check_current_request(
        &mut self,
        turn_b: &Turn,
        materialized_a: Option<SecretString>,
        materialized_b: Option<SecretString>,
    ) {
        if !matches!(turn_b.response(), Some(r) if r.is_clean()) {
            self.r.fail(
                Clause::Cur01,
                format!("not checked: turn B ended with {}", turn_b.outcome()),
            );
            return;
        }
        let (Some(a), Some(b)) = (materialized_a, materialized_b) else {
            self.r.skip(
                Clause::Cur01,
                "the factory exposes no observed materialization",
            );
            return;
        };
        let (a, b) = (a.expose_secret(), b.expose_secret());
        let mcp = self.transport.is_some();
        let mut items = vec![
            ("URL", OLD.url, NEW.url),
            ("secret value", OLD.secret, NEW.secret),
        ];
        if mcp {
            items.push(("bearer env-var name", OLD.env_name, NEW.env_name));
        }
        for (what, old, _) in &items {
            if !a.contains(old) {
                self.r.fail(
                    Clause::Cur01,
                    format!(
                        "the materialization observed after turn A lacks its {what}: the hook \
                         does not show what the driver materialized"
                    ),
                );
                return;
            }
        }
        for (what, old, new) in items {
            if !b.contains(new) {
                self.r.fail(
                    Clause::Cur01,
                    format!("the resumed turn did not materialize the new {what}"),
                );
                return;
            }
            if b.contains(old) {
                self.r.fail(
                    Clause::Cur01,
                    format!("the resumed turn still materialized the old {what}"),
                );
                return;
            }
        }
        self.r.pass(Clause::Cur01);
    }

    pub(super) async fn check_guard_rule(
        &mut self,
        state_a: &SessionState,
        turn_b: &Turn,
        state_b: Option<&SessionState>,
        profile_c: ProfilePayload,
    ) {
        match &turn_b.result {
            Ok(Err(DriverError::ResumeRejected { reason })) => {
                self.r.fail(
                    Clause::Ses06,
                    format!(
                        "a resume with an unchanged session-compatibility fingerprint (only the \
                         exact fingerprint and the endpoint changed) was rejected ({reason})"
                    ),
                );
            }
            Ok(Ok(r)) if r.is_clean() => {}
            _ => {
                self.r.fail(
                    Clause::Ses06,
                    format!("not checked: turn B ended with {}", turn_b.outcome()),
                );
                return;
            }
        }
        // The stored guard survives the rotation.
        if let (Some(codec), Some(state_b)) = (self.driver.session_codec(), state_b) {
            let guards = catch(|| {
                let a = codec.to_params(Some(state_a)).ok().flatten();
                let b = codec.to_params(Some(state_b)).ok().flatten();
                a.zip(b)
                    .map(|(a, b)| (codec.guard_fingerprint(&a), codec.guard_fingerprint(&b)))
            });
            match guards {
                Ok(Some((a, b))) if a == b => {}
                Ok(Some(_)) => self.r.fail(
                    Clause::Ses06,
                    "the guard stored after an endpoint rotation differs from the one before: \
                     it is built from the exact fingerprint",
                ),
                Ok(None) => {}
                Err(p) => self.r.fail(Clause::Ses06, format!("guard_fingerprint {p}")),
            }
        }
        // A real semantic change is rejected.
        let parent = state_b.unwrap_or(state_a).clone();
        let turn_c = self
            .turn(
                "turn C",
                SessionContext::continue_only(parent),
                &NEW,
                profile_c,
            )
            .await;
        match &turn_c.result {
            Ok(Err(DriverError::ResumeRejected { .. })) => self.r.pass(Clause::Ses06),
            _ => self.r.fail(
                Clause::Ses06,
                format!(
                    "a resume with a changed session-compatibility fingerprint ended with {} \
                     instead of a resume rejection",
                    turn_c.outcome()
                ),
            ),
        }
    }

    pub(super) async fn check_processes(&mut self, fresh: SessionContext, profile: ProfilePayload) {
        let driver = self.driver.clone();
        let Some(lifecycle) = driver.process_lifecycle() else {
            self.r
                .skip(Clause::Prc01, "persistent processes are not declared");
            self.r
                .skip(Clause::Prc02, "persistent processes are not declared");
            return;
        };
        let first = CatchUnwind(lifecycle.close_processes()).await;
        let second = CatchUnwind(lifecycle.close_processes()).await;
        match (first, second) {
            (Ok(Ok(())), Ok(Ok(()))) => {}
            (Ok(Err(e)), _) => self
                .r
                .fail(Clause::Prc01, format!("close_processes failed: {e}")),
            (_, Ok(Err(e))) => self.r.fail(
                Clause::Prc01,
                format!("a second close_processes failed: {e}"),
            ),
            _ => self.r.fail(Clause::Prc01, "close_processes panicked"),
        }
        match self.factory.live_processes() {
            Some(0) => self.r.pass(Clause::Prc02),
            Some(n) => self.r.fail(
                Clause::Prc02,
                format!("{n} process(es) still alive after close_processes"),
            ),
            None => self
                .r
                .skip(Clause::Prc02, "the factory does not report live processes"),
        }
        let again = self.turn("turn after close", fresh, &NEW, profile).await;
        match again.response() {
            Some(r) if r.is_clean() => self.r.pass(Clause::Prc01),
            _ => self.r.fail(
                Clause::Prc01,
                format!(
                    "the run after close_processes ended with {}",
                    again.outcome()
                ),
            ),
        }
        // Leave nothing running.
        let _ = CatchUnwind(lifecycle.close_processes()).await;
    }
}
