//! JwtAuth on the request path, with tokens signed in the test (ES256,
//! ring): RFC 6750 challenges for missing and bad tokens, claims copied
//! to headers the client cannot forge, the token stripped unless
//! forwarded, 503 when there are no keys to check with, and gRPC statuses
//! for gRPC callers over h2c; remote key sets fetched from a loopback
//! server, refreshed, kept on failure and across reloads.

use crate::common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use bytes::Bytes;
use common::*;
use coxswain_ir::{
    ClaimHeader, Extension, ExtensionKind, ExtensionSpec, Filter, Jwk, JwkKey, JwksSource, JwtAuth,
    KeyBytes, RemoteJwks, TokenHeader,
};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

const ISSUER: &str = "https://issuer.test";

struct Signer(EcdsaKeyPair);

impl Signer {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Signer(
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap(),
        )
    }

    fn jwk(&self) -> Jwk {
        let point = self.0.public_key().as_ref();
        Jwk {
            kid: Some("k1".into()),
            alg: None,
            key: JwkKey::EcP256 {
                x: KeyBytes(point[1..33].to_vec()),
                y: KeyBytes(point[33..].to_vec()),
            },
        }
    }

    /// The public key as a JWK Set's JSON.
    fn jwks(&self) -> String {
        let point = self.0.public_key().as_ref();
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1",
                         "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..])}]})
        .to_string()
    }

    fn token(&self, claims: Value) -> String {
        let header = B64.encode(json!({"alg": "ES256", "kid": "k1"}).to_string());
        let signed = format!("{header}.{}", B64.encode(claims.to_string()));
        let sig = self
            .0
            .sign(&SystemRandom::new(), signed.as_bytes())
            .unwrap();
        format!("{signed}.{}", B64.encode(sig.as_ref()))
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn good_claims() -> Value {
    json!({"iss": ISSUER, "aud": ["api"], "sub": "alice", "admin": true, "level": 7,
           "exp": now() + 600, "groups": ["a", "b"]})
}

fn spec(signer: &Signer, forward: bool) -> ExtensionSpec {
    ExtensionSpec::JwtAuth(JwtAuth {
        issuer: ISSUER.into(),
        audiences: vec!["api".into()],
        jwks: JwksSource::Inline(vec![signer.jwk()]),
        from_headers: vec![
            TokenHeader {
                name: "authorization".into(),
                value_prefix: "Bearer ".into(),
            },
            TokenHeader {
                name: "x-token".into(),
                value_prefix: String::new(),
            },
        ],
        claim_to_headers: [
            "sub:x-user",
            "admin:x-admin",
            "level:x-level",
            "groups:x-groups",
        ]
        .iter()
        .map(|pair| {
            let (claim, header) = pair.split_once(':').unwrap();
            ClaimHeader {
                claim: claim.into(),
                header: header.into(),
            }
        })
        .collect(),
        forward_payload_header: Some("x-jwt-payload".into()),
        forward,
        clock_skew_secs: 0,
    })
}

fn key(name: &str) -> coxswain_ir::ExtensionKey {
    extension_key(ExtensionKind::JwtAuth, name)
}

/// Routes `/strip`, `/forward`, `/broken` (an unusable key set) and
/// `/remote` (keys at a closed port, never fetched).
async fn start(signer: &Signer) -> (EchoBackend, u16, coxswain_proxy::Proxy) {
    let backend = echo_backend("b").await;
    let port = free_port();
    let names = ["strip", "forward", "broken", "remote"];
    let routes = names
        .iter()
        .map(|n| rule_with(&format!("/{n}"), vec![Filter::Extension(key(n))]))
        .collect();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let remote = ExtensionSpec::JwtAuth(JwtAuth {
        jwks: JwksSource::Remote(RemoteJwks {
            uri: format!("http://127.0.0.1:{closed_port}/jwks.json"),
            refresh_interval_ms: 300_000,
        }),
        ..match spec(signer, false) {
            ExtensionSpec::JwtAuth(a) => a,
            _ => unreachable!(),
        }
    });
    let extensions = vec![
        Extension {
            key: key("strip"),
            spec: spec(signer, false),
        },
        Extension {
            key: key("forward"),
            spec: spec(signer, true),
        },
        Extension {
            key: key("broken"),
            spec: ExtensionSpec::Broken {
                status: 503,
                reason: "spec.jwks.inline: key set has no usable signature key".into(),
            },
        },
        Extension {
            key: key("remote"),
            spec: remote,
        },
    ];
    let (proxy, _) = start_proxy(config_with_extensions(
        port,
        routes,
        backend.addr,
        extensions,
    ))
    .await;
    (backend, port, proxy)
}

#[tokio::test]
async fn missing_and_bad_tokens_get_401_with_a_bearer_challenge() {
    let signer = Signer::new();
    let (backend, port, _proxy) = start(&signer).await;
    let c = client();
    let reply = get(&c, port, "h.test", "/strip").await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        reply.headers["www-authenticate"], "Bearer realm=\"https://issuer.test\"",
        "no error for a request without a token (RFC 6750 3.1)"
    );
    let other = Signer::new();
    let mut claims = good_claims();
    let expired = {
        claims["exp"] = json!(now() - 5);
        signer.token(claims.clone())
    };
    claims["exp"] = json!(now() + 600);
    claims["iss"] = json!("https://evil.test");
    let wrong_issuer = signer.token(claims.clone());
    claims["iss"] = json!(ISSUER);
    claims["aud"] = json!("web");
    let wrong_audience = signer.token(claims);
    let cases = [
        ("not-a-jwt".to_string(), "malformed token"),
        (other.token(good_claims()), "bad signature"),
        (expired, "token expired"),
        (wrong_issuer, "wrong issuer"),
        (wrong_audience, "wrong audience"),
    ];
    for (token, why) in cases {
        let reply = send(
            &c,
            request(port, "h.test", "/strip").header("authorization", format!("Bearer {token}")),
        )
        .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{why}");
        assert_eq!(
            reply.headers["www-authenticate"],
            format!(
                "Bearer realm=\"https://issuer.test\", error=\"invalid_token\", error_description=\"{why}\""
            ),
        );
    }
    // Two token headers: which would the upstream believe?
    let good = signer.token(good_claims());
    let reply = send(
        &c,
        request(port, "h.test", "/forward")
            .header("authorization", format!("Bearer {good}"))
            .header("authorization", "Bearer forged"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_good_token_reaches_the_backend_with_its_claims_and_without_itself() {
    let signer = Signer::new();
    let (backend, port, _proxy) = start(&signer).await;
    let c = client();
    let token = signer.token(good_claims());
    let reply = send(
        &c,
        request(port, "h.test", "/strip")
            .header("authorization", format!("bearer {token}"))
            // Forged by the client: replaced by the verified values.
            .header("x-user", "root")
            .header("x-admin", "true")
            .header("x-jwt-payload", "forged")
            .header("x-groups", "admins"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let headers = &reply.json()["headers"];
    assert_eq!(headers["x-user"], "alice");
    assert_eq!(headers["x-admin"], "true");
    assert_eq!(headers["x-level"], "7");
    assert!(
        headers.get("x-groups").is_none(),
        "an array claim is not copied, and the client's own is gone: {headers}"
    );
    assert_eq!(headers["x-jwt-payload"], token.split('.').nth(1).unwrap());
    assert!(headers.get("authorization").is_none(), "token stripped");

    // Forwarded, from the second configured header.
    let reply = send(
        &c,
        request(port, "h.test", "/forward").header("x-token", token.clone()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["headers"]["x-token"], token.as_str());
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn no_keys_to_check_with_fails_closed_with_503() {
    let signer = Signer::new();
    let (backend, port, _proxy) = start(&signer).await;
    let c = client();
    let token = signer.token(good_claims());
    for path in ["/broken", "/remote"] {
        let reply = send(
            &c,
            request(port, "h.test", path).header("authorization", format!("Bearer {token}")),
        )
        .await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn grpc_callers_get_unauthenticated_and_unavailable_over_h2c() {
    let signer = Signer::new();
    let (backend, port, _proxy) = start(&signer).await;
    let h2c: TestClient = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build(HttpConnector::new());
    let call = |path: &str, token: Option<&str>| {
        let req = request(port, "h.test", path)
            .method("POST")
            .version(http::Version::HTTP_2)
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        match token {
            Some(t) => req.header("authorization", format!("Bearer {t}")),
            None => req,
        }
    };
    let good = signer.token(good_claims());
    let cases = [
        ("/strip", None, "16"),
        ("/strip", Some("not-a-jwt"), "16"),
        ("/broken", Some(good.as_str()), "14"),
        ("/remote", Some(good.as_str()), "14"),
    ];
    for (path, token, code) in cases {
        let reply = send(&h2c, call(path, token)).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}: trailers-only");
        assert_eq!(reply.headers["content-type"], "application/grpc");
        assert_eq!(reply.headers["grpc-status"], code, "{path} {token:?}");
        assert!(reply.body.is_empty());
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
    let reply = send(&h2c, call("/strip", Some(&good))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["headers"]["x-user"], "alice");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
}

/// A loopback JWK Set server: answers every GET with the current status
/// and body, counting requests.
struct JwksServer {
    uri: String,
    answer: Arc<Mutex<(StatusCode, String)>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(status: StatusCode, body: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let answer = Arc::new(Mutex::new((status, body)));
        let hits = Arc::new(AtomicUsize::new(0));
        let (a, h) = (answer.clone(), hits.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (a, h) = (a.clone(), h.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |_req: Request<Incoming>| {
                        h.fetch_add(1, Ordering::SeqCst);
                        let (status, body) = a.lock().unwrap().clone();
                        async move {
                            let mut r = Response::new(Full::new(Bytes::from(body)));
                            *r.status_mut() = status;
                            Ok::<_, Infallible>(r)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        JwksServer { uri, answer, hits }
    }

    fn answer(&self, status: StatusCode, body: String) {
        *self.answer.lock().unwrap() = (status, body);
    }
}

#[tokio::test]
async fn remote_keys_are_fetched_refreshed_kept_on_failure_and_across_reloads() {
    let (first, second) = (Signer::new(), Signer::new());
    let server = JwksServer::start(StatusCode::INTERNAL_SERVER_ERROR, String::new()).await;
    let backend = echo_backend("b").await;
    let port = free_port();
    let remote = match spec(&first, false) {
        ExtensionSpec::JwtAuth(auth) => ExtensionSpec::JwtAuth(JwtAuth {
            jwks: JwksSource::Remote(RemoteJwks {
                uri: server.uri.clone(),
                refresh_interval_ms: 1_000,
            }),
            ..auth
        }),
        _ => unreachable!(),
    };
    let config = config_with_extensions(
        port,
        vec![rule_with("/", vec![Filter::Extension(key("remote"))])],
        backend.addr,
        vec![Extension {
            key: key("remote"),
            spec: remote,
        }],
    );
    let (proxy, _) = start_proxy(config.clone()).await;
    let c = client();
    let status_with = |signer: &Signer| {
        let token = signer.token(good_claims());
        let c = c.clone();
        async move {
            let req =
                request(port, "h.test", "/").header("authorization", format!("Bearer {token}"));
            send(&c, req).await.status
        }
    };
    // The server fails: no keys, closed.
    wait_until("a failed fetch", || async {
        server.hits.load(Ordering::SeqCst) >= 1
    })
    .await;
    assert_eq!(status_with(&first).await, StatusCode::SERVICE_UNAVAILABLE);
    // It recovers: the retry (after 1 s) brings the keys.
    server.answer(StatusCode::OK, first.jwks());
    wait_until("the keys", || async {
        status_with(&first).await == StatusCode::OK
    })
    .await;
    assert_eq!(status_with(&second).await, StatusCode::UNAUTHORIZED);

    // It fails again: the last good keys stay.
    server.answer(StatusCode::INTERNAL_SERVER_ERROR, String::new());
    let hits = server.hits.load(Ordering::SeqCst);
    wait_until("a failed refresh", || async {
        server.hits.load(Ordering::SeqCst) > hits
    })
    .await;
    assert_eq!(status_with(&first).await, StatusCode::OK);
    // An unchanged resource survives a reload with its keys.
    proxy.apply(Arc::new((*config).clone())).await;
    assert_eq!(status_with(&first).await, StatusCode::OK);

    // The issuer rotates its key: the refresh picks it up.
    server.answer(StatusCode::OK, second.jwks());
    wait_until("the rotated key", || async {
        status_with(&second).await == StatusCode::OK
    })
    .await;
    assert_eq!(status_with(&first).await, StatusCode::UNAUTHORIZED);

    // Edited: the new resource serves with its keys. (That the replaced
    // resource's task stops fetching is proven with paused time in
    // auth/jwt/remote.rs, dropping_the_keys_stops_the_task.)
    let mut edited = (*config).clone();
    edited.extensions[0].spec = spec(&second, false);
    proxy.apply(Arc::new(edited)).await;
    assert_eq!(status_with(&second).await, StatusCode::OK);
}
