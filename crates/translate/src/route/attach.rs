//! Attaching routes of every kind to Gateway listeners: parentRefs
//! (sectionName, port), the listener's allowed kinds and namespaces,
//! hostname intersection; and each parent's status entry.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::{GATEWAY_GROUP, Object, ObjectKey, Snapshot};
use coxswain_ir::{Hostname, L4Route, Route};

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason};
use crate::gateway::{GatewayModel, ListenerOwner, parent_of};
use crate::gateway::{Protocol, TlsMode};
use crate::route::backends::Lookup;
use crate::route::hostnames::effective_hostnames;
use crate::route::kind_conflicts::{self, Lost};
use crate::route::object::{AnyRoute, ParentRef, RouteKey, all_routes};
use crate::route::status::{RouteStatus, parent_status};
use crate::route::{ClusterSpec, CompiledRoute, IrRules, compile_route};

/// One IR rule of any family.
#[derive(Clone, Debug)]
pub enum IrRoute {
    Http(Arc<Route>),
    L4(Arc<L4Route>),
}

/// An IR rule on one listener, with its spec ordering key.
#[derive(Clone, Debug)]
pub struct AttachedRoute {
    /// (route rank, rule index): the rank orders routes oldest first, then
    /// by namespace/name.
    pub order: (usize, u32),
    pub route: IrRoute,
}

/// Per Gateway, per listener index: the routes attached there.
pub type ListenerRoutes = BTreeMap<ObjectKey, BTreeMap<usize, Vec<AttachedRoute>>>;

/// What attaching all routes produced.
#[derive(Debug, Default)]
pub struct Attachments {
    pub routes: ListenerRoutes,
    pub statuses: BTreeMap<RouteKey, Arc<RouteStatus>>,
    /// Every Service port referenced by an attached route, by cluster name.
    pub clusters: BTreeMap<String, ClusterSpec>,
    /// (namespace, service) -> the Gateways whose listeners route to it.
    pub gateways_by_service: BTreeMap<(String, String), BTreeSet<ObjectKey>>,
}

/// A route's rules on one listener, and the parent (its index in the
/// route's status) that put them there.
#[derive(Debug)]
pub struct AttachedRules {
    pub gateway: ObjectKey,
    pub listener: usize,
    pub parent: usize,
    pub rules: IrRules,
}

/// One route's translation. It depends on the route itself and on the
/// rest of the world (Gateways, Services, grants, namespaces, options), but
/// never on other routes, so it can be kept while neither changes.
#[derive(Debug, Default)]
pub struct RouteOutcome {
    /// Listeners the route attached to, with its IR rules on each.
    pub listeners: Vec<AttachedRules>,
    /// `None` when no parentRef names a Gateway of ours.
    pub status: Option<Arc<RouteStatus>>,
    /// Service ports referenced by the route's rules, when it attached;
    /// shared with every other kept route that references them.
    pub clusters: Vec<Arc<ClusterSpec>>,
}

/// One `Arc` per distinct cluster among the kept outcomes: routes to the
/// same Service port share its spec instead of each keeping a copy (184
/// bytes and three strings). Kept across passes, so a route recomputed
/// later shares the spec of the routes left unchanged; a per-pass table
/// gave each pass's routes their own copy, which under churn grew towards
/// one copy per route.
#[derive(Default)]
pub struct SharedClusters(HashMap<String, Arc<ClusterSpec>>);

impl SharedClusters {
    fn get(&mut self, spec: &ClusterSpec) -> Arc<ClusterSpec> {
        match self.0.get(&spec.name) {
            Some(shared) if **shared == *spec => shared.clone(),
            _ => {
                let shared = Arc::new(spec.clone());
                self.0.insert(spec.name.clone(), shared.clone());
                shared
            }
        }
    }

    /// Forgets the specs no outcome holds any more.
    fn prune(&mut self) {
        self.0.retain(|_, spec| Arc::strong_count(spec) > 1);
    }
}

/// Per-route outcomes kept between runs, with the route object each was
/// computed from (compared by identity, then without its status), sorted
/// like the snapshot's routes so refreshing them is one merge walk; and the
/// cluster specs they share.
#[derive(Default)]
pub struct RouteMemo {
    outcomes: BTreeMap<RouteKey, (Object, RouteOutcome)>,
    clusters: SharedClusters,
}

