//! HTTPS sockets: TLS termination, certificate choice by SNI, ALPN, the
//! https scheme in X-Forwarded-Proto and redirects, certificate swaps.

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::*;
use coxswain_ir::{Filter, PrivateKeyPem, Redirect, TlsCertificate, TlsTermination};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

struct TestCert {
    der: CertificateDer<'static>,
    ir: TlsCertificate,
}

fn self_signed(name: &str) -> TestCert {
    self_signed_for(&[name])
}

fn self_signed_for(names: &[&str]) -> TestCert {
    let name = names[0];
    let sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let generated = rcgen::generate_simple_self_signed(sans).unwrap();
    TestCert {
        der: generated.cert.der().clone(),
        ir: TlsCertificate {
            source: format!("ns/{name}"),
            cert_chain_pem: generated.cert.pem(),
            key_pem: PrivateKeyPem(generated.signing_key.serialize_pem().into()),
        },
    }
}

fn https_socket(
    port: u16,
    listeners: Vec<(Option<&str>, &TestCert, Vec<coxswain_ir::Route>)>,
) -> coxswain_ir::Socket {
    socket(
        port,
        listeners
            .into_iter()
            .map(|(hostname, cert, routes)| {
                let mut l = gateway_listener(hostname.unwrap_or("https"), hostname, routes);
                l.tls = Some(TlsTermination {
                    certificates: vec![cert.ir.clone()],
                    client_validation: None,
                });
                l
            })
            .collect(),
    )
}

/// Connects with SNI `sni`, trusting `roots`, offering `alpn`.
async fn connect(
    port: u16,
    sni: &str,
    roots: &[&TestCert],
    alpn: &[&[u8]],
) -> TlsStream<TcpStream> {
    try_connect(port, sni, roots, alpn).await.unwrap()
}

