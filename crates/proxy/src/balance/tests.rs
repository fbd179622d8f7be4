use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http::header::COOKIE;
use http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use coxswain_ir::{Balancer, Breaker, HashKey, Persistence};

use super::*;
use crate::breaker::CircuitBreaker;
use crate::breaker_metrics::BreakerCounters;

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, (i / 250) as u8, (i % 250) as u8 + 1], 8080))
}

fn endpoints(n: usize) -> Vec<Arc<Endpoint>> {
    (0..n)
        .map(|i| Arc::new(Endpoint::new(addr(i), None)))
        .collect()
}

fn with_breakers(n: usize) -> Vec<Arc<Endpoint>> {
    let config = Breaker {
        threshold_percent: 50,
        window_ms: 10_000,
        open_ms: 5_000,
        min_requests: 2,
        max_open_ms: None,
    };
    (0..n)
        .map(|i| {
            let b = (
                CircuitBreaker::new(&config),
                Arc::new(BreakerCounters::default()),
            );
            Arc::new(Endpoint::new(addr(i), Some(b)))
        })
        .collect()
}

struct Req {
    headers: HeaderMap,
    path: String,
    client: IpAddr,
}

impl Req {
    fn new() -> Self {
        Req {
            headers: HeaderMap::new(),
            path: "/".into(),
            client: IpAddr::from([192, 0, 2, 1]),
        }
    }
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers
            .append(name, HeaderValue::from_str(value).unwrap());
        self
    }
    fn key(&self) -> RequestKey<'_> {
        RequestKey {
            headers: &self.headers,
            path_and_query: &self.path,
            client: self.client,
        }
    }
}

fn chosen(pick: Pick) -> Chosen {
    match pick {
        Pick::Chosen(c) => c,
        other => panic!("nothing chosen: {other:?}"),
    }
}

fn pick_addr(b: &Balance, eps: &[Arc<Endpoint>], req: &Req) -> SocketAddr {
    chosen(b.pick(eps, &req.key(), &[], Stickiness::Policy, Instant::now()))
        .attempt
        .endpoint
        .address
}

#[tokio::test(start_paused = true)]
async fn round_robin_visits_every_endpoint_evenly() {
    let eps = endpoints(3);
    let b = Balance::new(Balancer::RoundRobin, None);
    let mut counts = BTreeMap::new();
    for _ in 0..300 {
        *counts.entry(pick_addr(&b, &eps, &Req::new())).or_insert(0) += 1;
    }
    assert_eq!(
        counts.values().copied().collect::<Vec<_>>(),
        [100, 100, 100]
    );
}

#[tokio::test(start_paused = true)]
async fn least_conn_avoids_the_busy_endpoint() {
    let eps = endpoints(3);
    let b = Balance::new(Balancer::LeastConn, None);
    // Endpoint 0 holds 5 requests, endpoint 1 holds 1.
    let now = Instant::now();
    let _busy: Vec<Attempt> = (0..5)
        .map(|_| Attempt::start(eps[0].clone(), false, now))
        .collect();
    let _one = Attempt::start(eps[1].clone(), false, now);
    let first = chosen(b.pick(&eps, &Req::new().key(), &[], Stickiness::Policy, now));
    assert_eq!(first.attempt.endpoint.address, addr(2));
    // Held: now 1 and 2 tie at one each, 0 is never chosen.
    let mut held = vec![first];
    for _ in 0..6 {
        let c = chosen(b.pick(&eps, &Req::new().key(), &[], Stickiness::Policy, now));
        assert_ne!(c.attempt.endpoint.address, addr(0));
        held.push(c);
    }
    let in_flight: Vec<u32> = eps.iter().map(|e| e.in_flight()).collect();
    assert_eq!(in_flight, [5, 4, 4]);
    drop(held);
    assert_eq!(eps.iter().map(|e| e.in_flight()).sum::<u32>(), 6);
}

#[tokio::test(start_paused = true)]
async fn ewma_tries_unsampled_endpoints_then_prefers_the_fast_one() {
    let eps = endpoints(2);
    let b = Balance::new(Balancer::Ewma, None);
    let t0 = Instant::now();
    for (i, ms) in [(0, 50), (1, 5)] {
        let mut c = chosen(b.pick(&eps, &Req::new().key(), &[], Stickiness::Policy, t0));
        assert_eq!(c.attempt.endpoint.address, addr(i), "unsampled first");
        c.attempt.record(true, t0 + Duration::from_millis(ms));
    }
    let fast = (0..20)
        .filter(|_| pick_addr(&b, &eps, &Req::new()) == addr(1))
        .count();
    assert_eq!(fast, 20);
}

