//! The run's permission policy applied to a runtime's permission request: allowed, denied, or
//! asked of the host.

use driver_spi::{ApprovalDecision, ApprovalQuery, EventSink, Permission, Redactor, Request};

/// Decides a permission request of the runtime by `request`'s policy: an allowed action is
/// approved and a denied one refused without asking; an action the policy asks about goes to
/// the host ([`Approvals::ask`](driver_spi::Approvals::ask), which emits the approval events).
///
/// What the runtime asks is provider text: its tool and arguments are redacted with the
/// turn's `redactor` before the host (or an event) sees them, and a denial's reason before
/// the runtime does, as the turn's events are ([`Approvals::ask`](driver_spi::Approvals::ask)
/// knows only the request's own secrets).
pub(crate) async fn decide(
    request: &Request,
    redactor: &Redactor,
    sink: &dyn EventSink,
    mut query: ApprovalQuery,
) -> ApprovalDecision {
    match request.permissions.get(query.action) {
        Permission::Allow => ApprovalDecision::Approve,
        Permission::Ask => {
            query.tool = redactor.redact(&query.tool).into_owned();
            query.arguments = redactor.redact(&query.arguments).into_owned();
            match request.approvals.ask(request, sink, query).await {
                ApprovalDecision::Deny { reason } => {
                    ApprovalDecision::deny(redactor.redact(&reason).into_owned())
                }
                other => other,
            }
        }
        _ => ApprovalDecision::deny(format!(
            "the host's permission policy does not allow {}",
            query.action.as_str()
        )),
    }
}