async fn try_connect(
    port: u16,
    sni: &str,
    roots: &[&TestCert],
    alpn: &[&[u8]],
) -> std::io::Result<TlsStream<TcpStream>> {
    let mut store = rustls::RootCertStore::empty();
    for r in roots {
        store.add(r.der.clone()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let name = ServerName::try_from(sni.to_string()).unwrap();
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

fn peer_cert(stream: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    stream.get_ref().1.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
}

async fn http1_get(
    stream: TlsStream<TcpStream>,
    host: &str,
    path: &str,
) -> (StatusCode, http::HeaderMap, serde_json::Value) {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    (parts.status, parts.headers, json)
}

#[tokio::test]
async fn terminates_tls_and_picks_certificate_by_sni() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let exact = self_signed("a.test");
    let wildcard = self_signed("w.wild.test");
    let fallback = self_signed("default.test");
    let cfg = config(
        vec![https_socket(
            port,
            vec![
                (
                    Some("a.test"),
                    &exact,
                    vec![route("a", &[], vec![prefix("/")], vec![to("echo", 1)])],
                ),
                (
                    Some("*.wild.test"),
                    &wildcard,
                    vec![route("w", &[], vec![prefix("/")], vec![to("echo", 1)])],
                ),
                (
                    None,
                    &fallback,
                    vec![route("d", &[], vec![prefix("/")], vec![to("echo", 1)])],
                ),
            ],
        )],
        vec![cluster("echo", &[backend.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let all = [&exact, &wildcard, &fallback];

    let stream = connect(port, "a.test", &all, &[b"http/1.1"]).await;
    assert_eq!(peer_cert(&stream), exact.der);
    let (status, _, seen) = http1_get(stream, "a.test", "/x").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seen["headers"]["x-route"], "a");
    assert_eq!(seen["headers"]["x-forwarded-proto"], "https");

    let stream = connect(port, "w.wild.test", &all, &[b"http/1.1"]).await;
    assert_eq!(peer_cert(&stream), wildcard.der);

    let stream = connect(port, "default.test", &all, &[b"http/1.1"]).await;
    assert_eq!(peer_cert(&stream), fallback.der);
    let (_, _, seen) = http1_get(stream, "default.test", "/").await;
    assert_eq!(seen["headers"]["x-route"], "d");
}

#[tokio::test]
async fn alpn_h2_serves_http2_over_tls() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let cert = self_signed("h2.test");
    let routes = vec![route("h", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let cfg = config(
        vec![https_socket(port, vec![(None, &cert, routes)])],
        vec![cluster("echo", &[backend.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let stream = connect(port, "h2.test", &[&cert], &[b"h2", b"http/1.1"]).await;
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = Request::get("https://h2.test/p")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let seen: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(seen["headers"]["x-route"], "h");
    assert_eq!(seen["headers"]["x-forwarded-proto"], "https");
}

#[tokio::test]
async fn redirect_without_scheme_keeps_https_and_listener_port() {
    let port = free_port();
    let cert = self_signed("r.test");
    let mut r = route("r", &[], vec![prefix("/")], vec![]);
    r.filters = vec![Filter::Redirect(Redirect {
        scheme: None,
        hostname: Some("example.org".into()),
        port: None,
        path: None,
        status_code: 302,
    })];
    let cfg = config(
        vec![https_socket(port, vec![(None, &cert, vec![r])])],
        vec![],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let stream = connect(port, "r.test", &[&cert], &[]).await;
    let (status, headers, _) = http1_get(stream, "r.test", "/a?b=1").await;
    assert_eq!(status, StatusCode::FOUND);
    assert_eq!(
        headers["location"],
        format!("https://example.org:{port}/a?b=1")
    );
}

#[tokio::test]
async fn certificate_swap_applies_to_new_connections() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let first = self_signed("s.test");
    let second = self_signed("s.test");
    let make = |cert: &TestCert| {
        let routes = vec![route("s", &[], vec![prefix("/")], vec![to("echo", 1)])];
        config(
            vec![https_socket(port, vec![(None, cert, routes)])],
            vec![cluster("echo", &[backend.addr])],
        )
    };
    let (proxy, _) = start_proxy(make(&first)).await;
    let stream = connect(port, "s.test", &[&first, &second], &[]).await;
    assert_eq!(peer_cert(&stream), first.der);
    proxy.apply(make(&second)).await;
    let stream = connect(port, "s.test", &[&first, &second], &[]).await;
    assert_eq!(peer_cert(&stream), second.der);
}

#[tokio::test]
async fn plain_http_on_an_https_socket_is_not_served() {
    let port = free_port();
    let cert = self_signed("p.test");
    let routes = vec![route("p", &[], vec![prefix("/")], vec![])];
    let cfg = config(
        vec![https_socket(port, vec![(None, &cert, routes)])],
        vec![],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("/")
        .header("host", "p.test")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(sender.send_request(req).await.is_err());
}

/// A name no listener owns is not served with another listener's
/// certificate: the connection is closed before the handshake (no alert),
/// as the spec's rejection tests expect.
#[tokio::test]
async fn unknown_sni_is_closed_without_falling_back() {
    let port = free_port();
    let exact = self_signed("a.test");
    let wildcard = self_signed("w.wild.test");
    let routes = || vec![route("r", &[], vec![prefix("/")], vec![])];
    let cfg = config(
        vec![https_socket(
            port,
            vec![
                (Some("a.test"), &exact, routes()),
                (Some("*.wild.test"), &wildcard, routes()),
            ],
        )],
        vec![],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let all = [&exact, &wildcard];
    for sni in ["other.test", "wild.test", "a.test.evil"] {
        let err = try_connect(port, sni, &all, &[]).await.unwrap_err();
        assert!(
            matches!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ),
            "{sni}: {err:?}"
        );
    }
    assert!(try_connect(port, "w.wild.test", &all, &[]).await.is_ok());
}

/// The listener TLS picked by SNI must also own the request's Host;
/// otherwise the request is misdirected (421), e.g. an HTTP/2 connection
/// reused for a host whose listener has another certificate or policy.
#[tokio::test]
async fn misdirected_requests_get_421() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let cert = self_signed_for(&[
        "example.test",
        "second.test",
        "unknown.test",
        "third.wild.test",
        "fourth.wild.test",
    ]);
    let only = |host: &str| vec![route(host, &[], vec![prefix("/")], vec![to("echo", 1)])];
    let mut catch_all_route = route(
        "any",
        &["example.test"],
        vec![prefix("/")],
        vec![to("echo", 1)],
    );
    catch_all_route.id.name = "any".into();
    let cfg = config(
        vec![https_socket(
            port,
            vec![
                (Some("second.test"), &cert, only("second")),
                (Some("fourth.wild.test"), &cert, only("fourth")),
                (Some("*.wild.test"), &cert, only("wild")),
                (None, &cert, vec![catch_all_route]),
            ],
        )],
        vec![cluster("echo", &[backend.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let cases = [
        ("example.test", "example.test", 200),
        ("example.test", "second.test", 421),
        ("example.test", "unknown.test", 404),
        ("second.test", "second.test", 200),
        ("second.test", "example.test", 421),
        ("second.test", "unknown.test", 421),
        ("third.wild.test", "fifth.wild.test", 200),
        ("third.wild.test", "fourth.wild.test", 421),
        ("fourth.wild.test", "fourth.wild.test", 200),
        ("fourth.wild.test", "fifth.wild.test", 421),
        ("unknown.test", "example.test", 200),
    ];
    for (sni, host, want) in cases {
        let stream = connect(port, sni, &[&cert], &[]).await;
        let (status, _, _) = http1_get(stream, host, "/").await;
        assert_eq!(status.as_u16(), want, "SNI {sni}, Host {host}");
    }
}
