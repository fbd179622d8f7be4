//! CoxswainExternalAuth on the request path, against the real
//! tools/ext-authz service (go-control-plane's Envoy Authorization
//! service and an HTTP forward-auth endpoint, deciding by `x-test-auth`):
//! allow with headers copied, denials relayed (403 with its body, 401 with
//! its challenge, a redirect), a slow or unreachable service failing
//! closed or open, no endpoints always 503, gRPC statuses for gRPC
//! callers, and two checks on one rule that must both pass.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{
    Cluster, Extension, ExtensionKind, ExtensionSpec, ExternalAuth, ExternalAuthProtocol, Filter,
    RouteKind, UpstreamProtocol,
};
use http::StatusCode;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The ext-authz service, stopped when dropped.
struct AuthService {
    child: Child,
    http: SocketAddr,
    grpc: SocketAddr,
}

impl Drop for AuthService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn auth_service() -> AuthService {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/ext-authz/build.sh");
    let built = Command::new("bash").arg(&script).output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let binary = String::from_utf8(built.stdout).unwrap().trim().to_string();
    let mut child = Command::new(binary)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // It prints both addresses once it listens on both.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut addr = |what: &str| -> SocketAddr {
        let line = lines.next().unwrap().unwrap();
        line.strip_prefix(what).unwrap().trim().parse().unwrap()
    };
    let http = addr("http");
    let grpc = addr("grpc");
    AuthService { child, http, grpc }
}

fn auth(protocol: ExternalAuthProtocol, cluster: &str) -> ExternalAuth {
    ExternalAuth {
        protocol,
        cluster: cluster.into(),
        timeout_ms: 1000,
        fail_closed: true,
        request_headers: Vec::new(),
        response_headers: [
            "x-auth-user",
            "x-auth-method",
            "x-auth-host",
            "x-auth-path",
            "x-auth-body",
            "x-auth-cookie",
            "x-auth-source",
        ]
        .map(String::from)
        .to_vec(),
        body_max_bytes: None,
    }
}

fn ext(name: &str, auth: ExternalAuth) -> Extension {
    Extension {
        key: extension_key(ExtensionKind::ExternalAuth, name),
        spec: ExtensionSpec::ExternalAuth(auth),
    }
}

fn check(name: &str) -> Filter {
    Filter::Extension(extension_key(ExtensionKind::ExternalAuth, name))
}

fn h2c_cluster(name: &str, endpoints: &[SocketAddr]) -> Cluster {
    Cluster {
        protocol: UpstreamProtocol::H2c,
        ..cluster(name, endpoints)
    }
}

/// A proxy with one rule per entry (`/<name>` using the resource `name`)
/// and the auth clusters `http` (forward-auth), `grpc` (Check over h2c),
/// `down` (nothing listens) and `empty` (no endpoints).
async fn start(
    service: &AuthService,
    resources: Vec<(&str, ExternalAuth)>,
    rules: Vec<(&str, Vec<Filter>)>,
) -> (EchoBackend, u16, coxswain_proxy::Proxy) {
    start_kind(service, resources, rules, RouteKind::Http).await
}

/// [`start`], the rules of a route of `kind` (a GRPCRoute's speak h2c to
/// the echo backend).
async fn start_kind(
    service: &AuthService,
    resources: Vec<(&str, ExternalAuth)>,
    rules: Vec<(&str, Vec<Filter>)>,
    kind: RouteKind,
) -> (EchoBackend, u16, coxswain_proxy::Proxy) {
    let backend = echo_backend("echo").await;
    let port = free_port();
    let routes = rules
        .into_iter()
        .map(|(path, filters)| {
            let mut rule = rule_with(path, filters);
            rule.id.kind = kind;
            rule
        })
        .collect();
    let extensions = resources.into_iter().map(|(n, a)| ext(n, a)).collect();
    let mut config = (*config_with_extensions(port, routes, backend.addr, extensions)).clone();
    if kind == RouteKind::Grpc {
        config.clusters = vec![std::sync::Arc::new(h2c_cluster("echo", &[backend.addr]))];
    }
    let down: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    config.clusters.extend(
        [
            cluster("http", &[service.http]),
            h2c_cluster("grpc", &[service.grpc]),
            cluster("down", &[down]),
            cluster("empty", &[]),
        ]
        .map(std::sync::Arc::new),
    );
    config.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    let (proxy, _) = start_proxy(std::sync::Arc::new(config)).await;
    (backend, port, proxy)
}

async fn call(port: u16, path: &str, decision: &str) -> Reply {
    send(
        &client(),
        request(port, "app.test", path)
            .header("x-test-auth", decision)
            .header("x-auth-user", "forged")
            .header("cookie", "session=1"),
    )
    .await
}