#[tokio::test(start_paused = true)]
async fn rendezvous_moves_only_the_removed_endpoints_keys() {
    let eps = endpoints(5);
    let b = Balance::new(Balancer::Hash(HashKey::Header("x-user".into())), None);
    let before: Vec<SocketAddr> = (0..500)
        .map(|u| pick_addr(&b, &eps, &Req::new().header("x-user", &format!("user-{u}"))))
        .collect();
    // Every endpoint gets a share.
    for i in 0..5 {
        let share = before.iter().filter(|a| **a == addr(i)).count();
        assert!(
            (50..=150).contains(&share),
            "endpoint {i} got {share} of 500"
        );
    }
    let fewer: Vec<Arc<Endpoint>> = eps
        .iter()
        .filter(|e| e.address != addr(2))
        .cloned()
        .collect();
    for (u, old) in before.iter().enumerate() {
        let now = pick_addr(
            &b,
            &fewer,
            &Req::new().header("x-user", &format!("user-{u}")),
        );
        if *old != addr(2) {
            assert_eq!(now, *old, "user-{u} moved though its endpoint stayed");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn hashing_without_the_attribute_falls_back_to_round_robin() {
    let eps = endpoints(2);
    let b = Balance::new(Balancer::Hash(HashKey::Cookie("session".into())), None);
    let picks: Vec<SocketAddr> = (0..4).map(|_| pick_addr(&b, &eps, &Req::new())).collect();
    assert_eq!(picks, [addr(0), addr(1), addr(0), addr(1)]);
    let pinned = Req::new().header("cookie", "session=abc");
    let first = pick_addr(&b, &eps, &pinned);
    assert!((0..10).all(|_| pick_addr(&b, &eps, &pinned) == first));
}

#[tokio::test(start_paused = true)]
async fn source_ip_hash_keeps_a_client_on_one_endpoint() {
    let eps = endpoints(4);
    let b = Balance::new(Balancer::Hash(HashKey::SourceIp), None);
    let mut spread = std::collections::BTreeSet::new();
    for c in 0..40u8 {
        let mut req = Req::new();
        req.client = IpAddr::from([198, 51, 100, c]);
        let first = pick_addr(&b, &eps, &req);
        assert!((0..5).all(|_| pick_addr(&b, &eps, &req) == first));
        spread.insert(first);
    }
    assert_eq!(spread.len(), 4);
}

#[tokio::test(start_paused = true)]
async fn cookie_persistence_pins_and_re_pins() {
    let eps = endpoints(3);
    let persistence = Persistence::Cookie { name: "s".into() };
    let b = Balance::new(Balancer::RoundRobin, Some(persistence));
    let first = chosen(b.pick(
        &eps,
        &Req::new().key(),
        &[],
        Stickiness::Policy,
        Instant::now(),
    ));
    let cookie = first.set_cookie.expect("a new client gets a cookie");
    let cookie = cookie.to_str().unwrap().to_string();
    assert!(cookie.ends_with("; Path=/; HttpOnly"), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_string();
    let home = first.attempt.endpoint.address;
    for _ in 0..10 {
        let c = chosen(b.pick(
            &eps,
            &Req::new().header("cookie", &pair).key(),
            &[],
            Stickiness::Policy,
            Instant::now(),
        ));
        assert_eq!(c.attempt.endpoint.address, home);
        assert!(c.set_cookie.is_none(), "a pinned client keeps its cookie");
    }
    // Its pod went away: another is chosen and the client re-pinned.
    let rest: Vec<Arc<Endpoint>> = eps.iter().filter(|e| e.address != home).cloned().collect();
    let c = chosen(b.pick(
        &rest,
        &Req::new().header("cookie", &pair).key(),
        &[],
        Stickiness::Policy,
        Instant::now(),
    ));
    assert_ne!(c.attempt.endpoint.address, home);
    let new_cookie = c.set_cookie.expect("re-pinned");
    assert_ne!(new_cookie.to_str().unwrap(), cookie);
}

#[tokio::test(start_paused = true)]
async fn header_persistence_follows_the_header() {
    let eps = endpoints(4);
    let persistence = Persistence::Header {
        name: "x-tenant".into(),
    };
    let b = Balance::new(Balancer::RoundRobin, Some(persistence));
    let req = Req::new().header("x-tenant", "acme");
    let home = pick_addr(&b, &eps, &req);
    assert!((0..10).all(|_| pick_addr(&b, &eps, &req) == home));
    let c = chosen(b.pick(&eps, &req.key(), &[], Stickiness::Policy, Instant::now()));
    assert!(c.set_cookie.is_none());
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_takes_its_endpoint_out_until_all_are_open() {
    let eps = with_breakers(2);
    let b = Balance::new(Balancer::RoundRobin, None);
    let now = Instant::now();
    // Two failures trip endpoint 0 (min_requests 2, threshold 50%).
    for _ in 0..2 {
        Attempt::start(eps[0].clone(), false, now).record(false, now);
    }
    assert!((0..6).all(|_| pick_addr(&b, &eps, &Req::new()) == addr(1)));
    for _ in 0..2 {
        Attempt::start(eps[1].clone(), false, now).record(false, now);
    }
    assert!(matches!(
        b.pick(&eps, &Req::new().key(), &[], Stickiness::Policy, now),
        Pick::AllOpen
    ));
    // After the open time one probe goes through; its success closes it.
    let later = now + Duration::from_secs(5);
    let mut probe = chosen(b.pick(&eps, &Req::new().key(), &[], Stickiness::Policy, later));
    probe.attempt.record(true, later);
    let healed = probe.attempt.endpoint.address;
    assert!((0..4).all(|_| pick_addr(&b, &eps, &Req::new()) == healed));
}

#[tokio::test(start_paused = true)]
async fn a_retry_avoids_endpoints_already_tried() {
    let eps = endpoints(3);
    let b = Balance::new(Balancer::Hash(HashKey::Uri), None);
    let req = Req::new();
    let now = Instant::now();
    let first = pick_addr(&b, &eps, &req);
    let second = chosen(b.pick(&eps, &req.key(), &[first], Stickiness::Policy, now))
        .attempt
        .endpoint
        .address;
    assert_ne!(second, first);
    let third = chosen(b.pick(&eps, &req.key(), &[first, second], Stickiness::Policy, now))
        .attempt
        .endpoint
        .address;
    assert!(third != first && third != second);
    // Everything tried: any endpoint again rather than none.
    assert!(matches!(
        b.pick(
            &eps,
            &req.key(),
            &[first, second, third],
            Stickiness::Policy,
            now
        ),
        Pick::Chosen(_)
    ));
    assert!(matches!(
        b.pick(&[], &req.key(), &[], Stickiness::Policy, now),
        Pick::Empty
    ));
}

#[tokio::test(start_paused = true)]
async fn large_clusters_skip_tried_endpoints_too() {
    let eps = endpoints(100);
    let b = Balance::new(Balancer::RoundRobin, None);
    let tried: Vec<SocketAddr> = (0..99).map(addr).collect();
    let c = chosen(b.pick(
        &eps,
        &Req::new().key(),
        &tried,
        Stickiness::Policy,
        Instant::now(),
    ));
    assert_eq!(c.attempt.endpoint.address, addr(99));
}

#[test]
fn cookie_header_name_is_the_standard_one() {
    assert_eq!(COOKIE.as_str(), "cookie");
}

#[tokio::test(start_paused = true)]
async fn a_route_pin_overrides_the_policy_and_sets_no_policy_cookie() {
    let eps = endpoints(3);
    let b = Balance::new(
        Balancer::RoundRobin,
        Some(Persistence::Cookie { name: "s".into() }),
    );
    let target = eps[2].hash;
    for _ in 0..5 {
        let c = chosen(b.pick(
            &eps,
            &Req::new().key(),
            &[],
            Stickiness::Route(Some(target)),
            Instant::now(),
        ));
        assert_eq!(c.attempt.endpoint.address, addr(2));
        assert!(c.set_cookie.is_none());
    }
    let c = chosen(b.pick(
        &eps,
        &Req::new().key(),
        &[],
        Stickiness::Route(None),
        Instant::now(),
    ));
    assert!(c.set_cookie.is_none(), "the route issues its own token");
}
