//! The pre-warm clauses: CAP-05 (the capability is truthful), PRW-01 (a pre-warm then a run
//! reuses the pre-warmed process) and PRW-02 (a pre-warm the run would refuse errors as the
//! run does, before any process starts). Run after PRC, so no process of an earlier turn is
//! alive.

use super::*;
use crate::{Prewarmed, Unsupported};

impl Kit<'_> {
    pub(super) async fn check_prewarm(
        &mut self,
        caps: &crate::Capabilities,
        fresh: SessionContext,
        profile: ProfilePayload,
        refused: Option<(SessionContext, ProfilePayload)>,
    ) {
        let live = |kit: &Self| kit.factory.live_processes();
        if !caps.prewarm {
            // CAP-05: refused as unsupported, nothing started.
            let before = live(self);
            let request = self.factory.prepare(self.request(fresh, &NEW, profile));
            let outcome = CatchUnwind(self.driver.prewarm(request)).await;
            self.r.check(
                Clause::Cap05,
                match outcome {
                    Ok(Err(DriverError::Unsupported(Unsupported::Prewarm)))
                        if live(self) == before =>
                    {
                        Ok(())
                    }
                    Ok(Err(DriverError::Unsupported(Unsupported::Prewarm))) => {
                        Err("a refused pre-warm left a process running".into())
                    }
                    Ok(Ok(_)) => Err("pre-warm is not declared, yet a pre-warm succeeded".into()),
                    Ok(Err(e)) => Err(format!(
                        "pre-warm is not declared, yet it was not refused as unsupported: {e}"
                    )),
                    Err(Panicked) => Err("prewarm panicked".into()),
                },
            );
            self.r.skip(Clause::Prw01, "pre-warm is not declared");
            self.r.skip(Clause::Prw02, "pre-warm is not declared");
            return;
        }
        self.r.check(
            Clause::Cap05,
            if caps.persistent_processes {
                Ok(())
            } else {
                Err("pre-warm is declared without persistent processes".into())
            },
        );

        // PRW-02 first: a refused pre-warm must start nothing.
        match refused {
            None => self.r.skip(
                Clause::Prw02,
                "resume is not declared: no request the driver refuses before launch",
            ),
            Some((session, refused_profile)) => {
                let before = live(self);
                let request =
                    self.factory
                        .prepare(self.request(session.clone(), &NEW, refused_profile));
                let warm = CatchUnwind(self.driver.prewarm(request)).await;
                let after = live(self);
                let turn = self
                    .turn("refused run", session, &NEW, refused_profile)
                    .await;
                self.r.check(
                    Clause::Prw02,
                    match (warm, &turn.result) {
                        (Ok(Err(w)), Ok(Err(r))) if w == *r && after == before => Ok(()),
                        (Ok(Err(w)), Ok(Err(r))) if w == *r => Err(format!(
                            "the refused pre-warm left processes: {before:?} then {after:?}"
                        )),
                        (Ok(Err(w)), _) => Err(format!(
                            "the pre-warm refused with {w}, the run ended with {}",
                            turn.outcome()
                        )),
                        (Ok(Ok(_)), _) => Err(format!(
                            "a pre-warm the run refuses succeeded (the run: {})",
                            turn.outcome()
                        )),
                        (Err(Panicked), _) => Err("prewarm panicked".into()),
                    },
                );
            }
        }

        // PRW-01: the run takes the pre-warmed process.
        let before = live(self);
        let request = self
            .factory
            .prepare(self.request(fresh.clone(), &NEW, profile));
        let warmed = match CatchUnwind(self.driver.prewarm(request)).await {
            Ok(Ok(warmed)) => warmed,
            Ok(Err(e)) => {
                self.r
                    .fail(Clause::Prw01, format!("the pre-warm failed: {e}"));
                return;
            }
            Err(Panicked) => {
                self.r.fail(Clause::Prw01, "prewarm panicked");
                return;
            }
        };
        let after_warm = live(self);
        let Prewarmed { ticket, .. } = warmed;
        self.runs += 1;
        let mut request = self.factory.prepare(self.request(fresh, &NEW, profile));
        if let Some(ticket) = ticket {
            request = request.with_prewarmed(ticket);
        }
        let sink = Arc::new(CollectingSink::new());
        let result = CatchUnwind(self.driver.run(request, sink.clone())).await;
        let turn = Turn {
            label: "run after a pre-warm",
            events: sink.events(),
            result,
        };
        self.check_events(&turn);
        let after_run = live(self);
        self.r.check(
            Clause::Prw01,
            match (turn.response(), before, after_warm, after_run) {
                (Some(r), _, _, _) if !r.is_clean() => Err(format!(
                    "the run after the pre-warm ended with {}",
                    turn.outcome()
                )),
                (None, ..) => Err(format!(
                    "the run after the pre-warm ended with {}",
                    turn.outcome()
                )),
                (Some(_), Some(b), Some(w), Some(_)) if w <= b => Err(format!(
                    "the pre-warm started no process ({b} live before, {w} after)"
                )),
                (Some(_), Some(_), Some(w), Some(r)) if r != w => Err(format!(
                    "the run did not take the pre-warmed process: {w} live after the pre-warm, \
                     {r} after the run"
                )),
                (Some(_), Some(_), Some(_), Some(_)) => Ok(()),
                _ => Err("not judged: the factory does not report live processes".into()),
            },
        );
        if let Some(lifecycle) = self.driver.process_lifecycle() {
            let _ = CatchUnwind(lifecycle.close_processes()).await;
        }
    }
}