impl RouteMemo {
    /// Forgets every outcome, so the next pass recomputes each route.
    pub fn clear(&mut self) {
        *self = RouteMemo::default();
    }

    /// Distinct cluster spec allocations the kept outcomes hold, and the
    /// entries of the shared table.
    #[cfg(test)]
    pub(crate) fn cluster_copies(&self) -> (usize, usize) {
        let mut held: Vec<*const ClusterSpec> = (self.outcomes.values())
            .flat_map(|(_, outcome)| outcome.clusters.iter().map(Arc::as_ptr))
            .collect();
        held.sort_unstable();
        held.dedup();
        (held.len(), self.clusters.0.len())
    }
}

/// Attaches every route; updates listeners' attachedRoutes and returns IR
/// rules per listener plus each route's status. Routes whose object is the
/// one in `memo` reuse its outcome (the caller empties `memo` when anything
/// else changed); the memo ends up holding exactly the current routes.
pub fn attach_routes(
    snapshot: &Snapshot,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    options: &Options,
    memo: &mut RouteMemo,
) -> Attachments {
    let lookup = Lookup::new(snapshot);
    let current = all_routes(snapshot);
    let mut previous = std::mem::take(&mut memo.outcomes).into_iter().peekable();
    let mut refreshed = Vec::with_capacity(current.len());
    let shared = &mut memo.clusters;
    for (key, object) in current {
        // Both are sorted by key: skip memo entries of deleted routes.
        while previous.next_if(|(k, _)| *k < key).is_some() {}
        // A route whose only change is its status (our own write-back,
        // through the watch) keeps its outcome, now under the new object.
        let kept = previous
            .next_if(|(k, (seen, _))| *k == key && seen.same_but_status(&object))
            .map(|(k, (_, outcome))| (k, (object.clone(), outcome)));
        refreshed.push(kept.unwrap_or_else(|| {
            let outcome = match AnyRoute::of(&object) {
                Some(route) => {
                    let inputs = (snapshot, &*gateways, options, &lookup);
                    route_outcome(inputs, shared, &key.1, route)
                }
                None => RouteOutcome::default(),
            };
            (key, (object, outcome))
        }));
    }
    drop(previous);
    memo.outcomes = refreshed.into_iter().collect();
    memo.clusters.prune();
    let memo = &memo.outcomes;

    let mut out = Attachments::default();
    let mut ranked: Vec<(Option<&Time>, &RouteKey, &RouteOutcome)> = memo
        .iter()
        .map(|(key, (object, outcome))| (object.meta().creation_timestamp.as_ref(), key, outcome))
        .collect();
    // The spec's tie-break order: oldest first, then namespace/name.
    ranked.sort_by(|a, b| (a.0, &a.1.1).cmp(&(b.0, &b.1.1)));
    let lost = kind_conflicts::resolve(ranked.iter().map(|(_, key, outcome)| (*key, *outcome)));
    for (rank, (_, key, outcome)) in ranked.into_iter().enumerate() {
        merge(&mut out, gateways, rank, outcome, lost.get(key));
    }
    out.statuses = memo
        .iter()
        .filter_map(|(key, (_, outcome))| {
            let status = outcome.status.clone()?;
            Some(match lost.get(key) {
                Some(lost) => (key.clone(), conflicted(status, outcome, lost)),
                None => (key.clone(), status),
            })
        })
        .collect();
    out
}

