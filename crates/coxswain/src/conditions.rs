//! Reads conditions out of computed statuses (as JSON, so one walk serves
//! GatewayClass, Gateway and HTTPRoute alike) for summaries and logs.

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use coxswain_api::{Kind, ObjectKey};
use coxswain_translate::{Statuses, api_kind};
use serde_json::Value;

/// One condition, with where it sits inside the status.
pub struct Found {
    /// "" for the object itself, `listener http` or `parent default/gw`.
    pub scope: String,
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Found {
    /// Conditions whose healthy value is False (the spec's "abnormal-true").
    fn negative_polarity(&self) -> bool {
        matches!(
            self.type_.as_str(),
            "Conflicted" | "PartiallyInvalid" | "OverlappingTLSConfig"
        )
    }

    pub fn is_problem(&self) -> bool {
        (self.status == "True") == self.negative_polarity()
    }

    /// `Accepted=True`, or with reason and message when it is a problem.
    pub fn describe(&self) -> String {
        let scope = if self.scope.is_empty() {
            String::new()
        } else {
            format!("{} ", self.scope)
        };
        if self.is_problem() {
            format!(
                "{scope}{}={} ({}: {})",
                self.type_, self.status, self.reason, self.message
            )
        } else {
            format!("{scope}{}={}", self.type_, self.status)
        }
    }
}

/// Every condition in a status object.
pub fn conditions(status: &Value) -> Vec<Found> {
    let mut found = Vec::new();
    collect(status, String::new(), &mut found);
    for listener in array(status, "listeners") {
        let name = str_at(listener, &["name"]);
        collect(listener, format!("listener {name}"), &mut found);
    }
    for (list, reference, label) in [
        ("parents", "parentRef", "parent"),
        ("ancestors", "ancestorRef", "ancestor"),
    ] {
        for entry in array(status, list) {
            let namespace = str_at(entry, &[reference, "namespace"]);
            let name = str_at(entry, &[reference, "name"]);
            let section = str_at(entry, &[reference, "sectionName"]);
            let mut scope = if namespace.is_empty() {
                format!("{label} {name}")
            } else {
                format!("{label} {namespace}/{name}")
            };
            if !section.is_empty() {
                scope = format!("{scope}/{section}");
            }
            collect(entry, scope, &mut found);
        }
    }
    found
}

fn collect(holder: &Value, scope: String, found: &mut Vec<Found>) {
    for condition in array(holder, "conditions") {
        found.push(Found {
            scope: scope.clone(),
            type_: str_at(condition, &["type"]).to_string(),
            status: str_at(condition, &["status"]).to_string(),
            reason: str_at(condition, &["reason"]).to_string(),
            message: str_at(condition, &["message"]).to_string(),
        });
    }
}

fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Conditions that are not healthy, straight from the typed statuses: runs
/// after every reload, so it must not serialise thousands of statuses.
pub fn problems(statuses: &Statuses) -> Vec<(&'static str, &ObjectKey, String)> {
    let mut out = Vec::new();
    // Healthy conditions (nearly all of them) cost a comparison, no allocation.
    let mut check = |kind, key, scope: &dyn Fn() -> String, conditions: &[Condition]| {
        for c in conditions {
            let problem = (c.status == "True")
                == matches!(
                    c.type_.as_str(),
                    "Conflicted" | "PartiallyInvalid" | "OverlappingTLSConfig"
                );
            if !problem {
                continue;
            }
            let found = Found {
                scope: scope(),
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            };
            out.push((kind, key, found.describe()));
        }
    };
    for (key, status) in &statuses.gateway_classes {
        check(
            "GatewayClass",
            key,
            &String::new,
            status.conditions.as_deref().unwrap_or_default(),
        );
    }
    for (key, status) in &statuses.gateways {
        check(
            "Gateway",
            key,
            &String::new,
            status.conditions.as_deref().unwrap_or_default(),
        );
        for listener in status.listeners.iter().flatten() {
            check(
                "Gateway",
                key,
                &|| format!("listener {}", listener.name),
                &listener.conditions,
            );
        }
    }
    for ((kind, key), status) in &statuses.routes {
        for parent in &status.parents {
            let scope = || format!("parent {}", parent.parent_ref.name);
            check(kind.as_str(), key, &scope, &parent.to_api().conditions);
        }
    }
    for (key, status) in &statuses.listener_sets {
        check(
            "ListenerSet",
            key,
            &String::new,
            status.conditions.as_deref().unwrap_or_default(),
        );
        for listener in status.listeners.iter().flatten() {
            check(
                "ListenerSet",
                key,
                &|| format!("listener {}", listener.name),
                &listener.conditions,
            );
        }
    }
    for (key, status) in &statuses.backend_tls_policies {
        for ancestor in &status.ancestors {
            let scope = || format!("ancestor {}", ancestor.ancestor_ref.name);
            check("BackendTLSPolicy", key, &scope, &ancestor.conditions);
        }
    }
    for (key, status) in &statuses.backend_traffic_policies {
        for ancestor in &status.ancestors {
            let scope = || format!("ancestor {}", ancestor.ancestor_ref.name);
            check("XBackendTrafficPolicy", key, &scope, &ancestor.conditions);
        }
    }
    for (key, status) in &statuses.backend_policies {
        for ancestor in &status.ancestors {
            let scope = || format!("Service {}", ancestor.ancestor_ref.name);
            check("CoxswainBackendPolicy", key, &scope, &ancestor.conditions);
        }
    }
    for (key, status) in &statuses.client_traffic_policies {
        for ancestor in &status.ancestors {
            let scope = || format!("Gateway {}", ancestor.ancestor_ref.name);
            check("ClientTrafficPolicy", key, &scope, &ancestor.conditions);
        }
    }
    // Ingress status has no conditions: what is not served is a problem.
    for (key, outcome) in &statuses.ingresses {
        for problem in &outcome.problems {
            out.push(("Ingress", key, problem.to_string()));
        }
    }
    out
}

/// Every (kind, key, status) the translator computed, in a stable order.
pub fn all_statuses(statuses: &Statuses) -> Vec<(Kind, ObjectKey, Value)> {
    let keys = statuses
        .gateway_classes
        .keys()
        .map(|k| (Kind::GatewayClass, k))
        .chain(statuses.gateways.keys().map(|k| (Kind::Gateway, k)))
        .chain(statuses.routes.keys().map(|(r, k)| (api_kind(*r), k)))
        .chain(
            statuses
                .listener_sets
                .keys()
                .map(|k| (Kind::ListenerSet, k)),
        )
        .chain(
            statuses
                .backend_tls_policies
                .keys()
                .map(|k| (Kind::BackendTlsPolicy, k)),
        )
        .chain(
            statuses
                .backend_policies
                .keys()
                .map(|k| (Kind::CoxswainBackendPolicy, k)),
        )
        .chain(
            statuses
                .backend_traffic_policies
                .keys()
                .map(|k| (Kind::XBackendTrafficPolicy, k)),
        )
        .chain(
            statuses
                .client_traffic_policies
                .keys()
                .map(|k| (Kind::ClientTrafficPolicy, k)),
        )
        .chain(statuses.filters.keys().map(|(kind, k)| (*kind, k)))
        .chain(statuses.ingresses.keys().map(|k| (Kind::Ingress, k)));
    keys.filter_map(|(kind, key)| {
        let status = statuses.status_json(kind, key)?;
        Some((kind, key.clone(), status))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_conditions() {
        let status = serde_json::json!({
            "parents": [{
                "parentRef": {"name": "gw", "sectionName": "http"},
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""},
                    {"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound", "message": "no svc"}
                ]
            }]
        });
        let found = conditions(&status);
        let described: Vec<_> = found.iter().map(Found::describe).collect();
        assert_eq!(
            described,
            vec![
                "parent gw/http Accepted=True",
                "parent gw/http ResolvedRefs=False (BackendNotFound: no svc)"
            ]
        );
    }
}
