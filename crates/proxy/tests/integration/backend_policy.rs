//! CoxswainBackendPolicy in the data plane, against real backends on
//! loopback: sticky sessions by cookie (re-pinned when the pod goes) and by
//! header hashing, least_conn steering around a busy pod, and the circuit
//! breaker taking a failing pod out (503 when none is left), with its
//! metrics, and keeping its state across a reload.

use crate::common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{BackendPolicy, Balancer, Breaker, Cluster, Config, HashKey, Persistence};
use http::StatusCode;

fn policy(balancer: Balancer) -> BackendPolicy {
    BackendPolicy {
        policy: "default/test".into(),
        connect_timeout_ms: Some(500),
        idle_timeout_ms: Some(30_000),
        balancer,
        breaker: None,
        persistence: None,
    }
}

fn breaker() -> Breaker {
    Breaker {
        threshold_percent: 50,
        window_ms: 60_000,
        open_ms: 60_000,
        min_requests: 2,
        max_open_ms: None,
    }
}

fn with_policy(endpoints: &[SocketAddr], policy: BackendPolicy) -> Cluster {
    Cluster {
        policy: Some(policy),
        ..cluster("echo", endpoints)
    }
}

fn one_route(port: u16, cluster: Cluster) -> Arc<Config> {
    let r = route("web", &[], vec![prefix("/")], vec![to("echo", 1)]);
    config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![cluster],
    )
}

fn backend_of(reply: &Reply) -> String {
    reply
        .headers
        .get("x-backend")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn cookie_persistence_pins_a_client_and_re_pins_when_its_pod_goes() {
    let backends = [
        echo_backend("a").await,
        echo_backend("b").await,
        echo_backend("c").await,
    ];
    let addrs: Vec<SocketAddr> = backends.iter().map(|b| b.addr).collect();
    let mut p = policy(Balancer::RoundRobin);
    p.persistence = Some(Persistence::Cookie { name: "s".into() });
    let port = free_port();
    let (proxy, _) = start_proxy(one_route(port, with_policy(&addrs, p.clone()))).await;
    let client = client();

    let first = get(&client, port, "app.test", "/").await;
    let set_cookie = first.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set_cookie.starts_with("s=") && set_cookie.ends_with("; Path=/; HttpOnly"),
        "{set_cookie}"
    );
    let pair = set_cookie.split(';').next().unwrap().to_string();
    let home = backend_of(&first);
    for _ in 0..10 {
        let r = send(
            &client,
            request(port, "app.test", "/").header("cookie", &pair),
        )
        .await;
        assert_eq!(backend_of(&r), home, "a pinned client stays on its pod");
        assert!(r.headers.get("set-cookie").is_none());
    }
    // Without the cookie, round robin spreads requests over every pod.
    let spread: BTreeSet<String> = futures_collect(&client, port, 6).await;
    assert_eq!(spread.len(), 3);

    // The pinned pod goes away: the client lands elsewhere and is re-pinned.
    let rest: Vec<SocketAddr> = backends
        .iter()
        .filter(|b| b.addr.to_string() != addr_of(&backends, &home))
        .map(|b| b.addr)
        .collect();
    proxy.apply(one_route(port, with_policy(&rest, p))).await;
    let r = send(
        &client,
        request(port, "app.test", "/").header("cookie", &pair),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_ne!(backend_of(&r), home);
    let renewed = r.headers["set-cookie"].to_str().unwrap();
    assert_ne!(renewed, set_cookie);
}

async fn futures_collect(client: &TestClient, port: u16, n: usize) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for _ in 0..n {
        seen.insert(backend_of(&get(client, port, "app.test", "/").await));
    }
    seen
}

fn addr_of(backends: &[EchoBackend], name: &str) -> String {
    let i = ["a", "b", "c"].iter().position(|n| *n == name).unwrap();
    backends[i].addr.to_string()
}

#[tokio::test]
async fn header_hashing_keeps_each_user_on_one_pod() {
    let backends = [
        echo_backend("a").await,
        echo_backend("b").await,
        echo_backend("c").await,
    ];
    let addrs: Vec<SocketAddr> = backends.iter().map(|b| b.addr).collect();
    let p = policy(Balancer::Hash(HashKey::Header("x-user".into())));
    let port = free_port();
    let (_proxy, _) = start_proxy(one_route(port, with_policy(&addrs, p))).await;
    let client = client();
    let mut used = BTreeSet::new();
    for user in 0..20 {
        let user = format!("user-{user}");
        let mut homes = BTreeSet::new();
        for _ in 0..4 {
            let r = send(
                &client,
                request(port, "app.test", "/").header("x-user", &user),
            )
            .await;
            homes.insert(backend_of(&r));
        }
        assert_eq!(homes.len(), 1, "{user} was spread over {homes:?}");
        used.extend(homes);
    }
    assert!(used.len() >= 2, "20 users all hashed to {used:?}");
}