/// The status of a route that lost listeners to a route of the rival kind:
/// a parent whose every listener was lost is not accepted.
fn conflicted(status: Arc<RouteStatus>, outcome: &RouteOutcome, lost: &[Lost]) -> Arc<RouteStatus> {
    let mut status = (*status).clone();
    for (parent, entry) in status.parents.iter_mut().enumerate() {
        let mut entries = outcome
            .listeners
            .iter()
            .enumerate()
            .filter(|(_, a)| a.parent == parent)
            .peekable();
        if entries.peek().is_none() {
            continue;
        }
        let mut winner = None;
        for (i, _) in entries {
            match lost.iter().find(|l| l.entry == i) {
                Some(l) => winner = Some(&l.winner),
                None => {
                    winner = None;
                    break;
                }
            }
        }
        let Some((kind, key)) = winner else {
            continue;
        };
        if let Some(c) = entry
            .conditions
            .iter_mut()
            .find(|c| c.type_ == ConditionType::Accepted)
        {
            c.status = false;
            c.reason = Reason::NotAllowedByListeners;
            c.message = format!(
                "{} {key} already serves an overlapping hostname on this parent's listeners; \
                 of an HTTPRoute and a GRPCRoute sharing a hostname only the older is accepted",
                kind.as_str()
            )
            .into();
        }
    }
    Arc::new(status)
}

/// Adds one route's outcome: its rules on each listener, the listeners'
/// attachedRoutes counts and the clusters it references.
fn merge(
    out: &mut Attachments,
    gateways: &mut BTreeMap<ObjectKey, GatewayModel>,
    rank: usize,
    outcome: &RouteOutcome,
    lost: Option<&Vec<Lost>>,
) {
    let kept = outcome
        .listeners
        .iter()
        .enumerate()
        .filter(|(i, _)| !lost.is_some_and(|lost| lost.iter().any(|l| l.entry == *i)))
        .map(|(_, a)| a);
    for AttachedRules {
        gateway: gw_key,
        listener: idx,
        rules,
        ..
    } in kept
    {
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
        match rules {
            IrRules::Http(routes) => list.extend(routes.iter().map(|r| AttachedRoute {
                order: (rank, r.id.rule_index),
                route: IrRoute::Http(r.clone()),
            })),
            IrRules::L4(routes) => list.extend(routes.iter().map(|r| AttachedRoute {
                order: (rank, r.id.rule_index),
                route: IrRoute::L4(r.clone()),
            })),
        }
    }
    for spec in &outcome.clusters {
        if !out.clusters.contains_key(&spec.name) {
            out.clusters.insert(spec.name.clone(), (**spec).clone());
        }
        // Passthrough and UDP carry the client's bytes as they are: a
        // BackendTLSPolicy does not apply there, so those Gateways are not
        // its ancestors.
        let originates_tls = |gw: &ObjectKey, idx: usize| {
            let listener = gateways.get(gw).and_then(|g| g.listeners.get(idx));
            !matches!(
                listener.and_then(|l| l.protocol),
                Some(Protocol::Tls(TlsMode::Passthrough) | Protocol::Udp) | None
            )
        };
        let ancestors: Vec<ObjectKey> = outcome
            .listeners
            .iter()
            .filter(|a| originates_tls(&a.gateway, a.listener))
            .map(|a| a.gateway.clone())
            .collect();
        out.gateways_by_service
            .entry((spec.namespace.clone(), spec.service.clone()))
            .or_default()
            .extend(ancestors);
    }
}

/// Translates one route against the (already built) Gateways.
fn route_outcome(
    (snapshot, gateways, options, lookup): (
        &Snapshot,
        &BTreeMap<ObjectKey, GatewayModel>,
        &Options,
        &Lookup<'_>,
    ),
    shared: &mut SharedClusters,
    key: &ObjectKey,
    route: AnyRoute<'_>,
) -> RouteOutcome {
    let compiled = compile_route(lookup, key, route);
    let mut parents = Vec::new();
    // Listeners this route attached to, with effective hostnames and the
    // parent (index in `parents`) that attached it.
    let mut targets: Vec<(ObjectKey, usize, Vec<Hostname>, usize)> = Vec::new();
    for parent in route.parent_refs() {
        let index = parents.len();
        let Some(outcome) =
            attach_parent(snapshot, gateways, &compiled, &parent, index, &mut targets)
        else {
            continue;
        };
        parents.push(parent_status(&compiled, &parent, outcome, options));
    }
    // Outcomes are kept while their route is unchanged, one per route:
    // no spare room (a pushed-to list keeps room for four).
    parents.shrink_to_fit();
    let mut out = RouteOutcome {
        status: (!parents.is_empty()).then(|| Arc::new(RouteStatus { parents })),
        ..RouteOutcome::default()
    };
    if !targets.is_empty() {
        for spec in compiled.clusters() {
            if !out.clusters.iter().any(|c| c.name == spec.name) {
                out.clusters.push(shared.get(spec));
            }
        }
    }
    for (gateway, listener, hostnames, parent) in targets {
        out.listeners.push(AttachedRules {
            gateway,
            listener,
            parent,
            rules: compiled.ir_rules(&hostnames),
        });
    }
    out.clusters.shrink_to_fit();
    out.listeners.shrink_to_fit();
    out
}

