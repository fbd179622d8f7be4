//! Attaching routes to Gateway listeners: parentRefs, allowedRoutes,
//! hostnames; and each parent's status entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::gw::httproutes::{
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
    pub route: Arc<Route>,
}

/// Per Gateway, per listener index: the routes attached there.
pub type ListenerRoutes = BTreeMap<ObjectKey, BTreeMap<usize, Vec<AttachedRoute>>>;

/// What attaching all routes produced.
#[derive(Debug, Default)]
pub struct Attachments {
    pub routes: ListenerRoutes,
    pub statuses: BTreeMap<ObjectKey, Arc<HttpRouteStatus>>,
    /// Every Service port referenced by an attached route, by cluster name.
    pub clusters: BTreeMap<String, ClusterSpec>,
}

/// One HTTPRoute's translation. It depends on the route itself and on the
/// rest of the world (Gateways, Services, grants, namespaces, options), but
/// never on other routes, so it can be kept while neither changes.
#[derive(Debug, Default)]
pub struct RouteOutcome {
    /// Listeners the route attached to, with its IR rules on each.
    pub listeners: Vec<(ObjectKey, usize, Vec<Arc<Route>>)>,
    /// `None` when no parentRef names a Gateway of ours.
    pub status: Option<Arc<HttpRouteStatus>>,
    /// Service ports referenced by the route's rules, when it attached.
    pub clusters: Vec<ClusterSpec>,
}

/// Per-route outcomes kept between runs, with the route object each was
/// computed from (compared by identity). Sorted like the snapshot's routes,
/// so refreshing it is one merge walk.
pub type RouteMemo = BTreeMap<ObjectKey, (Arc<HttpRoute>, RouteOutcome)>;

/// Attaches every HTTPRoute; updates listeners' attachedRoutes and returns
/// IR routes per listener plus each route's status. Routes whose object is
/// the one in `memo` reuse its outcome (the caller empties `memo` when
/// anything else changed); the memo ends up holding exactly the current
/// routes.
pub fn attach_routes(
    snapshot: &Snapshot,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    options: &Options,
    memo: &mut RouteMemo,
) -> Attachments {
    let lookup = Lookup::new(snapshot);
    let mut previous = std::mem::take(memo).into_iter().peekable();
    let mut refreshed = Vec::with_capacity(snapshot.http_routes.len());
    for (key, route) in &snapshot.http_routes {
        // Both are sorted by key: skip memo entries of deleted routes.
        while previous.next_if(|(k, _)| k < key).is_some() {}
        let kept = previous.next_if(|(k, (seen, _))| k == key && Arc::ptr_eq(seen, route));
        refreshed.push(kept.unwrap_or_else(|| {
            let outcome = route_outcome(snapshot, gateways, options, &lookup, key, route);
            (key.clone(), (route.clone(), outcome))
        }));
    }
    drop(previous);
    *memo = refreshed.into_iter().collect();

    let mut out = Attachments::default();
    let mut ranked: Vec<(Option<&Time>, &ObjectKey, &RouteOutcome)> = memo
        .iter()
        .map(|(key, (route, outcome))| (route.metadata.creation_timestamp.as_ref(), key, outcome))
        .collect();
    // The spec's tie-break order: oldest first, then namespace/name.
    ranked.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    for (rank, (_, _, outcome)) in ranked.into_iter().enumerate() {
        merge(&mut out, gateways, rank, outcome);
    }
    out.statuses = memo
        .iter()
        .filter_map(|(key, (_, outcome))| Some((key.clone(), outcome.status.clone()?)))
        .collect();
    out
}

/// Adds one route's outcome: its rules on each listener, the listeners'
/// attachedRoutes counts and the clusters it references.
fn merge(
    out: &mut Attachments,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    rank: usize,
    outcome: &RouteOutcome,
) {
    for (gw_key, idx, rules) in &outcome.listeners {
        if let Some(l) = gateways
            .get_mut(gw_key)
            .and_then(|g| g.listeners.get_mut(*idx))
        {
            l.attached_routes = l.attached_routes.saturating_add(1);
        }
        let per_gateway = match out.routes.get_mut(gw_key) {
            Some(m) => m,
            None => out.routes.entry(gw_key.clone()).or_default(),
        };
        let list = per_gateway.entry(*idx).or_default();
        list.extend(rules.iter().map(|route| AttachedRoute {
            order: (rank, route.id.rule_index),
            route: route.clone(),
        }));
    }
    for spec in &outcome.clusters {
        if !out.clusters.contains_key(&spec.name) {
            out.clusters.insert(spec.name.clone(), spec.clone());
        }
    }
}

/// Translates one route against the (already built) Gateways.
fn route_outcome(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    options: &Options,
    lookup: &Lookup<'_>,
    key: &ObjectKey,
    route: &HttpRoute,
) -> RouteOutcome {
    let compiled = compile_route(lookup, key, route);
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
    let mut out = RouteOutcome {
        status: (!parents.is_empty()).then(|| Arc::new(HttpRouteStatus { parents })),
        ..RouteOutcome::default()
    };
    if !targets.is_empty() {
        let specs = compiled.rules.iter().flat_map(|r| &r.backends);
        for spec in specs.filter_map(|b| b.target.as_ref().ok()) {
            if !out.clusters.iter().any(|c| c.name == spec.name) {
                out.clusters.push(spec.clone());
            }
        }
    }
    // The last listener takes the compiled rules; the others get copies.
    let last = targets.pop();
    for (gw_key, idx, hostnames) in targets {
        let routes = compiled.ir_routes(&hostnames).map(Arc::new).collect();
        out.listeners.push((gw_key, idx, routes));
    }
    if let Some((gw_key, idx, hostnames)) = last {
        let routes = compiled.into_ir_routes(&hostnames);
        out.listeners
            .push((gw_key, idx, routes.into_iter().map(Arc::new).collect()));
    }
    out
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
    if let Some((reason, message)) = route.unusable() {
        return Some(rejected(reason, message));
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
            route.rule_errors_reason(),
            format!("dropped invalid rules: {}", route.rule_errors_message()),
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
