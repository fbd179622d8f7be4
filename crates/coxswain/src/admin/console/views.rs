//! The console's JSON views: what `/status` computed, joined with the
//! serving config (`/config`) and the metrics (`/metrics`) by the names the
//! three share (`namespace/name` of a Gateway, the route label, the cluster
//! name). Pure functions of those three, so they are tested without a
//! listener.

use std::collections::BTreeMap;

use coxswain_ir::{Config, L4Route, Listener, Route, RouteId, Serve, UpstreamTls, WeightedBackend};
use serde_json::{Map, Value, json};

use super::scrape::Sample;
use super::traffic::Rates;

const BREAKER_STATE: &str = "coxswain_proxy_circuit_breaker_state";
const BREAKER_REJECTED: &str = "coxswain_proxy_circuit_breaker_rejected_total";

/// One `/status` entry: `{kind, namespace, name, status}`.
struct Entry<'a> {
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    status: &'a Value,
}

fn entries(statuses: &Value) -> Vec<Entry<'_>> {
    let Some(all) = statuses.as_array() else {
        return Vec::new();
    };
    all.iter()
        .map(|s| Entry {
            kind: s.get("kind").and_then(Value::as_str).unwrap_or(""),
            namespace: s.get("namespace").and_then(Value::as_str).unwrap_or(""),
            name: s.get("name").and_then(Value::as_str).unwrap_or(""),
            status: s.get("status").unwrap_or(&Value::Null),
        })
        .collect()
}

fn is_route(kind: &str) -> bool {
    kind.ends_with("Route")
}

/// Kinds shown in their own section; every other status is a policy or a
/// filter resource.
fn is_policy(kind: &str) -> bool {
    !is_route(kind) && !matches!(kind, "Gateway" | "GatewayClass" | "ListenerSet")
}

