//! RateLimit's global mode against a real redis-server: two proxies
//! share one budget, a long key value is hashed and every key expires,
//! buckets keyed on a verified JWT claim, and a store that goes away
//! admits (Allow, counted) or refuses with 503 (Deny) until it is back.
//!
//! One request per hour, so real time passing never refills a bucket.

use crate::common;

use std::sync::atomic::Ordering;

use common::jwt::Signer;
use common::redis::RedisServer;
use common::*;
use coxswain_ir::{
    Extension, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, GlobalRateLimit, RateLimit,
    RateLimitKey, StoreUnavailable,
};
use http::StatusCode;
use serde_json::json;

fn key(name: &str) -> ExtensionKey {
    extension_key(ExtensionKind::RateLimit, name)
}

fn global(
    name: &str,
    burst: u32,
    key: RateLimitKey,
    store: &RedisServer,
    on_unavailable: StoreUnavailable,
) -> Extension {
    Extension {
        key: self::key(name),
        spec: ExtensionSpec::RateLimit(RateLimit {
            name: name.into(),
            requests: 1,
            period_ms: 3_600_000,
            burst,
            key,
            global: Some(GlobalRateLimit {
                address: store.address(),
                scope: format!("default/{name}"),
                on_unavailable,
            }),
        }),
    }
}

