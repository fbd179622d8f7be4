//! A retry budget (XBackendTrafficPolicy) against a real failing backend:
//! retries past the budget are answered 503 without reaching the backend
//! again, and counted; without a budget every request is retried.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{Cluster, Config, Retry, RetryBudget};
use http::StatusCode;

fn retrying_config(port: u16, backend: SocketAddr, budget: Option<RetryBudget>) -> Arc<Config> {
    let mut r = route("r", &[], vec![prefix("/")], vec![to("echo", 1)]);
    r.retry = Some(Retry {
        codes: vec![503],
        attempts: 1,
        backoff_ms: 1,
    });
    let cluster = Cluster {
        retry_budget: budget,
        ..cluster("echo", &[backend])
    };
    config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![cluster],
    )
}

#[tokio::test]
async fn retries_past_the_budget_get_503_and_never_reach_the_backend() {
    let (backend, hits) =
        fixed_status_backend(StatusCode::SERVICE_UNAVAILABLE, "backend busy\n").await;
    // No share of traffic may be retries, but two retries a minute may.
    let budget = RetryBudget {
        policy: "default/budget".into(),
        percent: 0,
        interval_ms: 10_000,
        min_count: 2,
        min_interval_ms: 60_000,
    };
    let port = free_port();
    let (proxy, _) = start_proxy(retrying_config(port, backend, Some(budget))).await;
    let client = client();
    let mut answers = Vec::new();
    for _ in 0..5 {
        let r = get(&client, port, "app.test", "/").await;
        answers.push((r.status, r.text()));
    }
    let busy = (
        StatusCode::SERVICE_UNAVAILABLE,
        "backend busy\n".to_string(),
    );
    let spent = (
        StatusCode::SERVICE_UNAVAILABLE,
        "retry budget exhausted\n".to_string(),
    );
    assert_eq!(
        answers,
        [busy.clone(), busy, spent.clone(), spent.clone(), spent]
    );
    // Two requests tried twice, three once.
    assert_eq!(hits.load(Ordering::SeqCst), 7);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains("coxswain_proxy_upstream_retry_budget_exhausted_total 3\n"),
        "{metrics}"
    );
    assert!(metrics.contains("coxswain_proxy_upstream_retries_total 2\n"));
}

#[tokio::test]
async fn without_a_budget_every_request_is_retried() {
    let (backend, hits) =
        fixed_status_backend(StatusCode::SERVICE_UNAVAILABLE, "backend busy\n").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(retrying_config(port, backend, None)).await;
    let client = client();
    for _ in 0..5 {
        let r = get(&client, port, "app.test", "/").await;
        assert_eq!(r.text(), "backend busy\n");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 10);
}
