//! HTTPRoute rules: matches, filters, backends and timeouts.

mod filters;
mod matches;
mod rules;

pub use rules::CompiledRule;

use coxswain_api::gw::httproutes::HttpRouteRules;
use coxswain_api::{HttpRoute, ObjectKey};

use crate::route::RuleError;
use crate::route::backends::{Lookup, Unresolved};

/// What compiling an HTTPRoute's rules produced.
pub struct CompiledHttp {
    pub rules: Vec<CompiledRule>,
    pub rule_errors: Vec<RuleError>,
    pub unresolved: Option<Unresolved>,
}

/// An RFC 9110 token: what a header name may be.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub fn compile(lookup: &Lookup<'_>, key: &ObjectKey, route: &HttpRoute) -> CompiledHttp {
    let mut out = CompiledHttp {
        rules: Vec::new(),
        rule_errors: Vec::new(),
        unresolved: None,
    };
    // The CRD default when unset: one catch-all rule.
    let default_rules = [HttpRouteRules::default()];
    let route_rules = match route.spec.rules.as_deref() {
        Some(rules) if !rules.is_empty() => rules,
        _ => &default_rules,
    };
    for (i, rule) in route_rules.iter().enumerate() {
        let targets = rules::resolve_backends(lookup, &key.namespace, rule);
        if out.unresolved.is_none() {
            out.unresolved = targets.iter().find_map(|t| t.as_ref().err().cloned());
        }
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        match rules::compile_rule(index, rule, targets) {
            Ok(r) => out.rules.push(r),
            Err(e) => out.rule_errors.push(e),
        }
    }
    out
}