fn limited(path: &str, resource: &str) -> coxswain_ir::Route {
    rule_with(path, vec![Filter::Extension(key(resource))])
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn two_proxies_share_one_budget() {
    let store = RedisServer::start(free_port());
    let backend = echo_backend("b").await;
    let (one, two) = (free_port(), free_port());
    let config = |port| {
        config_with_extensions(
            port,
            vec![limited("/shared", "fleet")],
            backend.addr,
            vec![global(
                "fleet",
                3,
                RateLimitKey::Route,
                &store,
                StoreUnavailable::Deny,
            )],
        )
    };
    let (_a, _) = start_proxy(config(one)).await;
    let (_b, _) = start_proxy(config(two)).await;
    let c = client();
    let mut states = Vec::new();
    for port in [one, two, one] {
        let reply = get(&c, port, "h.test", "/shared").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(header(&reply, "ratelimit-policy"), "\"fleet\";q=1;w=3600");
        states.push(header(&reply, "ratelimit").to_string());
    }
    assert_eq!(
        states,
        [
            "\"fleet\";r=2;t=3600",
            "\"fleet\";r=1;t=7200",
            "\"fleet\";r=0;t=10800"
        ]
    );
    for port in [two, one] {
        let limited = get(&c, port, "h.test", "/shared").await;
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "port {port}");
        assert_eq!(header(&limited, "retry-after"), "3600");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn keys_name_the_resource_and_rule_hash_long_values_and_expire() {
    let store = RedisServer::start(free_port());
    let backend = echo_backend("b").await;
    let port = free_port();
    let config = config_with_extensions(
        port,
        vec![limited("/keyed", "keyed")],
        backend.addr,
        vec![global(
            "keyed",
            1,
            RateLimitKey::Header("x-api-key".into()),
            &store,
            StoreUnavailable::Deny,
        )],
    );
    let (_proxy, _) = start_proxy(config).await;
    let c = client();
    let long = |c: char| c.to_string().repeat(100);
    let with_key =
        |value: String| request(port, "h.test", "/keyed").header("x-api-key", value.as_str());
    for value in ["alpha".to_string(), long('a'), long('b')] {
        assert_eq!(
            send(&c, with_key(value.clone())).await.status,
            StatusCode::OK
        );
        assert_eq!(
            send(&c, with_key(value)).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
    let keys = store.command(&["KEYS", "coxswain:rl:*"]);
    let keys: Vec<&str> = keys
        .lines()
        .filter(|l| l.starts_with("coxswain:rl:"))
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(
        keys.iter()
            .all(|k| k.starts_with("coxswain:rl:default/keyed:")),
        "{keys:?}"
    );
    assert_eq!(keys.iter().filter(|k| k.ends_with(":v:alpha")).count(), 1);
    let hashed: Vec<_> = keys.iter().filter(|k| k.contains(":d:")).collect();
    assert_eq!(hashed.len(), 2, "{keys:?}");
    assert!(hashed.iter().all(|k| k.len() < 120), "{hashed:?}");
    for k in keys {
        let ttl: i64 = store.command(&["PTTL", k]).trim().parse().unwrap();
        assert!(ttl > 3_000_000 && ttl <= 3_600_001, "{k}: {ttl}");
    }
}

#[tokio::test]
async fn a_verified_claim_keys_the_bucket_in_the_store() {
    let store = RedisServer::start(free_port());
    let backend = echo_backend("b").await;
    let port = free_port();
    let signer = Signer::new();
    let jwt = extension_key(ExtensionKind::JwtAuth, "jwt");
    let config = config_with_extensions(
        port,
        vec![rule_with(
            "/api",
            vec![
                Filter::Extension(key("per-user")),
                Filter::Extension(jwt.clone()),
            ],
        )],
        backend.addr,
        vec![
            global(
                "per-user",
                1,
                RateLimitKey::JwtClaim("sub".into()),
                &store,
                StoreUnavailable::Deny,
            ),
            Extension {
                key: jwt,
                spec: signer.auth(),
            },
        ],
    );
    let (_proxy, _) = start_proxy(config).await;
    let c = client();
    let as_user = |sub: &str| {
        let token = signer.token(json!({"sub": sub}));
        request(port, "h.test", "/api").header("authorization", format!("Bearer {token}"))
    };
    assert_eq!(send(&c, as_user("alice")).await.status, StatusCode::OK);
    assert_eq!(
        send(&c, as_user("alice")).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(send(&c, as_user("bob")).await.status, StatusCode::OK);
    let keys = store.command(&["KEYS", "coxswain:rl:*"]);
    assert!(
        keys.contains(":v:alice") && keys.contains(":v:bob"),
        "{keys}"
    );
}

#[tokio::test]
async fn a_store_gone_admits_or_refuses_as_configured_until_it_is_back() {
    let store_port = free_port();
    let mut store = RedisServer::start(store_port);
    let backend = echo_backend("b").await;
    let port = free_port();
    let config = config_with_extensions(
        port,
        vec![limited("/open", "open"), limited("/closed", "closed")],
        backend.addr,
        vec![
            global(
                "open",
                100,
                RateLimitKey::ClientIp,
                &store,
                StoreUnavailable::Allow,
            ),
            global(
                "closed",
                100,
                RateLimitKey::ClientIp,
                &store,
                StoreUnavailable::Deny,
            ),
        ],
    );
    let (proxy, _) = start_proxy(config).await;
    let c = client();
    for path in ["/open", "/closed"] {
        let reply = get(&c, port, "h.test", path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(header(&reply, "ratelimit").contains("r=99"), "{path}");
    }

    store.stop();
    let open = get(&c, port, "h.test", "/open").await;
    assert_eq!(open.status, StatusCode::OK);
    assert_eq!(header(&open, "ratelimit"), "", "not counted while away");
    let closed = get(&c, port, "h.test", "/closed").await;
    assert_eq!(closed.status, StatusCode::SERVICE_UNAVAILABLE);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    for decision in ["allowed", "denied"] {
        let series =
            format!("coxswain_proxy_ratelimit_store_errors_total{{decision=\"{decision}\"}} ");
        let n: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n >= 1, "{decision}: {n}\n{metrics}");
    }

    // A new server (empty: the script is sent again) on the same address.
    let _store = RedisServer::start(store_port);
    wait_until("the proxy to use the store again", || async {
        get(&c, port, "h.test", "/closed").await.status == StatusCode::OK
    })
    .await;
    let reply = get(&c, port, "h.test", "/open").await;
    assert_eq!(header(&reply, "ratelimit"), "\"open\";r=99;t=3600");
}
