//! Route-rule session persistence against real backends: a rule with two
//! weighted backends pins a client by cookie (or header) to the endpoint
//! that served it first, across backends; an expired token starts a new
//! session; an idle timeout renews the token on every answer; a pinned pod
//! that goes away gets the client re-pinned.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use coxswain_ir::{Config, Route, RouteSession, SessionCarrier};
use http::StatusCode;

fn session_route(carrier: SessionCarrier, name: &str, idle: Option<u64>) -> Route {
    let mut r = route("web", &[], vec![prefix("/")], vec![to("a", 1), to("b", 1)]);
    r.session = Some(RouteSession {
        name: name.into(),
        carrier,
        absolute_timeout_ms: Some(3_600_000),
        idle_timeout_ms: idle,
    });
    r
}

fn two_backends(port: u16, r: Route, a: &EchoBackend, b: &EchoBackend) -> Arc<Config> {
    config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![cluster("a", &[a.addr]), cluster("b", &[b.addr])],
    )
}

fn backend_of(reply: &Reply) -> String {
    reply.json()["backend"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn cookie_pair(reply: &Reply) -> Option<String> {
    let v = reply.headers.get("set-cookie")?.to_str().ok()?;
    Some(v.split(';').next()?.to_string())
}

#[tokio::test]
async fn a_cookie_session_pins_the_client_across_weighted_backends() {
    let (a, b) = (echo_backend("a").await, echo_backend("b").await);
    let port = free_port();
    let r = session_route(SessionCarrier::Cookie { permanent: true }, "sid", None);
    let (proxy, _) = start_proxy(two_backends(port, r, &a, &b)).await;
    let client = client();

    // Without a session the two backends share the requests.
    let mut seen = BTreeSet::new();
    for _ in 0..40 {
        seen.insert(backend_of(&get(&client, port, "app.test", "/").await));
    }
    assert_eq!(seen.len(), 2);

    let first = get(&client, port, "app.test", "/").await;
    let set_cookie = first.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set_cookie.starts_with("sid=") && set_cookie.ends_with("; Path=/; HttpOnly; Max-Age=3600"),
        "{set_cookie}"
    );
    let pair = cookie_pair(&first).unwrap();
    let home = backend_of(&first);
    for _ in 0..20 {
        let r = send(
            &client,
            request(port, "app.test", "/").header("cookie", &pair),
        )
        .await;
        assert_eq!(backend_of(&r), home);
        assert!(r.headers.get("set-cookie").is_none());
    }

    // The same endpoint, but a session whose absolute deadline has passed.
    let hash = pair.trim_start_matches("sid=").split('.').next().unwrap();
    let expired = format!("sid={hash}.1.0");
    let r = send(
        &client,
        request(port, "app.test", "/").header("cookie", &expired),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.headers.get("set-cookie").is_some(),
        "an expired session is replaced"
    );

    // The pinned pod goes away: the client is re-pinned to the other.
    let other = if home == "a" { &b } else { &a };
    let r2 = session_route(SessionCarrier::Cookie { permanent: true }, "sid", None);
    let only_other = config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r2])])],
        vec![cluster("a", &[other.addr]), cluster("b", &[other.addr])],
    );
    proxy.apply(only_other).await;
    let r = send(
        &client,
        request(port, "app.test", "/").header("cookie", &pair),
    )
    .await;
    assert_ne!(backend_of(&r), home);
    assert_ne!(cookie_pair(&r).unwrap(), pair, "re-pinned");
}

#[tokio::test]
async fn a_header_session_with_an_idle_timeout_is_renewed_on_every_answer() {
    let (a, b) = (echo_backend("a").await, echo_backend("b").await);
    let port = free_port();
    let r = session_route(SessionCarrier::Header, "x-session", Some(600_000));
    let (_proxy, _) = start_proxy(two_backends(port, r, &a, &b)).await;
    let client = client();
    let first = get(&client, port, "app.test", "/").await;
    let mut token = first.headers["x-session"].to_str().unwrap().to_string();
    let home = backend_of(&first);
    for _ in 0..10 {
        let r = send(
            &client,
            request(port, "app.test", "/").header("x-session", &token),
        )
        .await;
        assert_eq!(backend_of(&r), home);
        let renewed = r.headers["x-session"].to_str().unwrap().to_string();
        assert_eq!(
            renewed.split('.').next(),
            token.split('.').next(),
            "the same endpoint"
        );
        token = renewed;
    }
}