/// Only what a reader needs from a condition (no generation bookkeeping).
fn conditions(value: Option<&Value>) -> Value {
    let items = value
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .map(|c| {
                    json!({
                        "type": c.get("type"),
                        "status": c.get("status"),
                        "reason": c.get("reason"),
                        "message": c.get("message"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Value::Array(items)
}

fn serve_kind(listener: &Listener) -> &'static str {
    match (&listener.serve, listener.tls.is_some()) {
        (Serve::Http(_), false) => "HTTP",
        (Serve::Http(_), true) => "HTTPS",
        (Serve::TlsPassthrough(_), _) => "TLS passthrough",
        (Serve::Tcp(_), false) => "TCP",
        (Serve::Tcp(_), true) => "TLS",
        (Serve::Udp(_), _) => "UDP",
    }
}

/// `/api/v1/gateways`: each Gateway's conditions and addresses, and its
/// listeners with their conditions, attached routes and where they serve.
pub fn gateways(statuses: &Value, config: &Config) -> Value {
    let mut bound: BTreeMap<(&str, &str), Vec<Value>> = BTreeMap::new();
    for socket in &config.sockets {
        for listener in &socket.listeners {
            bound
                .entry((listener.gateway.as_str(), listener.name.as_str()))
                .or_default()
                .push(json!({
                    "address": socket.addr().to_string(),
                    "protocol": serve_kind(listener),
                    "hostname": listener.hostname.as_ref().map(ToString::to_string),
                    "listenerSet": listener.listener_set,
                }));
        }
    }
    let items = entries(statuses)
        .into_iter()
        .filter(|e| e.kind == "Gateway")
        .map(|e| {
            let key = format!("{}/{}", e.namespace, e.name);
            let listeners: Vec<Value> = e
                .status
                .get("listeners")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|l| {
                    let name = l.get("name").and_then(Value::as_str).unwrap_or("");
                    json!({
                        "name": name,
                        "attachedRoutes": l.get("attachedRoutes"),
                        "conditions": conditions(l.get("conditions")),
                        "serving": bound.get(&(key.as_str(), name)).cloned().unwrap_or_default(),
                    })
                })
                .collect();
            json!({
                "namespace": e.namespace,
                "name": e.name,
                "conditions": conditions(e.status.get("conditions")),
                "addresses": e.status.get("addresses").cloned().unwrap_or(Value::Array(Vec::new())),
                "listeners": listeners,
            })
        })
        .collect();
    Value::Array(items)
}

/// One rule as served, merged over every listener it is attached to.
#[derive(Default)]
struct Rule {
    hostnames: Vec<String>,
    backends: Vec<Value>,
}

fn backend_json(b: &WeightedBackend) -> Value {
    match &b.target {
        coxswain_ir::BackendTarget::Cluster(name) => json!({"cluster": name, "weight": b.weight}),
        coxswain_ir::BackendTarget::Invalid { .. } => {
            json!({"cluster": null, "weight": b.weight, "invalid": true})
        }
    }
}

fn add_rule(
    rules: &mut RulesByRoute,
    id: &RouteId,
    hostnames: Vec<String>,
    backends: &[WeightedBackend],
) {
    let rule = rules
        .entry((
            id.kind.as_str().to_string(),
            id.namespace.clone(),
            id.name.clone(),
        ))
        .or_default()
        .entry(id.rule_index)
        .or_insert_with(|| {
            let backends = backends.iter().map(backend_json).collect();
            (
                coxswain_proxy::route_label(id),
                Rule {
                    hostnames: Vec::new(),
                    backends,
                },
            )
        });
    for h in hostnames {
        if !rule.1.hostnames.contains(&h) {
            rule.1.hostnames.push(h);
        }
    }
}

type RulesByRoute = BTreeMap<(String, String, String), BTreeMap<u32, (String, Rule)>>;

fn served_rules(config: &Config) -> RulesByRoute {
    let mut rules = RulesByRoute::new();
    let names = |hs: &[coxswain_ir::Hostname]| -> Vec<String> {
        hs.iter().map(ToString::to_string).collect()
    };
    for listener in config.sockets.iter().flat_map(|s| &s.listeners) {
        match &listener.serve {
            Serve::Http(routes) => {
                for r in routes.iter().map(AsRef::<Route>::as_ref) {
                    add_rule(&mut rules, &r.id, names(&r.hostnames), &r.backends);
                }
            }
            Serve::TlsPassthrough(routes) | Serve::Tcp(routes) | Serve::Udp(routes) => {
                for r in routes.iter().map(AsRef::<L4Route>::as_ref) {
                    add_rule(&mut rules, &r.id, names(&r.hostnames), &r.backends);
                }
            }
        }
    }
    rules
}

/// `/api/v1/routes`: each route's conditions per parent, and its rules as
/// served with their backends and live traffic.
pub fn routes(statuses: &Value, config: &Config, rates: &Rates) -> Value {
    let rules = served_rules(config);
    let items = entries(statuses)
        .into_iter()
        .filter(|e| is_route(e.kind))
        .map(|e| {
            let parents: Vec<Value> = e
                .status
                .get("parents")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|p| {
                    json!({
                        "parentRef": p.get("parentRef"),
                        "conditions": conditions(p.get("conditions")),
                    })
                })
                .collect();
            let key = (
                e.kind.to_string(),
                e.namespace.to_string(),
                e.name.to_string(),
            );
            let served: Vec<Value> = rules
                .get(&key)
                .into_iter()
                .flatten()
                .map(|(index, (label, rule))| {
                    json!({
                        "index": index,
                        "label": label,
                        "hostnames": rule.hostnames,
                        "backends": rule.backends,
                        "traffic": traffic(rates, label),
                    })
                })
                .collect();
            json!({
                "kind": e.kind,
                "namespace": e.namespace,
                "name": e.name,
                "parents": parents,
                "rules": served,
            })
        })
        .collect();
    json!({ "windowSeconds": rates.window_seconds, "routes": Value::Array(items) })
}

/// A rule's live traffic: requests for an HTTP rule, connections for an
/// L4 one (labels are unique across both).
fn traffic(rates: &Rates, label: &str) -> Value {
    match (rates.routes.get(label), rates.l4.get(label)) {
        (Some(http), _) => json!(http),
        (None, Some(l4)) => json!(l4),
        (None, None) => Value::Null,
    }
}

/// `/api/v1/policies`: policies and filter resources, with the objects
/// they are attached to (`status.ancestors`) and their conditions.
pub fn policies(statuses: &Value) -> Value {
    let items = entries(statuses)
        .into_iter()
        .filter(|e| is_policy(e.kind))
        .map(|e| {
            let ancestors: Vec<Value> = e
                .status
                .get("ancestors")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|a| {
                    json!({
                        "ancestorRef": a.get("ancestorRef"),
                        "conditions": conditions(a.get("conditions")),
                    })
                })
                .collect();
            json!({
                "kind": e.kind,
                "namespace": e.namespace,
                "name": e.name,
                "conditions": conditions(e.status.get("conditions")),
                "ancestors": ancestors,
            })
        })
        .collect();
    Value::Array(items)
}

fn breaker_label(state: f64) -> &'static str {
    match state as u8 {
        0 => "closed",
        1 => "open",
        2 => "half-open",
        _ => "unknown",
    }
}

