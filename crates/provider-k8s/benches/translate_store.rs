//! One controller-loop translation at 5,000 HTTPRoutes, the shape of
//! `scripts/bench-k8s-reload.sh`: one Gateway with an address from the
//! pool, one Service, every route with its own hostname. Measures what the
//! loop does per watch event: a route's spec changed (the memo recomputes
//! one route), and a route whose status alone changed (our own write-back
//! coming back through the watch).

use std::sync::Arc;

use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{Gateway, GatewayClass, HttpRoute, Kind, Object, Service};
use coxswain_provider_k8s::addresses::AddressMemory;
use coxswain_provider_k8s::store::{Change, Store};
use coxswain_provider_k8s::{AddressMode, ControllerConfig, LeaseConfig, translate_store};
use coxswain_translate::{DEFAULT_CONTROLLER_NAME, Translator};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const ROUTES: usize = 5_000;

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("bench fixture: {e}"))
}

fn route(i: usize, path: &str, status: Option<&str>) -> Object {
    let mut value = json!({
        "metadata": {"name": format!("r{i}"), "namespace": "default",
                     "generation": 1, "resourceVersion": format!("{i}")},
        "spec": {
            "parentRefs": [{"name": "demo"}],
            "hostnames": [format!("r{i}.bench.example")],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}],
                       "backendRefs": [{"name": "echo", "port": 80}]}]
        }
    });
    if let Some(reason) = status {
        value["status"] = json!({"parents": [{
            "parentRef": {"name": "demo"},
            "controllerName": DEFAULT_CONTROLLER_NAME,
            "conditions": [{"type": "Accepted", "status": "True", "reason": reason,
                            "message": "", "observedGeneration": 1,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        }]});
    }
    Object::HttpRoute(Arc::new(typed::<HttpRoute>(value)))
}

fn store() -> Store {
    let mut store = Store::default();
    for kind in Kind::ALL.iter().copied() {
        store.apply(Change::Replace(kind, vec![]));
    }
    store.apply(Change::Apply(Object::GatewayClass(Arc::new(typed::<
        GatewayClass,
    >(
        json!({"metadata": {"name": "coxswain"},
               "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}}),
    )))));
    store.apply(Change::Apply(Object::Gateway(Arc::new(typed::<Gateway>(
        json!({
            "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo"},
            "spec": {"gatewayClassName": "coxswain",
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
        }),
    )))));
    store.apply(Change::Apply(Object::Service(Arc::new(typed::<Service>(
        json!({
            "metadata": {"name": "echo", "namespace": "default"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }),
    )))));
    for i in 0..ROUTES {
        store.apply(Change::Apply(route(i, &format!("/r{i}"), Some("Accepted"))));
    }
    store
}

fn config() -> ControllerConfig {
    ControllerConfig {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        gateway_class_name: None,
        default_address: [0, 0, 0, 0].into(),
        addresses: AddressMode::Pool("127.0.10.0/24".parse().unwrap_or_else(|_| unreachable!())),
        lease: LeaseConfig {
            namespace: "coxswain-system".into(),
            name: "coxswain".into(),
            identity: "bench".into(),
        },
        ingress: Default::default(),
        pools: None,
    }
}

fn bench(c: &mut Criterion) {
    let config = config();
    let mut store = store();
    let mut translator = Translator::new();
    let mut addresses = AddressMemory::new();
    let mut translate = |store: &Store| {
        translate_store(
            &mut translator,
            &mut addresses,
            store,
            &config,
            None,
            Timestamp::UNIX_EPOCH,
        )
    };
    let (output, _, _) = translate(&store);
    assert_eq!(output.statuses.routes.len(), ROUTES);
    let mut n = 0;
    c.bench_function("translate_store_5000_routes_one_moved", |b| {
        b.iter(|| {
            n += 1;
            // The first half moves; the second half only echoes.
            store.apply(Change::Apply(route(
                n % (ROUTES / 2),
                &format!("/moved-{n}"),
                None,
            )));
            translate(std::hint::black_box(&store))
        })
    });
    c.bench_function("translate_store_5000_routes_one_status_echo", |b| {
        b.iter(|| {
            n += 1;
            let i = ROUTES / 2 + n % (ROUTES / 2);
            store.apply(Change::Apply(route(i, &format!("/r{i}"), Some("Accepted"))));
            translate(std::hint::black_box(&store))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
