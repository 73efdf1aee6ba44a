//! [`Driver::prewarm`](driver_spi::Driver::prewarm) of a [`CliDriver`]: the checks of a run
//! (steps 1–3 of the [driver's steps](super)), then, in resident mode, the resident pre-warm
//! ([`crate::resident::prewarm`]). With one process per turn there is nothing to keep warm:
//! [`Unsupported::Prewarm`], before anything else.

use driver_spi::{DriverError, PrewarmTicket, Prewarmed, Request, Unsupported};

use crate::dialect::session::SessionPlan;
use crate::dialect::{Dialect, Turn};
use crate::driver::CliDriver;

impl<D: Dialect> CliDriver<D> {
    /// Whether the driver pre-warms: in resident mode, with a resident protocol.
    pub(super) fn prewarms(&self) -> bool {
        self.pool.is_some() && self.options.resident().is_some()
    }

    /// Pre-warms the process of the next run of `request` (see the module docs).
    pub(super) async fn prewarm_request(&self, request: Request) -> Result<Prewarmed, DriverError> {
        let (Some(pool), Some(protocol), true) =
            (&self.pool, self.options.resident(), self.prewarms())
        else {
            return Err(Unsupported::Prewarm.into());
        };
        let new_id = uuid::Uuid::now_v7().to_string();
        let (plan, config, resident) = self.prepare(&request, &new_id)?;
        if self.options.probes_version() {
            self.check_version().await?;
        }
        let turn = Turn {
            env: &self.env,
            request: &request,
            plan,
            run_file: None,
            resident,
        };
        let ticket = PrewarmTicket::new();
        let command = |invocation, redactor| self.command(&request, invocation, redactor);
        let reused = crate::resident::prewarm::prewarm(
            &self.options,
            protocol,
            pool,
            &turn,
            config,
            command,
            &ticket,
        )
        .await?;
        // A resume's process is found by its session; every other plan's by the ticket.
        let ticket = (!matches!(plan, SessionPlan::Resume(_))).then_some(ticket);
        Ok(Prewarmed::new(ticket)
            .with_reused(reused)
            .with_expires_after(Some(pool.limits().idle_timeout)))
    }
}