/// The Accepted outcome for one parentRef; `None` when the parent is not ours.
fn attach_parent(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    route: &CompiledRoute,
    parent: &ParentRef,
    parent_index: usize,
    targets: &mut Vec<(ObjectKey, usize, Vec<Hostname>, usize)>,
) -> Option<Cond> {
    let namespace = parent.namespace.as_deref().unwrap_or(&route.key.namespace);
    let parent_key = ObjectKey::new(namespace, parent.name.as_str());
    let (gw_key, owner) = match (parent.group(), parent.kind()) {
        (GATEWAY_GROUP, "Gateway") => (parent_key, ListenerOwner::Gateway),
        (GATEWAY_GROUP, "ListenerSet") => {
            let Some(set) = snapshot.listener_sets.get(&parent_key) else {
                return Some(rejected(
                    Reason::NoMatchingParent,
                    format!("ListenerSet {parent_key} not found"),
                ));
            };
            // A ListenerSet of another controller's Gateway is not ours.
            let gw_key = parent_of(&parent_key, set)?;
            (gw_key, ListenerOwner::ListenerSet(parent_key))
        }
        _ => return None,
    };
    let Some(gateway) = gateways.get(&gw_key) else {
        if snapshot.gateways.contains_key(&gw_key) {
            return None; // another controller's Gateway
        }
        return Some(rejected(
            Reason::NoMatchingParent,
            format!("Gateway {gw_key} not found"),
        ));
    };
    if let ListenerOwner::ListenerSet(set_key) = &owner {
        let refused = gateway
            .listener_sets
            .iter()
            .find(|s| s.key == *set_key)
            .and_then(|s| s.refused.as_ref());
        if let Some((_, why)) = refused {
            return Some(rejected(
                Reason::NoMatchingParent,
                format!("ListenerSet {set_key} is not attached to Gateway {gw_key}: {why}"),
            ));
        }
    }

    let mut candidates = 0;
    let mut wrong_hostname = false;
    let mut found: Vec<(usize, Vec<Hostname>)> = Vec::new();
    let route_hosts = match &route.hostnames {
        Ok(hosts) => hosts.as_deref(),
        Err(_) => Some(&[][..]),
    };
    for (idx, l) in gateway.listeners.iter().enumerate() {
        if l.owner != owner {
            continue;
        }
        let section_ok = parent.section_name.as_deref().is_none_or(|s| s == l.name);
        let port_ok = parent.port.is_none_or(|p| p == i32::from(l.port));
        if !section_ok || !port_ok {
            continue;
        }
        candidates += 1;
        if !gateway.listener_routable(l, route.kind)
            || !l.allows_namespace(snapshot, &route.key.namespace)
        {
            continue;
        }
        // Kinds without hostnames attach whatever the listener's hostname.
        let Some(route_hosts) = route_hosts else {
            found.push((idx, Vec::new()));
            continue;
        };
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
            (None, None) => match owner {
                ListenerOwner::Gateway => "Gateway has no listeners".to_string(),
                ListenerOwner::ListenerSet(_) => "ListenerSet has no listeners".to_string(),
            },
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
        let already = targets.iter().any(|(k, i, _, _)| *k == gw_key && *i == idx);
        if !already {
            targets.push((gw_key.clone(), idx, hostnames, parent_index));
        }
    }
    Some(Cond::new(
        ConditionType::Accepted,
        true,
        Reason::Accepted,
        "route is accepted",
    ))
}

fn rejected(reason: Reason, message: impl Into<std::borrow::Cow<'static, str>>) -> Cond {
    Cond::new(ConditionType::Accepted, false, reason, message)
}
