//! Route status. Every route kind's status has the same shape (a list of
//! parent entries with conditions), so one type serves them all; it
//! serialises exactly as each kind's `status`.

use coxswain_api::GATEWAY_GROUP;
use coxswain_api::gw::httproutes::{
    HttpRouteStatus, HttpRouteStatusParents, HttpRouteStatusParentsParentRef,
};

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::route::CompiledRoute;
use crate::route::object::ParentRef;

/// `status` of a route of any kind.
pub type RouteStatus = HttpRouteStatus;

/// The status entry for one parentRef, with its Accepted outcome.
pub fn parent_status(
    route: &CompiledRoute,
    parent: &ParentRef,
    accepted: Cond,
    options: &Options,
) -> HttpRouteStatusParents {
    let stamp = Stamp {
        generation: route.generation,
        now: &options.now,
    };
    let resolved = match &route.unresolved {
        None => Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        ),
        Some((reason, message)) => {
            Cond::new(ConditionType::ResolvedRefs, false, *reason, message.clone())
        }
    };
    let mut conds = vec![accepted, resolved];
    if route.unusable().is_none() && !route.rule_errors.is_empty() {
        conds.push(Cond::new(
            ConditionType::PartiallyInvalid,
            true,
            route.rule_errors_reason(),
            format!("dropped invalid rules: {}", route.rule_errors_message()),
        ));
    }
    HttpRouteStatusParents {
        conditions: stamp.all(conds),
        controller_name: options.controller_name.clone(),
        // Group and kind are written out even when the parentRef left
        // them to their defaults.
        parent_ref: HttpRouteStatusParentsParentRef {
            group: Some(
                parent
                    .group
                    .clone()
                    .unwrap_or_else(|| GATEWAY_GROUP.to_string()),
            ),
            kind: Some(parent.kind.clone().unwrap_or_else(|| "Gateway".to_string())),
            name: parent.name.clone(),
            namespace: parent.namespace.clone(),
            port: parent.port,
            section_name: parent.section_name.clone(),
        },
    }
}