#[tokio::test]
async fn forward_auth_allows_with_copied_headers_and_relays_denials() {
    let service = auth_service();
    let http = auth(ExternalAuthProtocol::Http, "http");
    let (backend, port, _proxy) = start(
        &service,
        vec![("fwd", http)],
        vec![("/fwd", vec![check("fwd")])],
    )
    .await;

    let reply = call(port, "/fwd/a?b=c", "allow").await;
    assert_eq!(reply.status, StatusCode::OK);
    let seen = &reply.json()["headers"];
    assert_eq!(seen["x-auth-user"], "alice", "the client's own replaced");
    assert_eq!(seen["x-auth-method"], "GET");
    assert_eq!(seen["x-auth-host"], "app.test");
    assert_eq!(seen["x-auth-path"], "/fwd/a?b=c");
    assert_eq!(seen["x-auth-cookie"], "session=1", "every header is sent");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);

    let denied = call(port, "/fwd", "deny").await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(denied.text(), "denied by ext-authz\n");
    assert_eq!(denied.headers["x-deny-reason"], "test");

    let unauth = call(port, "/fwd", "unauth").await;
    assert_eq!(unauth.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unauth.headers["www-authenticate"], "Bearer realm=\"test\"");

    let redirect = call(port, "/fwd", "redirect").await;
    assert_eq!(redirect.status, StatusCode::FOUND);
    assert_eq!(redirect.headers["location"], "/login");
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        1,
        "no denial went upstream"
    );
}

#[tokio::test]
async fn only_the_listed_request_headers_are_sent() {
    let service = auth_service();
    let mut http = auth(ExternalAuthProtocol::Http, "http");
    http.request_headers = vec!["x-test-auth".into()];
    let (_backend, port, _proxy) = start(
        &service,
        vec![("fwd", http)],
        vec![("/fwd", vec![check("fwd")])],
    )
    .await;
    let reply = call(port, "/fwd", "allow").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["headers"]["x-auth-cookie"], "");
}

