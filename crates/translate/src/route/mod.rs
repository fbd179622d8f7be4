//! HTTPRoutes: validated once per route, then attached to each parent.

mod attach;
mod backends;
mod filters;
mod hostnames;
mod matches;
mod rules;

pub use attach::{ListenerRoutes, RouteMemo, attach_routes};
pub use backends::ClusterSpec;

use coxswain_api::gw::httproutes::HttpRouteRules;
use coxswain_api::{HttpRoute, ObjectKey};
use coxswain_ir::{BackendTarget, Hostname, Route, RouteId, RouteKind, WeightedBackend};

use crate::conditions::Reason;
use crate::route::backends::{Lookup, Unresolved};
use crate::route::rules::{CompiledBackend, CompiledRule, RuleError};

/// An HTTPRoute after validation, independent of its parents.
#[derive(Clone, Debug)]
pub struct CompiledRoute {
    pub key: ObjectKey,
    pub generation: Option<i64>,
    pub hostnames: Result<Vec<Hostname>, String>,
    /// Valid rules only.
    pub rules: Vec<CompiledRule>,
    /// One message per dropped rule.
    pub rule_errors: Vec<RuleError>,
    /// The first backendRef that did not resolve.
    pub unresolved: Option<Unresolved>,
}

impl CompiledRoute {
    /// Whole-route rejection, if any: invalid hostnames, or no valid rule left.
    pub fn unusable(&self) -> Option<(Reason, String)> {
        match &self.hostnames {
            Err(e) => Some((Reason::UnsupportedValue, e.clone())),
            Ok(_) if self.rules.is_empty() && !self.rule_errors.is_empty() => {
                Some((self.rule_errors_reason(), self.rule_errors_message()))
            }
            Ok(_) => None,
        }
    }

    /// The reason for dropped rules: the first dropped rule's.
    pub fn rule_errors_reason(&self) -> Reason {
        self.rule_errors
            .first()
            .map_or(Reason::UnsupportedValue, |e| e.reason)
    }

    pub fn rule_errors_message(&self) -> String {
        let messages: Vec<&str> = self
            .rule_errors
            .iter()
            .map(|e| e.message.as_str())
            .collect();
        messages.join("; ")
    }

    /// Like [`Self::ir_routes`], moving the rules instead of copying them.
    pub fn into_ir_routes(self, hostnames: &[Hostname]) -> Vec<Route> {
        let CompiledRoute { key, rules, .. } = self;
        rules
            .into_iter()
            .map(|rule| Route {
                id: RouteId {
                    kind: RouteKind::Http,
                    namespace: key.namespace.clone(),
                    name: key.name.clone(),
                    rule_index: rule.index,
                    rule_name: rule.name,
                },
                hostnames: hostnames.to_vec(),
                matches: rule.matches,
                filters: rule.filters,
                backends: rule.backends.into_iter().map(ir_backend).collect(),
                timeouts: rule.timeouts,
            })
            .collect()
    }

    /// IR routes (one per valid rule) for the given effective hostnames.
    pub fn ir_routes<'a>(&'a self, hostnames: &'a [Hostname]) -> impl Iterator<Item = Route> + 'a {
        self.rules.iter().map(move |rule| Route {
            id: RouteId {
                kind: RouteKind::Http,
                namespace: self.key.namespace.clone(),
                name: self.key.name.clone(),
                rule_index: rule.index,
                rule_name: rule.name.clone(),
            },
            hostnames: hostnames.to_vec(),
            matches: rule.matches.clone(),
            filters: rule.filters.clone(),
            backends: rule.backends.iter().map(ir_backend_ref).collect(),
            timeouts: rule.timeouts.clone(),
        })
    }
}

fn ir_backend_ref(b: &CompiledBackend) -> WeightedBackend {
    WeightedBackend {
        weight: b.weight,
        target: match &b.target {
            Ok(spec) => BackendTarget::Cluster(spec.name.clone()),
            Err((reason, message)) => BackendTarget::Invalid {
                reason: format!("{}: {message}", reason.as_str()),
            },
        },
        filters: b.filters.clone(),
    }
}

fn ir_backend(b: CompiledBackend) -> WeightedBackend {
    WeightedBackend {
        weight: b.weight,
        target: match b.target {
            Ok(spec) => BackendTarget::Cluster(spec.name),
            Err((reason, message)) => BackendTarget::Invalid {
                reason: format!("{}: {message}", reason.as_str()),
            },
        },
        filters: b.filters,
    }
}

pub fn compile_route(lookup: &Lookup<'_>, key: &ObjectKey, route: &HttpRoute) -> CompiledRoute {
    let mut rules = Vec::new();
    let mut rule_errors = Vec::new();
    let mut unresolved = None;
    // The CRD default when unset: one catch-all rule.
    let default_rules = [HttpRouteRules::default()];
    let route_rules = match route.spec.rules.as_deref() {
        Some(rules) if !rules.is_empty() => rules,
        _ => &default_rules,
    };
    for (i, rule) in route_rules.iter().enumerate() {
        let targets = rules::resolve_backends(lookup, &key.namespace, rule);
        if unresolved.is_none() {
            unresolved = targets.iter().find_map(|t| t.as_ref().err().cloned());
        }
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        match rules::compile_rule(index, rule, targets) {
            Ok(r) => rules.push(r),
            Err(e) => rule_errors.push(e),
        }
    }
    CompiledRoute {
        key: key.clone(),
        generation: route.metadata.generation,
        hostnames: hostnames::parse_route_hostnames(route.spec.hostnames.as_deref()),
        rules,
        rule_errors,
        unresolved,
    }
}