#[tokio::test]
async fn least_conn_sends_new_requests_around_a_busy_pod() {
    let backends = [echo_backend("a").await, echo_backend("b").await];
    let addrs: Vec<SocketAddr> = backends.iter().map(|b| b.addr).collect();
    let port = free_port();
    let (_proxy, _) = start_proxy(one_route(
        port,
        with_policy(&addrs, policy(Balancer::LeastConn)),
    ))
    .await;
    let client = client();
    // One slow request holds a pod.
    let slow = {
        let client = client.clone();
        tokio::spawn(async move {
            send(
                &client,
                request(port, "app.test", "/").header("x-delay-ms", "1500"),
            )
            .await
        })
    };
    wait_until("the slow request reached a backend", || async {
        backends
            .iter()
            .map(|b| b.hits.load(Ordering::SeqCst))
            .sum::<usize>()
            == 1
    })
    .await;
    let busy = if backends[0].hits.load(Ordering::SeqCst) == 1 {
        "a"
    } else {
        "b"
    };
    for _ in 0..6 {
        let r = get(&client, port, "app.test", "/").await;
        assert_ne!(
            backend_of(&r),
            busy,
            "least_conn chose the pod with a request in flight"
        );
    }
    assert_eq!(backend_of(&slow.await.unwrap()), busy);
}

#[tokio::test]
async fn an_open_breaker_takes_the_failing_pod_out_and_survives_a_reload() {
    let (bad, bad_hits) =
        fixed_status_backend(StatusCode::INTERNAL_SERVER_ERROR, "failing\n").await;
    let good = echo_backend("good").await;
    let mut p = policy(Balancer::RoundRobin);
    p.breaker = Some(breaker());
    let port = free_port();
    let cluster = with_policy(&[bad, good.addr], p);
    let (proxy, _) = start_proxy(one_route(port, cluster.clone())).await;
    let client = client();
    let mut failures = 0;
    for _ in 0..12 {
        if get(&client, port, "app.test", "/").await.status == StatusCode::INTERNAL_SERVER_ERROR {
            failures += 1;
        }
    }
    // Round robin sends the 1st and 3rd to the bad pod; two failures of two
    // (minRequests 2, threshold 50%) open its breaker.
    assert_eq!(failures, 2);
    assert_eq!(bad_hits.load(Ordering::SeqCst), 2);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    let labels = format!("upstream=\"echo\",endpoint=\"{bad}\"");
    assert!(
        metrics.contains(&format!(
            "coxswain_proxy_circuit_breaker_state{{{labels}}} 1\n"
        )),
        "{metrics}"
    );
    assert!(metrics.contains(&format!(
        "coxswain_proxy_circuit_breaker_transitions_total{{{labels},to=\"open\"}} 1\n"
    )));
    assert!(!metrics.contains(&format!(
        "coxswain_proxy_circuit_breaker_rejected_total{{{labels}}} 0\n"
    )));
    let good_labels = format!("upstream=\"echo\",endpoint=\"{}\"", good.addr);
    assert!(metrics.contains(&format!(
        "coxswain_proxy_circuit_breaker_state{{{good_labels}}} 0\n"
    )));

    // A reload that changes another cluster keeps this breaker open.
    let mut reloaded = (*one_route(port, cluster)).clone();
    reloaded
        .clusters
        .push(std::sync::Arc::new(common::cluster("other", &[good.addr])));
    proxy.apply(Arc::new(reloaded)).await;
    for _ in 0..4 {
        assert_eq!(
            get(&client, port, "app.test", "/").await.status,
            StatusCode::OK
        );
    }
    assert_eq!(bad_hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn every_breaker_open_fails_fast_with_503() {
    let (bad, bad_hits) = fixed_status_backend(StatusCode::BAD_GATEWAY, "failing\n").await;
    let mut p = policy(Balancer::LeastConn);
    p.breaker = Some(breaker());
    let port = free_port();
    let (_proxy, _) = start_proxy(one_route(port, with_policy(&[bad], p))).await;
    let client = client();
    for _ in 0..2 {
        assert_eq!(
            get(&client, port, "app.test", "/").await.status,
            StatusCode::BAD_GATEWAY
        );
    }
    let r = get(&client, port, "app.test", "/").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.text(), "upstream circuit open\n");
    assert_eq!(
        bad_hits.load(Ordering::SeqCst),
        2,
        "an open breaker never reaches the pod"
    );
}
