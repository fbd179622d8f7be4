//! HTTPRoute rules: matches, filters, backends and timeouts.

pub(crate) mod cors;
mod filters;
mod matches;
mod mirror;
mod retry;
mod rules;
mod session;

pub(crate) use matches::check_regex;

pub use rules::CompiledRule;

use std::borrow::Cow;

use coxswain_api::gw::httproutes::HttpRouteRules;
use coxswain_api::{HttpRoute, ObjectKey};
use coxswain_ir::RouteKind;

use crate::conditions::Reason;
use crate::extension::RefOutcome;
use crate::route::RuleError;
use crate::route::backends::{Lookup, Unresolved};

/// What compiling an HTTPRoute's rules produced.
pub struct CompiledHttp {
    pub rules: Vec<CompiledRule>,
    pub rule_errors: Vec<RuleError>,
    pub unresolved: Option<Unresolved>,
}

/// An RFC 9110 token: what a header name may be.
pub(crate) fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub fn compile(lookup: &Lookup<'_>, key: &ObjectKey, route: &HttpRoute) -> CompiledHttp {
    // The CRD default when unset: one catch-all rule.
    let default_rules = [HttpRouteRules::default()];
    let route_rules = match route.spec.rules.as_deref() {
        Some(rules) if !rules.is_empty() => rules,
        _ => &default_rules,
    };
    compile_rules(
        lookup,
        key,
        RouteKind::Http,
        route_rules.iter().map(|r| (Cow::Borrowed(r), None)),
    )
}

/// Compiles HTTP-shaped rules of a route of `kind` (HTTPRoute, or a
/// GRPCRoute lowered onto them). A rule paired with an error is dropped
/// with it, after its backends are resolved (for ResolvedRefs).
pub fn compile_rules<'r>(
    lookup: &Lookup<'_>,
    key: &ObjectKey,
    kind: RouteKind,
    rules: impl Iterator<Item = (Cow<'r, HttpRouteRules>, Option<String>)>,
) -> CompiledHttp {
    let mut out = CompiledHttp {
        rules: Vec::new(),
        rule_errors: Vec::new(),
        unresolved: None,
    };
    for (i, (rule, error)) in rules.enumerate() {
        let targets = rules::resolve_backends(lookup, kind, &key.namespace, &rule);
        let mirrors = mirror::resolve(lookup, kind, &key.namespace, &rule);
        let extensions = rules::resolve_extensions(lookup, kind, &key.namespace, &rule);
        if out.unresolved.is_none() {
            out.unresolved = targets
                .iter()
                .chain(&mirrors)
                .find_map(|t| t.as_ref().err().cloned())
                .or_else(|| {
                    extensions.iter().find_map(|e| match e {
                        RefOutcome::Filter(_, problem) => problem.clone(),
                        RefOutcome::NotForRouteKind(_) => None,
                    })
                });
        }
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        if let Some(message) = error {
            out.rule_errors.push(RuleError {
                reason: Reason::UnsupportedValue,
                message: format!("rule {index}: {message}"),
            });
            continue;
        }
        match rules::compile_rule(index, &rule, targets, &mirrors, extensions) {
            Ok(r) => out.rules.push(r),
            Err(e) => out.rule_errors.push(e),
        }
    }
    out
}
