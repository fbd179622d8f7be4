//! Whole-translator properties: determinism and robustness on hostile input.

use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{EndpointSlice, Gateway, GatewayClass, HttpRoute, Object, Service, Snapshot};
use serde_json::json;

use crate::{DEFAULT_CONTROLLER_NAME, Options, translate};

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn options() -> Options {
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [127, 0, 0, 1].into(),
        now: Time(Timestamp::UNIX_EPOCH),
        ingress: Default::default(),
        dedicated_pools: false,
    }
}

fn base() -> Snapshot {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "c", "generation": 3},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    ))));
    s
}

fn gateway(listeners: serde_json::Value) -> Object {
    Object::Gateway(Arc::new(typed::<Gateway>(json!({
        "metadata": {"name": "gw", "namespace": "default", "generation": 7},
        "spec": {"gatewayClassName": "c", "listeners": listeners}
    }))))
}

fn route(name: &str, spec: serde_json::Value) -> Object {
    Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
    }))))
}

#[test]
fn hostile_values_become_conditions_not_panics() {
    let mut s = base();
    s.insert(gateway(json!([
        {"name": "neg", "port": -1, "protocol": "HTTP"},
        {"name": "big", "port": 70000, "protocol": "HTTP"},
        {"name": "bad-host", "port": 80, "protocol": "HTTP", "hostname": "*"},
        {"name": "weird", "port": 81, "protocol": "QUIC"},
        {"name": "sel", "port": 82, "protocol": "HTTP",
         "allowedRoutes": {"namespaces": {"from": "Selector",
            "selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}}},
        {"name": "ok", "port": 83, "protocol": "HTTP"}
    ])));
    s.insert(Object::Service(Arc::new(typed::<Service>(json!({
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"ports": [{"port": 80, "targetPort": "named"}]}
    })))));
    s.insert(Object::EndpointSlice(Arc::new(typed::<EndpointSlice>(
        json!({
            "metadata": {"name": "svc-1", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "svc"}},
            "addressType": "IPv4",
            "ports": [{"port": 99999}],
            "endpoints": [{"addresses": ["not-an-ip", "10.0.0.1"]}]
        }),
    ))));
    s.insert(route("r", json!({
        "parentRefs": [{"name": "gw", "port": -5}, {"name": "gw"}, {"name": "gw", "sectionName": ""}],
        "hostnames": ["a.example.com"],
        "rules": [
            {"matches": [{"path": {"type": "RegularExpression", "value": "(((("}}]},
            {"matches": [{"path": {"type": "Exact", "value": ""}}]},
            {"timeouts": {"request": "1s", "backendRequest": "99999h"}},
            {"filters": [{"type": "RequestRedirect", "requestRedirect": {"statusCode": 999, "port": -1}}]},
            {"backendRefs": [{"name": "svc", "port": 80, "weight": -3}, {"name": "svc", "port": 65536}]}
        ]
    })));
    let out = translate(&s, &options());
    let gw = out.statuses.gateways.values().next().unwrap();
    let listeners = gw.listeners.as_ref().unwrap();
    let accepted = |name: &str| {
        let l = listeners.iter().find(|l| l.name == name).unwrap();
        l.conditions
            .iter()
            .find(|c| c.type_ == "Accepted")
            .unwrap()
            .status
            .clone()
    };
    for bad in ["neg", "big", "bad-host", "weird", "sel"] {
        assert_eq!(accepted(bad), "False", "listener {bad}");
    }
    assert_eq!(accepted("ok"), "True");
    // Only the last rule is valid; its backends are kept with weight 0 / Invalid.
    let routes = out.ir.sockets[0].listeners[0].http_routes().unwrap();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].id.rule_index, 4);
    assert_eq!(routes[0].backends[0].weight, 0);
    // The slice port is out of range: the cluster exists but has no endpoints.
    assert_eq!(out.ir.clusters.len(), 1);
    assert!(out.ir.clusters[0].endpoints.is_empty());
}

#[test]
fn translation_is_deterministic() {
    let mut s = base();
    s.insert(gateway(json!([
        {"name": "b", "port": 80, "protocol": "HTTP", "hostname": "*.example.com"},
        {"name": "a", "port": 80, "protocol": "HTTP", "hostname": "x.example.com"},
        {"name": "c", "port": 80, "protocol": "HTTP"}
    ])));
    for i in 0..20 {
        s.insert(route(&format!("r{i}"), json!({
            "parentRefs": [{"name": "gw"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": format!("/p{i}")}}]}]
        })));
    }
    let first = translate(&s, &options());
    let second = translate(&s, &options());
    assert_eq!(first.ir, second.ir);
    assert_eq!(first.statuses, second.statuses);
    let names: Vec<_> = first.ir.sockets[0]
        .listeners
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn classes_of_other_controllers_and_their_gateways_get_no_status() {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "c"},
            "spec": {"controllerName": "someone.else/controller"}
        }),
    ))));
    s.insert(gateway(
        json!([{"name": "http", "port": 80, "protocol": "HTTP"}]),
    ));
    s.insert(route("r", json!({"parentRefs": [{"name": "gw"}]})));
    let out = translate(&s, &options());
    assert!(out.statuses.gateway_classes.is_empty());
    assert!(out.statuses.gateways.is_empty());
    assert!(out.statuses.routes.is_empty());
    assert!(out.ir.sockets.is_empty());
}
