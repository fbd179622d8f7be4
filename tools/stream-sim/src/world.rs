//! The simulated cluster: one GatewayClass, one Gateway served by a
//! dedicated pool (its parametersRef names a CoxswainGatewayParameters)
//! with one HTTP listener, and N HTTPRoutes attached to it, each with a
//! Service and EndpointSlice of its own (so N clusters), spread over 50
//! namespaces.

use std::sync::Arc;

use anyhow::Context;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{
    CoxswainGatewayParameters, EndpointSlice, Gateway, GatewayClass, HttpRoute, Object, Service,
    Snapshot,
};
use coxswain_translate::{DEFAULT_CONTROLLER_NAME, Options};
use serde_json::{Value, json};

const NAMESPACES: usize = 50;
/// `namespace/name` of the one Gateway: the key of its pool's config.
pub const GATEWAY: &str = "infra/gw";

/// What the controller runs with: pools are provisioned (as by
/// `coxswain controller`), so the Gateway's parametersRef is honoured.
pub fn options() -> Options {
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [0, 0, 0, 0].into(),
        now: Time(Timestamp::UNIX_EPOCH),
        ingress: Default::default(),
        dedicated_pools: true,
    }
}

fn typed<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> anyhow::Result<T> {
    serde_json::from_value(value).with_context(|| format!("building the {what}"))
}

/// The snapshot with `routes` HTTPRoutes, each serving `/api`.
pub fn snapshot(routes: usize) -> anyhow::Result<Snapshot> {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        "GatewayClass",
        json!({
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    )?)));
    s.insert(Object::CoxswainGatewayParameters(Arc::new(typed::<
        CoxswainGatewayParameters,
    >(
        "CoxswainGatewayParameters",
        json!({
            "metadata": {"name": "pool", "namespace": "infra"},
            "spec": {"replicas": 100}
        }),
    )?)));
    s.insert(Object::Gateway(Arc::new(typed::<Gateway>(
        "Gateway",
        json!({
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {
                "gatewayClassName": "coxswain",
                "infrastructure": {"parametersRef": {
                    "group": "gateway.coxswain-labs.dev",
                    "kind": "CoxswainGatewayParameters",
                    "name": "pool"
                }},
                "listeners": [
                    {"name": "web", "port": 80, "protocol": "HTTP",
                     "allowedRoutes": {"namespaces": {"from": "All"}}}
                ]
            }
        }),
    )?)));
    for i in 0..routes {
        let (ns, svc) = (namespace(i), format!("svc{i}"));
        s.insert(Object::Service(Arc::new(typed::<Service>(
            "Service",
            json!({
                "metadata": {"name": svc, "namespace": ns},
                "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
            }),
        )?)));
        s.insert(Object::EndpointSlice(Arc::new(typed::<EndpointSlice>(
            "EndpointSlice",
            json!({
                "metadata": {"name": format!("{svc}-a"), "namespace": ns,
                             "labels": {"kubernetes.io/service-name": svc}},
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 8080}],
                "endpoints": [
                    {"addresses": [format!("10.{}.{}.1", i / 250 % 256, i % 250)]},
                    {"addresses": [format!("10.{}.{}.2", i / 250 % 256, i % 250)]}
                ]
            }),
        )?)));
        s.insert(Object::HttpRoute(Arc::new(route(i, "/api")?)));
    }
    Ok(s)
}

fn namespace(i: usize) -> String {
    format!("ns{}", i % NAMESPACES)
}

/// HTTPRoute number `i`: its own hostname, a header-matched prefix rule
/// with a header filter, and an exact health-check rule.
pub fn route(i: usize, prefix: &str) -> anyhow::Result<HttpRoute> {
    let svc = format!("svc{i}");
    typed(
        "HTTPRoute",
        json!({
            "metadata": {"name": format!("route{i}"), "namespace": namespace(i),
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "parentRefs": [{"name": "gw", "namespace": "infra"}],
                "hostnames": [format!("app{i}.example.com")],
                "rules": [
                    {"matches": [{"path": {"type": "PathPrefix", "value": prefix},
                                  "headers": [{"name": "X-Tenant", "value": "t"}]}],
                     "filters": [{"type": "RequestHeaderModifier",
                                  "requestHeaderModifier": {"set": [{"name": "X-A", "value": "1"}]}}],
                     "backendRefs": [{"name": svc, "port": 80, "weight": 9}]},
                    {"matches": [{"path": {"type": "Exact", "value": "/healthz"}, "method": "GET"}],
                     "backendRefs": [{"name": svc, "port": 80}]}
                ]
            }
        }),
    )
}

/// Change number `k`: which route is edited and its new prefix (unique,
/// so every change is a new version).
pub fn change(k: usize, routes: usize) -> (usize, String) {
    // A stride coprime to most route counts, so the edits spread out.
    let i = k.wrapping_mul(7919) % routes.max(1);
    (i, format!("/api/v{k}"))
}
