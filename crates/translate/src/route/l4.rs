//! TLSRoute, TCPRoute and UDPRoute rules: where a connection (or UDP
//! session) goes. v1 allows one rule per route; more are reported.

use coxswain_api::ObjectKey;

use crate::conditions::Reason;
use crate::route::backends::{self, Lookup, Unresolved};
use crate::route::object::{AnyRoute, BackendRef};
use crate::route::{CompiledBackend, RuleError};

#[derive(Clone, Debug)]
pub struct L4Rule {
    pub index: u32,
    pub name: Option<String>,
    pub backends: Vec<CompiledBackend>,
}

/// The rules of an L4 route: each rule's name and backendRefs.
fn rules<'a>(route: AnyRoute<'a>) -> Vec<(Option<&'a str>, Vec<BackendRef<'a>>)> {
    match route {
        AnyRoute::Tls(r) => r
            .spec
            .rules
            .iter()
            .map(|rule| {
                (
                    rule.name.as_deref(),
                    rule.backend_refs.iter().map(Into::into).collect(),
                )
            })
            .collect(),
        AnyRoute::Tcp(r) => r
            .spec
            .rules
            .iter()
            .map(|rule| {
                (
                    rule.name.as_deref(),
                    rule.backend_refs.iter().map(Into::into).collect(),
                )
            })
            .collect(),
        AnyRoute::Udp(r) => r
            .spec
            .rules
            .iter()
            .map(|rule| {
                (
                    rule.name.as_deref(),
                    rule.backend_refs.iter().map(Into::into).collect(),
                )
            })
            .collect(),
        AnyRoute::Http(_) | AnyRoute::Grpc(_) => Vec::new(),
    }
}

/// What compiling an L4 route's rules produced.
pub struct CompiledL4 {
    pub rules: Vec<L4Rule>,
    pub rule_errors: Vec<RuleError>,
    pub unresolved: Option<Unresolved>,
}

pub fn compile(lookup: &Lookup<'_>, key: &ObjectKey, route: AnyRoute<'_>) -> CompiledL4 {
    let kind = route.kind();
    let mut out = CompiledL4 {
        rules: Vec::new(),
        rule_errors: Vec::new(),
        unresolved: None,
    };
    let all = rules(route);
    if all.is_empty() {
        out.rule_errors.push(RuleError {
            reason: Reason::UnsupportedValue,
            message: format!("{} has no rules", kind.as_str()),
        });
    }
    for (i, (name, refs)) in all.into_iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let backends: Vec<CompiledBackend> = refs
            .iter()
            .map(|b| CompiledBackend {
                weight: b.weight(),
                target: backends::resolve(lookup, kind, &key.namespace, b),
                filters: Vec::new(),
            })
            .collect();
        if out.unresolved.is_none() {
            out.unresolved = backends
                .iter()
                .find_map(|b| b.target.as_ref().err().cloned());
        }
        if i > 0 {
            out.rule_errors.push(RuleError {
                reason: Reason::UnsupportedValue,
                message: format!("rule {index}: a {} has exactly one rule", kind.as_str()),
            });
            continue;
        }
        out.rules.push(L4Rule {
            index,
            name: name.filter(|n| !n.is_empty()).map(str::to_string),
            backends,
        });
    }
    out
}
