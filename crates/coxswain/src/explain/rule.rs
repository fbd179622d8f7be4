//! The rule that answers, found by the proxy's router, and what it does
//! with the request: its filters in the proxy's order, and its backends.

use coxswain_ir::{BackendTarget, Config, Filter, Route};
use coxswain_proxy::router::Hit;

use super::describe;
use super::model::{BackendChoice, FilterStep, RouteChoice};

/// The IR rule behind a router hit, and the position of its match.
pub fn ir_rule<'c>(
    routes: &'c [std::sync::Arc<Route>],
    hit: &Hit<'_>,
) -> Option<(&'c Route, usize)> {
    let match_index = hit
        .route
        .matches
        .iter()
        .position(|m| std::ptr::eq(m, hit.matched))?;
    let route: &Route = routes.iter().find(|r| r.id == *hit.route.id)?;
    Some((route, match_index))
}

pub fn choice(route: &Route, match_index: usize) -> RouteChoice {
    RouteChoice {
        kind: route.id.kind.as_str(),
        namespace: route.id.namespace.clone(),
        name: route.id.name.clone(),
        rule_index: route.id.rule_index,
        rule_name: route.id.rule_name.clone(),
        match_index,
        matched: route
            .matches
            .get(match_index)
            .map(describe::route_match)
            .unwrap_or_default(),
        hostnames: route
            .hostnames
            .iter()
            .map(|h| h.as_str().to_string())
            .collect(),
    }
}

/// The request filters in the order the compiled route runs them.
pub fn request_filters(hit: &Hit<'_>, route: &Route, config: &Config) -> Vec<FilterStep> {
    hit.route
        .request_plan()
        .into_iter()
        .filter_map(|planned| {
            let filter = route.filters.get(planned.filter)?;
            let (kind, detail, answers) = describe::filter(filter, config);
            Some(FilterStep {
                phase: planned.phase.as_str(),
                filter_index: planned.filter,
                kind,
                detail,
                answers,
            })
        })
        .collect()
}

fn response_steps(filters: &[Filter], config: &Config, owner: &str) -> Vec<FilterStep> {
    filters
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f, Filter::ResponseHeaders(_)))
        .map(|(filter_index, f)| {
            let (kind, detail, _) = describe::filter(f, config);
            FilterStep {
                phase: "response",
                filter_index,
                kind: format!("{kind} ({owner})"),
                detail,
                answers: None,
            }
        })
        .collect()
}

/// Response header edits: the rule's, then each backendRef's own (only
/// the chosen backend's apply).
pub fn response_filters(route: &Route, config: &Config) -> Vec<FilterStep> {
    let mut steps = response_steps(&route.filters, config, "rule");
    for backend in &route.backends {
        let owner = match &backend.target {
            BackendTarget::Cluster(name) => format!("backendRef {name}"),
            BackendTarget::Invalid { .. } => "invalid backendRef".to_string(),
        };
        steps.extend(response_steps(&backend.filters, config, &owner));
    }
    steps
}

pub fn backends(route: &Route, config: &Config) -> Vec<BackendChoice> {
    let total: u64 = route.backends.iter().map(|b| u64::from(b.weight)).sum();
    route
        .backends
        .iter()
        .map(|b| {
            let share_percent = if total == 0 {
                0.0
            } else {
                (f64::from(b.weight) * 10_000.0 / total as f64).round() / 100.0
            };
            let request_filters = b
                .filters
                .iter()
                .filter(|f| matches!(f, Filter::RequestHeaders(_)))
                .map(|f| {
                    let (kind, detail, _) = describe::filter(f, config);
                    format!("{kind}: {detail}")
                })
                .collect();
            let (cluster, invalid, endpoints, balancer) = match &b.target {
                BackendTarget::Cluster(name) => match config.cluster(name) {
                    Some(c) => (
                        Some(name.clone()),
                        None,
                        c.endpoints.iter().map(|e| e.address.to_string()).collect(),
                        c.policy
                            .as_ref()
                            .map(|p| balancer_name(&p.balancer))
                            .unwrap_or("RoundRobin")
                            .to_string(),
                    ),
                    None => (
                        Some(name.clone()),
                        Some(format!(
                            "cluster {name} is missing from the config: answered 500"
                        )),
                        Vec::new(),
                        String::new(),
                    ),
                },
                BackendTarget::Invalid { reason } => (
                    None,
                    Some(format!("{reason}: answered 500")),
                    Vec::new(),
                    String::new(),
                ),
            };
            BackendChoice {
                cluster,
                invalid,
                weight: b.weight,
                share_percent,
                endpoints,
                balancer,
                request_filters,
            }
        })
        .collect()
}

fn balancer_name(b: &coxswain_ir::Balancer) -> &'static str {
    match b {
        coxswain_ir::Balancer::RoundRobin => "RoundRobin",
        coxswain_ir::Balancer::LeastConn => "LeastConn",
        coxswain_ir::Balancer::Ewma => "Ewma",
        coxswain_ir::Balancer::Hash(_) => "Hash",
    }
}
