//! Attaching routes to Gateway listeners: parentRefs, allowedRoutes,
//! hostnames; and each parent's status entry.

use std::collections::BTreeMap;

use coxswain_api::gateway_api::apis::standard::httproutes::{
    HttpRouteParentRefs, HttpRouteStatus, HttpRouteStatusParents, HttpRouteStatusParentsParentRef,
};
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::{GATEWAY_GROUP, HttpRoute, ObjectKey, Snapshot};
use coxswain_ir::Route;

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::gateway::GatewayModel;
use crate::route::backends::Lookup;
use crate::route::hostnames::effective_hostnames;
use crate::route::{ClusterSpec, CompiledRoute, compile_route};

/// An IR route on one listener, with its spec ordering key.
#[derive(Clone, Debug)]
pub struct AttachedRoute {
    /// (route rank, rule index): the rank orders routes oldest first, then
    /// by namespace/name.
    pub order: (usize, u32),
    pub route: Route,
}

/// Per (Gateway, listener index): the routes attached there.
pub type ListenerRoutes = BTreeMap<(ObjectKey, usize), Vec<AttachedRoute>>;

/// What attaching all routes produced.
#[derive(Debug, Default)]
pub struct Attachments {
    pub routes: ListenerRoutes,
    pub statuses: BTreeMap<ObjectKey, HttpRouteStatus>,
    /// Every Service port referenced by an attached route, by cluster name.
    pub clusters: BTreeMap<String, ClusterSpec>,
}

/// Attaches every HTTPRoute; updates listeners' attachedRoutes and returns
/// IR routes per listener plus each route's status.
pub fn attach_routes(
    snapshot: &Snapshot,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    options: &Options,
) -> Attachments {
    let mut out = Attachments::default();
    let lookup = Lookup::new(snapshot);
    for (rank, (key, route)) in routes_in_precedence_order(snapshot).into_iter().enumerate() {
        let compiled = compile_route(&lookup, key, route);
        let mut parents = Vec::new();
        // Listeners this route attached to, with effective hostnames.
        let mut targets: Vec<(ObjectKey, usize, Vec<coxswain_ir::Hostname>)> = Vec::new();
        for parent in route.spec.parent_refs.iter().flatten() {
            let Some(outcome) = attach_parent(snapshot, gateways, &compiled, parent, &mut targets)
            else {
                continue;
            };
            parents.push(parent_status(&compiled, parent, outcome, options));
        }
        if !targets.is_empty() {
            let specs = compiled.rules.iter().flat_map(|r| &r.backends);
            for spec in specs.filter_map(|b| b.target.as_ref().ok()) {
                if !out.clusters.contains_key(&spec.name) {
                    out.clusters.insert(spec.name.clone(), spec.clone());
                }
            }
        }
        // The last listener takes the compiled rules; the others get copies.
        let last = targets.pop();
        for (gw_key, idx, hostnames) in targets {
            let routes = compiled.ir_routes(&hostnames);
            add_routes(&mut out, gateways, (gw_key, idx), rank, routes);
        }
        if let Some((gw_key, idx, hostnames)) = last {
            let routes = compiled.into_ir_routes(&hostnames);
            add_routes(&mut out, gateways, (gw_key, idx), rank, routes.into_iter());
        }
        if !parents.is_empty() {
            out.statuses
                .insert(key.clone(), HttpRouteStatus { parents });
        }
    }
    out
}

/// Records one route's IR rules on a listener and counts the attachment.
fn add_routes(
    out: &mut Attachments,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    listener: (ObjectKey, usize),
    rank: usize,
    routes: impl Iterator<Item = Route>,
) {
    if let Some(l) = gateways
        .get_mut(&listener.0)
        .and_then(|g| g.listeners.get_mut(listener.1))
    {
        l.attached_routes = l.attached_routes.saturating_add(1);
    }
    let list = out.routes.entry(listener).or_default();
    list.extend(routes.map(|route| AttachedRoute {
        order: (rank, route.id.rule_index),
        route,
    }));
}