/// `/api/v1/backends`: each cluster with its policy, and each endpoint
/// with its readiness and, under a circuit breaker, the breaker's state.
pub fn backends(config: &Config, samples: &[Sample]) -> Value {
    let mut breakers: BTreeMap<(&str, &str), Map<String, Value>> = BTreeMap::new();
    for s in samples {
        let key = (s.label("upstream"), s.label("endpoint"));
        if s.name == BREAKER_STATE {
            breakers
                .entry(key)
                .or_default()
                .insert("state".into(), breaker_label(s.value).into());
        } else if s.name == BREAKER_REJECTED {
            breakers
                .entry(key)
                .or_default()
                .insert("rejected".into(), (s.value as u64).into());
        }
    }
    let items = config
        .clusters
        .iter()
        .map(|c| {
            let endpoints: Vec<Value> = c
                .endpoints
                .iter()
                .map(|ep| {
                    let address = ep.address.to_string();
                    let breaker = breakers
                        .get(&(c.name.as_str(), address.as_str()))
                        .cloned()
                        .map(Value::Object);
                    // The config holds ready endpoints only: an endpoint
                    // here is ready in its EndpointSlice.
                    json!({"address": address, "ready": true, "breaker": breaker})
                })
                .collect();
            let tls = match &c.tls {
                None => Value::Null,
                Some(UpstreamTls::Verify(t)) => json!({"policy": t.policy, "sni": t.sni}),
                Some(UpstreamTls::Invalid { reason }) => json!({"invalid": reason}),
            };
            let policy = c.policy.as_ref().map(|p| {
                json!({
                    "name": p.policy,
                    "balancer": format!("{:?}", p.balancer),
                    "circuitBreaker": p.breaker,
                })
            });
            json!({
                "name": c.name,
                "protocol": format!("{:?}", c.protocol),
                "tls": tls,
                "policy": policy,
                "retryBudget": c.retry_budget.as_ref().map(|b| &b.policy),
                "endpoints": endpoints,
            })
        })
        .collect();
    Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::console::scrape::parse;
    use coxswain_ir::{Cluster, Endpoint, UpstreamProtocol};

    fn statuses() -> Value {
        let accepted = json!({"conditions": [{"type": "Accepted", "status": "True",
            "reason": "Accepted", "message": "", "observedGeneration": 3,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        json!([
            {"kind": "GatewayClass", "namespace": "", "name": "c", "status": accepted},
            {"kind": "Gateway", "namespace": "ns", "name": "g", "status": accepted},
            {"kind": "ListenerSet", "namespace": "ns", "name": "ls", "status": accepted},
            {"kind": "TCPRoute", "namespace": "ns", "name": "t", "status": {"parents": []}},
            {"kind": "CoxswainRateLimit", "namespace": "ns", "name": "rl", "status": accepted},
            {"kind": "BackendTLSPolicy", "namespace": "ns", "name": "tls", "status": {"ancestors": [
                {"ancestorRef": {"kind": "Service", "name": "api"}, "controllerName": "x",
                 "conditions": accepted["conditions"]}]}},
        ])
    }

    #[test]
    fn policies_are_every_other_status_with_bookkeeping_dropped() {
        let all = policies(&statuses());
        let names: Vec<&str> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["rl", "tls"]);
        let tls = &all[1];
        assert_eq!(tls["ancestors"][0]["ancestorRef"]["name"], "api");
        let condition = &tls["ancestors"][0]["conditions"][0];
        assert_eq!(condition["reason"], "Accepted");
        assert!(condition.get("observedGeneration").is_none(), "{condition}");
    }

    #[test]
    fn gateway_listeners_not_in_the_config_are_not_serving() {
        let mut status = statuses();
        status[1]["status"]["listeners"] =
            json!([{"name": "http", "attachedRoutes": 1, "conditions": []}]);
        let all = gateways(&status, &Config::default());
        assert_eq!(all.as_array().unwrap().len(), 1);
        assert_eq!(all[0]["listeners"][0]["attachedRoutes"], 1);
        assert_eq!(all[0]["listeners"][0]["serving"], json!([]));
    }

    #[test]
    fn endpoints_get_their_own_breaker_and_none_without_one() {
        let cluster = Cluster {
            name: "ns/api:80".into(),
            protocol: UpstreamProtocol::Http1,
            endpoints: ["10.0.0.1:8080", "10.0.0.2:8080"]
                .iter()
                .map(|a| Endpoint {
                    address: a.parse().unwrap(),
                })
                .collect(),
            tls: None,
            policy: None,
            retry_budget: None,
        };
        let config = Config {
            clusters: vec![cluster.into()],
            ..Config::default()
        };
        let text = "coxswain_proxy_circuit_breaker_state{upstream=\"ns/api:80\",endpoint=\"10.0.0.1:8080\"} 2\n\
                    coxswain_proxy_circuit_breaker_rejected_total{upstream=\"ns/api:80\",endpoint=\"10.0.0.1:8080\"} 4\n\
                    coxswain_proxy_circuit_breaker_state{upstream=\"ns/other:80\",endpoint=\"10.0.0.2:8080\"} 1\n";
        let all = backends(&config, &parse(text));
        let endpoints = &all[0]["endpoints"];
        assert_eq!(
            endpoints[0]["breaker"],
            json!({"state": "half-open", "rejected": 4})
        );
        assert_eq!(
            endpoints[1]["breaker"],
            Value::Null,
            "another cluster's breaker"
        );
    }
}
