//! Endpoint churn: configs that change only a cluster's endpoints swap
//! them in place. Under continuous load through 100 such applies, no
//! request fails, traffic follows the endpoints, and no route is compiled
//! again (coxswain_proxy_routes_compiled_total stays put).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::*;
use coxswain_ir::{Config, Endpoint};
use http::StatusCode;

fn routes_compiled(proxy: &coxswain_proxy::Proxy) -> u64 {
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("coxswain_proxy_routes_compiled_total "))
        .and_then(|v| v.parse().ok())
        .expect("the routes_compiled counter")
}

#[tokio::test]
async fn endpoint_churn_under_load_fails_nothing_and_recompiles_nothing() {
    let (a, b) = (echo_backend("a").await, echo_backend("b").await);
    let port = free_port();
    let r = route("web", &[], vec![prefix("/")], vec![to("echo", 1)]);
    let first = config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![cluster("echo", &[a.addr])],
    );
    let (proxy, _) = start_proxy(first.clone()).await;
    let compiled = routes_compiled(&proxy);
    assert_eq!(compiled, 1);

    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        tokio::spawn(async move {
            let client = client();
            // Bounded: stops when told, or after 100,000 requests.
            for _ in 0..100_000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let reply = get(&client, port, "app.test", "/").await;
                let counter = if reply.status == StatusCode::OK {
                    &ok
                } else {
                    &failed
                };
                counter.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    wait_until("load is flowing", || async {
        ok.load(Ordering::SeqCst) > 0
    })
    .await;
    let sets = [vec![a.addr, b.addr], vec![b.addr], vec![a.addr]];
    for i in 0..100 {
        let mut next: Config = (*first).clone();
        std::sync::Arc::make_mut(&mut next.clusters[0]).endpoints = sets[i % 3]
            .iter()
            .map(|&address| Endpoint { address })
            .collect();
        let report = proxy.apply(Arc::new(next)).await;
        assert!(report.failed.is_empty());
        let before = ok.load(Ordering::SeqCst);
        wait_until("a request after the apply", || async {
            ok.load(Ordering::SeqCst) > before
        })
        .await;
    }
    stop.store(true, Ordering::SeqCst);
    load.await.unwrap();

    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "requests failed during endpoint churn"
    );
    assert!(a.hits.load(Ordering::SeqCst) > 0 && b.hits.load(Ordering::SeqCst) > 0);
    assert_eq!(
        routes_compiled(&proxy),
        compiled,
        "endpoint changes recompiled routes"
    );

    // Only b now: every request goes there.
    let mut only_b: Config = (*first).clone();
    std::sync::Arc::make_mut(&mut only_b.clusters[0]).endpoints =
        vec![Endpoint { address: b.addr }];
    proxy.apply(Arc::new(only_b)).await;
    let hits = a.hits.load(Ordering::SeqCst);
    let client = client();
    for _ in 0..5 {
        assert_eq!(
            get(&client, port, "app.test", "/").await.status,
            StatusCode::OK
        );
    }
    assert_eq!(a.hits.load(Ordering::SeqCst), hits);

    // A change of the cluster's settings does recompile its routes.
    let mut h2 = (*first).clone();
    std::sync::Arc::make_mut(&mut h2.clusters[0]).protocol = coxswain_ir::UpstreamProtocol::H2c;
    proxy.apply(Arc::new(h2)).await;
    assert_eq!(routes_compiled(&proxy), compiled + 1);
}