#[tokio::test]
async fn a_slow_or_unreachable_service_fails_closed_or_open_but_no_endpoints_always_denies() {
    let service = auth_service();
    let quick = |cluster: &str, fail_closed: bool| ExternalAuth {
        timeout_ms: 150,
        fail_closed,
        ..auth(ExternalAuthProtocol::Http, cluster)
    };
    let (backend, port, _proxy) = start(
        &service,
        vec![
            ("slow-closed", quick("http", true)),
            ("slow-open", quick("http", false)),
            ("down-closed", quick("down", true)),
            ("down-open", quick("down", false)),
            ("empty-open", quick("empty", false)),
            ("missing-open", quick("no-such-cluster", false)),
        ],
        vec![
            ("/slow-closed", vec![check("slow-closed")]),
            ("/slow-open", vec![check("slow-open")]),
            ("/down-closed", vec![check("down-closed")]),
            ("/down-open", vec![check("down-open")]),
            ("/empty-open", vec![check("empty-open")]),
            ("/missing-open", vec![check("missing-open")]),
        ],
    )
    .await;
    let started = std::time::Instant::now();
    assert_eq!(
        call(port, "/slow-closed", "slow").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "the timeout cut the 2 s check short"
    );
    let open = call(port, "/slow-open", "slow").await;
    assert_eq!(open.status, StatusCode::OK);
    assert!(
        open.json()["headers"].get("x-auth-user").is_none(),
        "failing open, the client's own claim is still removed"
    );
    assert_eq!(
        call(port, "/down-closed", "allow").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        call(port, "/down-open", "allow").await.status,
        StatusCode::OK
    );
    assert_eq!(
        call(port, "/empty-open", "allow").await.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "no endpoints: closed whatever failClosed says"
    );
    assert_eq!(
        call(port, "/missing-open", "allow").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn two_checks_on_a_rule_must_both_allow_and_the_first_denial_answers() {
    let service = auth_service();
    // Told `redirect`, forward-auth answers 302 and the gRPC Check 403:
    // which answer comes back says which check asked first.
    let (backend, port, _proxy) = start(
        &service,
        vec![
            ("gateway", auth(ExternalAuthProtocol::Http, "http")),
            ("route", auth(ExternalAuthProtocol::Grpc, "grpc")),
        ],
        vec![
            // What a Gateway policy makes of a rule with its own check.
            ("/both", vec![check("gateway"), check("route")]),
            ("/reversed", vec![check("route"), check("gateway")]),
        ],
    )
    .await;
    let reply = call(port, "/both", "allow").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["headers"]["x-auth-user"], "alice");
    assert_eq!(
        call(port, "/both", "redirect").await.status,
        StatusCode::FOUND
    );
    assert_eq!(
        call(port, "/reversed", "redirect").await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn grpcroute_callers_get_grpc_statuses_for_denials() {
    let service = auth_service();
    let (backend, port, _proxy) = start_kind(
        &service,
        vec![
            ("fwd", auth(ExternalAuthProtocol::Http, "http")),
            ("empty", auth(ExternalAuthProtocol::Http, "empty")),
        ],
        vec![
            ("/fwd", vec![check("fwd")]),
            ("/empty", vec![check("empty")]),
        ],
        RouteKind::Grpc,
    )
    .await;
    let h2c: TestClient = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build(HttpConnector::new());
    let grpc = |path: &str, decision: &str| {
        request(port, "app.test", path)
            .method("POST")
            .version(http::Version::HTTP_2)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("x-test-auth", decision.to_string())
    };
    for (path, decision, code) in [
        ("/fwd", "unauth", "16"),
        ("/fwd", "deny", "7"),
        ("/empty", "allow", "14"),
    ] {
        let reply = send(&h2c, grpc(path, decision)).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{path} {decision}: trailers-only"
        );
        assert_eq!(reply.headers["content-type"], "application/grpc");
        assert_eq!(reply.headers["grpc-status"], code, "{path} {decision}");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
    let allowed = send(&h2c, grpc("/fwd", "allow")).await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_eq!(allowed.json()["headers"]["x-auth-user"], "alice");
    assert_eq!(allowed.json()["version"], "HTTP/2.0", "h2c to the backend");
}

#[tokio::test]
async fn grpc_check_allows_with_ok_headers_and_denies_with_the_denied_response() {
    let service = auth_service();
    let slow = ExternalAuth {
        timeout_ms: 150,
        ..auth(ExternalAuthProtocol::Grpc, "grpc")
    };
    let (backend, port, _proxy) = start(
        &service,
        vec![
            ("check", auth(ExternalAuthProtocol::Grpc, "grpc")),
            ("slow", slow),
        ],
        vec![
            ("/check", vec![check("check")]),
            ("/slow", vec![check("slow")]),
        ],
    )
    .await;
    let reply = call(port, "/check/a?b=c", "allow").await;
    assert_eq!(reply.status, StatusCode::OK);
    let seen = &reply.json()["headers"];
    assert_eq!(seen["x-auth-user"], "alice", "the client's own replaced");
    assert_eq!(seen["x-auth-method"], "GET");
    assert_eq!(seen["x-auth-host"], "app.test");
    assert_eq!(seen["x-auth-path"], "/check/a?b=c");
    assert_eq!(seen["x-auth-cookie"], "session=1");
    assert_eq!(seen["x-auth-source"], "127.0.0.1");

    let denied = call(port, "/check", "deny").await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(denied.text(), "denied by ext-authz\n");
    assert_eq!(denied.headers["x-deny-reason"], "test");
    let unauth = call(port, "/check", "unauth").await;
    assert_eq!(unauth.status, StatusCode::UNAUTHORIZED);
    assert_eq!(unauth.headers["www-authenticate"], "Bearer realm=\"test\"");
    assert_eq!(
        call(port, "/check", "bare-deny").await.status,
        StatusCode::FORBIDDEN,
        "a denial without an HTTP response is a 403"
    );
    assert_eq!(
        call(port, "/slow", "slow").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
}

async fn post(port: u16, path: &str, decision: &str, body: &'static str) -> Reply {
    let req = request(port, "app.test", path)
        .method("POST")
        .header("x-test-auth", decision)
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            body.as_bytes(),
        )))
        .unwrap();
    let response = client().request(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

#[tokio::test]
async fn a_forwarded_body_reaches_the_check_and_the_upstream_and_past_the_cap_is_413() {
    let service = auth_service();
    let with_body = |protocol, cluster| ExternalAuth {
        body_max_bytes: Some(8),
        ..auth(protocol, cluster)
    };
    let (backend, port, _proxy) = start(
        &service,
        vec![
            ("fwd", with_body(ExternalAuthProtocol::Http, "http")),
            ("grpc", with_body(ExternalAuthProtocol::Grpc, "grpc")),
            ("plain", auth(ExternalAuthProtocol::Http, "http")),
        ],
        vec![
            ("/seen-fwd", vec![check("fwd")]),
            ("/seen-grpc", vec![check("grpc")]),
            // The echo backend streams /body requests' bodies back.
            ("/body", vec![check("fwd")]),
            ("/nobody", vec![check("plain")]),
        ],
    )
    .await;
    for path in ["/seen-fwd", "/seen-grpc"] {
        let reply = post(port, path, "allow", "hello").await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.json()["headers"]["x-auth-body"], "hello", "{path}");
        assert_eq!(reply.json()["headers"]["content-length"], "5", "{path}");
    }
    let echoed = post(port, "/body", "allow", "12345678").await;
    assert_eq!(echoed.status, StatusCode::OK);
    assert_eq!(echoed.text(), "12345678", "the upstream got the bytes read");
    let hits = backend.hits.load(Ordering::SeqCst);
    for path in ["/seen-fwd", "/seen-grpc", "/body"] {
        let reply = post(port, path, "allow", "123456789").await;
        assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        hits,
        "none went upstream"
    );
    // Not forwarded (the default): the check gets no body, the upstream
    // gets it all.
    let reply = post(port, "/nobody", "allow", "a body longer than eight").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["headers"]["x-auth-body"], "");
}