/// Routes in the spec's tie-break order: creation timestamp (oldest
/// first), then namespace/name. A route's position is its rank.
fn routes_in_precedence_order(snapshot: &Snapshot) -> Vec<(&ObjectKey, &HttpRoute)> {
    let mut routes: Vec<(Option<&Time>, &ObjectKey, &HttpRoute)> = snapshot
        .http_routes
        .iter()
        .map(|(key, route)| {
            (
                route.metadata.creation_timestamp.as_ref(),
                key,
                route.as_ref(),
            )
        })
        .collect();
    routes.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    routes
        .into_iter()
        .map(|(_, key, route)| (key, route))
        .collect()
}

/// The Accepted outcome for one parentRef; `None` when the parent is not ours.
fn attach_parent(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    route: &CompiledRoute,
    parent: &HttpRouteParentRefs,
    targets: &mut Vec<(ObjectKey, usize, Vec<coxswain_ir::Hostname>)>,
) -> Option<Cond> {
    let group = parent.group.as_deref().unwrap_or(GATEWAY_GROUP);
    let kind = parent.kind.as_deref().unwrap_or("Gateway");
    if group != GATEWAY_GROUP || kind != "Gateway" {
        return None;
    }
    let namespace = parent.namespace.as_deref().unwrap_or(&route.key.namespace);
    let gw_key = ObjectKey::new(namespace, parent.name.as_str());
    let Some(gateway) = gateways.get(&gw_key) else {
        if snapshot.gateways.contains_key(&gw_key) {
            return None; // another controller's Gateway
        }
        return Some(rejected(
            Reason::NoMatchingParent,
            format!("Gateway {gw_key} not found"),
        ));
    };

    let mut candidates = 0;
    let mut wrong_hostname = false;
    let mut found: Vec<(usize, Vec<coxswain_ir::Hostname>)> = Vec::new();
    let route_hosts = route.hostnames.as_deref().unwrap_or_default();
    for (idx, l) in gateway.listeners.iter().enumerate() {
        let section_ok = parent.section_name.as_deref().is_none_or(|s| s == l.name);
        let port_ok = parent.port.is_none_or(|p| p == i32::from(l.port));
        if !section_ok || !port_ok {
            continue;
        }
        candidates += 1;
        if !gateway.listener_routable(l)
            || !l.allows_namespace(snapshot, &gw_key.namespace, &route.key.namespace)
        {
            continue;
        }
        match effective_hostnames(l.hostname.as_ref(), route_hosts) {
            Some(h) => found.push((idx, h)),
            None => wrong_hostname = true,
        }
    }
    if candidates == 0 {
        let what = match (&parent.section_name, parent.port) {
            (Some(s), Some(p)) => format!("no listener named {s:?} on port {p}"),
            (Some(s), None) => format!("no listener named {s:?}"),
            (None, Some(p)) => format!("no listener on port {p}"),
            (None, None) => "Gateway has no listeners".to_string(),
        };
        return Some(rejected(Reason::NoMatchingParent, what));
    }
    if found.is_empty() {
        return Some(if wrong_hostname {
            rejected(
                Reason::NoMatchingListenerHostname,
                "no route hostname matches a listener hostname",
            )
        } else {
            rejected(
                Reason::NotAllowedByListeners,
                "no listener allows this route to attach",
            )
        });
    }
    if let Some(message) = route.unusable() {
        return Some(rejected(Reason::UnsupportedValue, message));
    }
    for (idx, hostnames) in found {
        let already = targets.iter().any(|(k, i, _)| *k == gw_key && *i == idx);
        if !already {
            targets.push((gw_key.clone(), idx, hostnames));
        }
    }
    Some(Cond::new(
        ConditionType::Accepted,
        true,
        Reason::Accepted,
        "route is accepted",
    ))
}

fn rejected(reason: Reason, message: impl Into<String>) -> Cond {
    Cond::new(ConditionType::Accepted, false, reason, message)
}

fn parent_status(
    route: &CompiledRoute,
    parent: &HttpRouteParentRefs,
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
            Reason::UnsupportedValue,
            format!("dropped invalid rules: {}", route.rule_errors.join("; ")),
        ));
    }
    HttpRouteStatusParents {
        conditions: stamp.all(conds),
        controller_name: options.controller_name.clone(),
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
