//! Routes of every kind: compiled once per route (rules, hostnames,
//! backends), then attached to each parent by one kind-agnostic
//! implementation ([`attach_routes`]).

mod attach;
pub(crate) mod backends;
mod grpc;
mod hostnames;
pub(crate) mod http;
mod kind_conflicts;
mod l4;
mod object;
mod status;

pub(crate) use http::is_token;

pub use attach::{IrRoute, ListenerRoutes, RouteMemo, attach_routes};
pub use backends::ClusterSpec;
pub use object::RouteKey;
pub use status::{ParentStatus, RouteStatus};

use std::sync::Arc;

use coxswain_api::ObjectKey;
use coxswain_ir::{
    BackendTarget, Filter, Hostname, L4Route, Route, RouteId, RouteKind, WeightedBackend,
};

use crate::conditions::Reason;
use crate::route::backends::{Lookup, Unresolved};
use crate::route::http::CompiledRule;
use crate::route::l4::L4Rule;
use crate::route::object::AnyRoute;

/// Why a rule was dropped: the reason for the route's Accepted or
/// PartiallyInvalid condition, and a short message.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleError {
    pub reason: Reason,
    pub message: String,
}

/// A backendRef after resolution.
#[derive(Clone, Debug)]
pub struct CompiledBackend {
    pub weight: u32,
    pub target: Result<ClusterSpec, Unresolved>,
    pub filters: Vec<Filter>,
}

/// The valid rules of a route, by the family of listener that serves them.
#[derive(Clone, Debug)]
pub enum Rules {
    Http(Vec<CompiledRule>),
    L4(Vec<L4Rule>),
}

/// A route after validation, independent of its parents.
#[derive(Clone, Debug)]
pub struct CompiledRoute {
    pub kind: RouteKind,
    pub key: ObjectKey,
    pub generation: Option<i64>,
    /// `Ok(None)` for kinds without hostnames (TCP, UDP).
    pub hostnames: Result<Option<Vec<Hostname>>, String>,
    /// Valid rules only.
    pub rules: Rules,
    /// One message per dropped rule.
    pub rule_errors: Vec<RuleError>,
    /// The first backendRef that did not resolve.
    pub unresolved: Option<Unresolved>,
}

/// IR rules of one route on one listener.
#[derive(Clone, Debug)]
pub enum IrRules {
    Http(Vec<Arc<Route>>),
    L4(Vec<Arc<L4Route>>),
}

impl CompiledRoute {
    fn has_rules(&self) -> bool {
        match &self.rules {
            Rules::Http(r) => !r.is_empty(),
            Rules::L4(r) => !r.is_empty(),
        }
    }

    /// Whole-route rejection, if any: invalid hostnames, or no valid rule left.
    pub fn unusable(&self) -> Option<(Reason, String)> {
        match &self.hostnames {
            Err(e) => Some((Reason::UnsupportedValue, e.clone())),
            Ok(_) if !self.has_rules() && !self.rule_errors.is_empty() => {
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

    fn id(&self, rule_index: u32, rule_name: Option<String>) -> RouteId {
        RouteId {
            kind: self.kind,
            namespace: self.key.namespace.to_string(),
            name: self.key.name.to_string(),
            rule_index,
            rule_name,
        }
    }

    /// Every backend of every valid rule.
    pub fn backends(&self) -> Box<dyn Iterator<Item = &CompiledBackend> + '_> {
        match &self.rules {
            Rules::Http(rules) => Box::new(rules.iter().flat_map(|r| &r.backends)),
            Rules::L4(rules) => Box::new(rules.iter().flat_map(|r| &r.backends)),
        }
    }

    /// Every cluster the valid rules send to: their resolved backends,
    /// then their mirrors.
    pub fn clusters(&self) -> impl Iterator<Item = &ClusterSpec> {
        let mirrors = match &self.rules {
            Rules::Http(rules) => Some(rules.iter().flat_map(|r| &r.mirror_clusters)),
            Rules::L4(_) => None,
        };
        self.backends()
            .filter_map(|b| b.target.as_ref().ok())
            .chain(mirrors.into_iter().flatten())
    }

    /// IR rules (one per valid rule) for the given effective hostnames.
    pub fn ir_rules(&self, hostnames: &[Hostname]) -> IrRules {
        match &self.rules {
            Rules::Http(rules) => IrRules::Http(
                rules
                    .iter()
                    .map(|rule| {
                        Arc::new(Route {
                            id: self.id(rule.index, rule.name.clone()),
                            hostnames: hostnames.to_vec(),
                            matches: rule.matches.clone(),
                            filters: rule.filters.clone(),
                            backends: rule.backends.iter().map(ir_backend).collect(),
                            timeouts: rule.timeouts.clone(),
                            retry: rule.retry.clone(),
                            session: rule.session.clone(),
                        })
                    })
                    .collect(),
            ),
            Rules::L4(rules) => IrRules::L4(
                rules
                    .iter()
                    .map(|rule| {
                        Arc::new(L4Route {
                            id: self.id(rule.index, rule.name.clone()),
                            hostnames: hostnames.to_vec(),
                            backends: rule.backends.iter().map(ir_backend).collect(),
                        })
                    })
                    .collect(),
            ),
        }
    }
}

fn ir_backend(b: &CompiledBackend) -> WeightedBackend {
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

/// Validates a route of any kind.
pub fn compile_route(lookup: &Lookup<'_>, key: &ObjectKey, route: AnyRoute<'_>) -> CompiledRoute {
    let hostnames = match route.hostnames() {
        None => Ok(None),
        Some(names) => hostnames::parse_route_hostnames(Some(names)).map(Some),
    };
    let (rules, rule_errors, unresolved) = match route {
        AnyRoute::Http(r) => {
            let c = http::compile(lookup, key, r);
            (Rules::Http(c.rules), c.rule_errors, c.unresolved)
        }
        AnyRoute::Grpc(r) => {
            let c = grpc::compile(lookup, key, r);
            (Rules::Http(c.rules), c.rule_errors, c.unresolved)
        }
        AnyRoute::Tls(_) | AnyRoute::Tcp(_) | AnyRoute::Udp(_) => {
            let c = l4::compile(lookup, key, route);
            (Rules::L4(c.rules), c.rule_errors, c.unresolved)
        }
    };
    CompiledRoute {
        kind: route.kind(),
        key: key.clone(),
        generation: route.meta().generation,
        hostnames,
        rules,
        rule_errors,
        unresolved,
    }
}
