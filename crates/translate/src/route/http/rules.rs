//! One HTTPRoute rule: matches, filters, backends and timeouts.

use coxswain_api::gw::httproutes::{
    HttpRouteRules, HttpRouteRulesFiltersType, HttpRouteRulesTimeouts,
};
use coxswain_ir::{Filter, Retry, RouteKind, RouteMatch, RouteSession, Timeouts};

use super::filters::{compile_backend_filters, compile_rule_filters};
use super::matches::compile_matches;
use super::retry::compile_retry;
use super::session::compile_session;
use crate::conditions::Reason;
use crate::duration::parse_duration_ms;
use crate::extension::{self, RefOutcome};
use crate::route::backends::{self, ClusterSpec, Lookup, Unresolved};
use crate::route::object::BackendRef;
use crate::route::{CompiledBackend, RuleError};

#[derive(Clone, Debug)]
pub struct CompiledRule {
    pub index: u32,
    pub name: Option<String>,
    pub matches: Vec<RouteMatch>,
    pub filters: Vec<Filter>,
    pub backends: Vec<CompiledBackend>,
    /// The clusters of the rule's resolved mirrors.
    pub mirror_clusters: Vec<ClusterSpec>,
    pub timeouts: Timeouts,
    pub retry: Option<Retry>,
    pub session: Option<RouteSession>,
}

/// Resolves every backendRef of a rule (for ResolvedRefs, even when the rule
/// turns out invalid).
pub fn resolve_backends(
    lookup: &Lookup<'_>,
    kind: RouteKind,
    route_ns: &str,
    rule: &HttpRouteRules,
) -> Vec<Result<ClusterSpec, Unresolved>> {
    rule.backend_refs
        .iter()
        .flatten()
        .map(|b| backends::resolve(lookup, kind, route_ns, &BackendRef::from(b)))
        .collect()
}

/// What each ExtensionRef filter of a rule resolves to, in order.
pub fn resolve_extensions(
    lookup: &Lookup<'_>,
    kind: RouteKind,
    route_ns: &str,
    rule: &HttpRouteRules,
) -> Vec<RefOutcome> {
    rule.filters
        .iter()
        .flatten()
        .filter_map(|f| f.extension_ref.as_ref())
        .map(|r| {
            extension::resolve_ref(
                lookup.snapshot,
                kind,
                route_ns,
                (&r.group, &r.kind, &r.name),
            )
        })
        .collect()
}

/// Validates a rule. `targets` and `mirrors` are its backendRefs and its
/// mirrors' backendRefs, resolved; `extensions` its ExtensionRefs.
pub fn compile_rule(
    index: u32,
    rule: &HttpRouteRules,
    targets: Vec<Result<ClusterSpec, Unresolved>>,
    mirrors: &[Result<ClusterSpec, Unresolved>],
    extensions: Vec<RefOutcome>,
) -> Result<CompiledRule, RuleError> {
    if has_incompatible_filters(rule) {
        return Err(RuleError {
            reason: Reason::IncompatibleFilters,
            message: format!("rule {index}: RequestRedirect and URLRewrite cannot be combined"),
        });
    }
    let prefix = |e: String| RuleError {
        reason: Reason::UnsupportedValue,
        message: format!("rule {index}: {e}"),
    };
    let mut extension_filters = Vec::new();
    for outcome in extensions {
        match outcome {
            RefOutcome::Filter(filter, _) => extension_filters.push(filter),
            RefOutcome::NotForRouteKind(message) => return Err(prefix(message)),
        }
    }
    let matches = compile_matches(rule.matches.as_deref()).map_err(prefix)?;
    let filters = compile_rule_filters(
        rule.filters.as_deref(),
        &matches,
        mirrors,
        &extension_filters,
    )
    .map_err(prefix)?;
    let timeouts = compile_timeouts(rule.timeouts.as_ref()).map_err(prefix)?;
    let retry = compile_retry(rule.retry.as_ref()).map_err(prefix)?;
    let session = compile_session(rule.session_persistence.as_ref()).map_err(prefix)?;
    let mut backends = Vec::new();
    for (b, target) in rule.backend_refs.iter().flatten().zip(targets) {
        let filters = compile_backend_filters(b.filters.as_deref()).map_err(prefix)?;
        backends.push(CompiledBackend {
            weight: BackendRef::from(b).weight(),
            target,
            filters,
        });
    }
    Ok(CompiledRule {
        index,
        name: rule.name.clone().filter(|n| !n.is_empty()),
        matches,
        filters,
        backends,
        mirror_clusters: mirrors.iter().filter_map(|m| m.clone().ok()).collect(),
        timeouts,
        retry,
        session,
    })
}

/// The spec's example of incompatible filters: a rule cannot both redirect
/// and rewrite.
fn has_incompatible_filters(rule: &HttpRouteRules) -> bool {
    let has =
        |kind: HttpRouteRulesFiltersType| rule.filters.iter().flatten().any(|f| f.r#type == kind);
    has(HttpRouteRulesFiltersType::RequestRedirect) && has(HttpRouteRulesFiltersType::UrlRewrite)
}

fn compile_timeouts(t: Option<&HttpRouteRulesTimeouts>) -> Result<Timeouts, String> {
    let Some(t) = t else {
        return Ok(Timeouts::default());
    };
    // "0s" disables the timeout.
    let parse = |v: Option<&str>| -> Result<Option<u64>, String> {
        match v {
            None => Ok(None),
            Some(v) => parse_duration_ms(v).map(|ms| (ms != 0).then_some(ms)),
        }
    };
    let request_ms = parse(t.request.as_deref())?;
    let backend_request_ms = parse(t.backend_request.as_deref())?;
    if let (Some(req), Some(backend)) = (request_ms, backend_request_ms)
        && backend > req
    {
        return Err(format!(
            "timeouts.backendRequest ({backend}ms) must not exceed timeouts.request ({req}ms)"
        ));
    }
    Ok(Timeouts {
        request_ms,
        backend_request_ms,
    })
}
