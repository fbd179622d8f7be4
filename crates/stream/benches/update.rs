//! The config stream's per-change work at 5,000 routes (one HTTP listener,
//! a cluster per route): the controller encoding the Gateway again after
//! one route changed, the hub working out the update, and a proxy applying
//! it. Each should cost about one route, not 5,000.

use std::sync::Arc;

use coxswain_ir::{Config, Serve};
use coxswain_stream::{Encoder, Resources};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const ROUTES: usize = 5_000;

fn config() -> Config {
    let routes: Vec<_> = (0..ROUTES)
        .map(|i| {
            json!({
                "id": {"kind": "HTTPRoute", "namespace": format!("ns{}", i % 50),
                       "name": format!("route{i}"), "rule_index": 0, "rule_name": null},
                "hostnames": [],
                "matches": [{"path": {"Prefix": format!("/app{i}")}, "headers": [],
                             "query": [], "method": null}],
                "filters": [],
                "backends": [{"weight": 1, "target": {"Cluster": format!("ns/svc{i}:80")}}],
                "timeouts": {"request_ms": null, "backend_request_ms": null}
            })
        })
        .collect();
    let clusters: Vec<_> = (0..ROUTES)
        .map(|i| {
            json!({"name": format!("ns/svc{i}:80"), "protocol": "Http1",
                   "endpoints": [{"address": format!("10.0.{}.{}:8080", i / 250, i % 250)}]})
        })
        .collect();
    let mut clusters = clusters;
    clusters.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    serde_json::from_value(json!({
        "ir_version": coxswain_ir::IR_VERSION,
        "sockets": [{"transport": "Tcp", "address": "0.0.0.0", "port": 80,
            "listeners": [{"gateway": "ns/gw", "name": "web", "hostname": null,
                           "serve": {"Http": routes}}]}],
        "clusters": clusters
    }))
    .expect("bench fixture is valid")
}

/// `config` with route `i`'s prefix changed (a new `Arc`, as the
/// translator gives a changed route).
fn changed(config: &Config, i: usize, n: usize) -> Config {
    let mut config = config.clone();
    let Serve::Http(routes) = &mut config.sockets[0].listeners[0].serve else {
        unreachable!("the fixture's listener serves HTTP")
    };
    let mut route = (*routes[i]).clone();
    route.matches[0].path = coxswain_ir::PathMatch::Prefix(format!("/changed{n}"));
    routes[i] = Arc::new(route);
    config
}

fn bench(c: &mut Criterion) {
    let base = config();
    let mut encoder = Encoder::default();
    let old = encoder.encode(&base).expect("encodes");
    let mut n = 0;
    c.bench_function("encode_after_one_route_change_5000", |b| {
        b.iter(|| {
            n += 1;
            encoder
                .encode(&changed(&base, n % ROUTES, n))
                .expect("encodes")
        })
    });
    let new = Resources::from_config(&changed(&base, 7, 0)).expect("encodes");
    c.bench_function("update_between_versions_5000", |b| {
        b.iter(|| new.update_from(&old).expect("differs"))
    });
    let update = new.update_from(&old).expect("differs");
    let back = old.update_from(&new).expect("differs");
    let mut held = old.clone();
    held.to_config().expect("assembles");
    c.bench_function("proxy_applies_one_route_change_5000", |b| {
        b.iter(|| {
            let (_, config) = held.apply(&update).expect("applies");
            let (_, again) = held.apply(&back).expect("applies");
            (config, again)
        })
    });
    c.bench_function("config_clone_5000", |b| b.iter(|| base.clone()));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
