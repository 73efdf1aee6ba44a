//! The run's permission policy applied to a runtime's permission request: allowed, denied, or
//! asked of the host.

use driver_spi::{ApprovalDecision, ApprovalQuery, EventSink, Permission, Request};

/// Decides a permission request of the runtime by `request`'s policy: an allowed action is
/// approved and a denied one refused without asking; an action the policy asks about goes to
/// the host ([`Approvals::ask`](driver_spi::Approvals::ask), which emits the approval events).
pub(crate) async fn decide(
    request: &Request,
    sink: &dyn EventSink,
    query: ApprovalQuery,
) -> ApprovalDecision {
    match request.permissions.get(query.action) {
        Permission::Allow => ApprovalDecision::Approve,
        Permission::Ask => request.approvals.ask(request, sink, query).await,
        _ => ApprovalDecision::deny(format!(
            "the host's permission policy does not allow {}",
            query.action.as_str()
        )),
    }
}
