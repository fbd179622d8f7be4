//! Translating a large snapshot: 5,000 HTTPRoutes across 50 namespaces, two
//! rules each, attached to one Gateway with two listeners.

use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{EndpointSlice, Gateway, GatewayClass, HttpRoute, Object, Service, Snapshot};
use coxswain_translate::{DEFAULT_CONTROLLER_NAME, Options, Translator, translate};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const ROUTES: usize = 5_000;
const NAMESPACES: usize = 50;

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("bench fixture is valid")
}

fn snapshot() -> Snapshot {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    ))));
    s.insert(Object::Gateway(Arc::new(typed::<Gateway>(json!({
        "metadata": {"name": "gw", "namespace": "infra"},
        "spec": {"gatewayClassName": "coxswain", "listeners": [
            {"name": "web", "port": 80, "protocol": "HTTP", "hostname": "*.example.com",
             "allowedRoutes": {"namespaces": {"from": "All"}}},
            {"name": "alt", "port": 8080, "protocol": "HTTP",
             "allowedRoutes": {"namespaces": {"from": "All"}}}
        ]}
    })))));
    for i in 0..ROUTES {
        let ns = format!("ns{}", i % NAMESPACES);
        let svc = format!("svc{i}");
        s.insert(Object::Service(Arc::new(typed::<Service>(json!({
            "metadata": {"name": svc, "namespace": ns},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        })))));
        s.insert(Object::EndpointSlice(Arc::new(typed::<EndpointSlice>(json!({
            "metadata": {"name": format!("{svc}-a"), "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": [
                {"addresses": [format!("10.{}.{}.1", i / 250, i % 250)]},
                {"addresses": [format!("10.{}.{}.2", i / 250, i % 250)], "conditions": {"ready": true}}
            ]
        })))));
        s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
            "metadata": {"name": format!("route{i}"), "namespace": ns,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "parentRefs": [{"name": "gw", "namespace": "infra"}],
                "hostnames": [format!("app{i}.example.com")],
                "rules": [
                    {"matches": [{"path": {"type": "PathPrefix", "value": "/api"},
                                  "headers": [{"name": "X-Tenant", "value": "t"}]}],
                     "filters": [{"type": "RequestHeaderModifier",
                                  "requestHeaderModifier": {"set": [{"name": "X-A", "value": "1"}]}}],
                     "backendRefs": [{"name": svc, "port": 80, "weight": 9}]},
                    {"matches": [{"path": {"type": "Exact", "value": "/healthz"}, "method": "GET"}],
                     "timeouts": {"request": "10s"},
                     "backendRefs": [{"name": svc, "port": 80}]}
                ]
            }
        })))));
    }
    s
}

fn bench(c: &mut Criterion) {
    let snapshot = snapshot();
    let options = Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [0, 0, 0, 0].into(),
        now: Time(Timestamp::UNIX_EPOCH),
        ingress: Default::default(),
        dedicated_pools: false,
    };
    let out = translate(&snapshot, &options);
    assert_eq!(out.statuses.routes.len(), ROUTES);
    assert_eq!(out.ir.clusters.len(), ROUTES);
    c.bench_function("translate_5000_http_routes", |b| {
        b.iter(|| translate(std::hint::black_box(&snapshot), &options))
    });
    // The reload path: one route replaced by an equal but new object, so
    // the memo recomputes exactly one route.
    let mut translator = Translator::new();
    translator.translate(&snapshot, &options);
    let mut edited = snapshot.clone();
    let victim = edited.http_routes.keys().next().cloned();
    c.bench_function("translator_5000_http_routes_one_changed", |b| {
        b.iter(|| {
            if let Some(key) = &victim
                && let Some(route) = edited.http_routes.get(key).map(|r| (**r).clone())
            {
                edited.insert(Object::HttpRoute(Arc::new(route)));
            }
            translator.translate(std::hint::black_box(&edited), &options)
        })
    });
}

criterion_group! {
    name = benches;
    // One iteration takes tens of milliseconds; ten samples keep runs short.
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
