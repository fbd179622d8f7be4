//! PROXY protocol on real sockets: the header's source is the client that
//! IpAccessControl judges and X-Forwarded-For names, over plain HTTP, TLS
//! and TCP; a socket requiring the header closes connections without one.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use coxswain_ir::{
    Config, Extension, ExtensionKind, ExtensionSpec, Filter, IpAccess, L4Route, ProxyProtocol,
    RouteId, RouteKind, Serve, TlsTermination,
};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

const REQUIRED: ProxyProtocol = ProxyProtocol { optional: false };
const OPTIONAL: ProxyProtocol = ProxyProtocol { optional: true };

fn v2_header(src: [u8; 4], sport: u16) -> Vec<u8> {
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(&[0x21, 0x11, 0, 12]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&[127, 0, 0, 1]);
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&80u16.to_be_bytes());
    out
}

fn v1_header(src: &str) -> Vec<u8> {
    format!("PROXY TCP4 {src} 127.0.0.1 40000 80\r\n").into_bytes()
}

fn deny_documentation_net() -> Extension {
    let parse = |v: &[&str]| v.iter().map(|s| s.parse().unwrap()).collect();
    Extension {
        key: extension_key(ExtensionKind::IpAccessControl, "deny"),
        spec: ExtensionSpec::IpAccess(IpAccess {
            allow: parse(&["0.0.0.0/0", "::/0"]),
            deny: parse(&["203.0.113.0/24"]),
            ..IpAccess::default()
        }),
    }
}

/// `/guarded` behind an IpAccessControl denying 203.0.113.0/24, `/open`
/// without it, served on `port` with `proxy_protocol` and on `plain`
/// (the same listener's routes, no PROXY protocol).
fn config(
    port: u16,
    plain: u16,
    proxy_protocol: ProxyProtocol,
    backend: SocketAddr,
) -> Arc<Config> {
    let deny = extension_key(ExtensionKind::IpAccessControl, "deny");
    let routes = vec![
        rule_with("/guarded", vec![Filter::Extension(deny)]),
        rule_with("/open", vec![]),
    ];
    let mut config =
        (*config_with_extensions(port, routes, backend, vec![deny_documentation_net()])).clone();
    let mut other = config.sockets[0].clone();
    other.port = plain;
    config.sockets[0].proxy_protocol = Some(proxy_protocol);
    config.sockets.push(other);
    Arc::new(config)
}

/// Writes `parts` (one write each) then a GET for `path`, and reads the
/// answer to EOF: `None` when the connection closed without one.
async fn raw_get(port: u16, parts: &[&[u8]], path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    s.set_nodelay(true).unwrap();
    for part in parts {
        s.write_all(part).await.unwrap();
        s.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    let request = format!("GET {path} HTTP/1.1\r\nhost: h.test\r\nconnection: close\r\n\r\n");
    // The proxy may already have closed (header missing): a failed write
    // is then the answer.
    if s.write_all(request.as_bytes()).await.is_err() {
        return None;
    }
    read_answer(s).await
}

async fn read_answer<S: AsyncRead + Unpin>(mut s: S) -> Option<(u16, String)> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "no answer and no close within 10s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12)?.parse().ok()?;
    Some((status, text))
}

#[tokio::test]
async fn a_v2_source_is_the_client_ip_access_judges_and_forwarded_for_names() {
    let backend = echo_backend("b").await;
    let (port, plain) = (free_port(), free_port());
    let (proxy, _) = start_proxy(config(port, plain, REQUIRED, backend.addr)).await;

    let denied = v2_header([203, 0, 113, 7], 40000);
    let (status, _) = raw_get(port, &[&denied], "/guarded").await.unwrap();
    assert_eq!(status, 403, "203.0.113.7 is denied");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);

    // The same client without the PROXY-enabled socket is itself.
    let (status, _) = raw_get(plain, &[], "/guarded").await.unwrap();
    assert_eq!(status, 200);

    let allowed = v2_header([198, 51, 100, 9], 40001);
    let (status, body) = raw_get(port, &[&allowed], "/open").await.unwrap();
    assert_eq!(status, 200);
    assert!(
        body.contains(r#""x-forwarded-for":"198.51.100.9""#),
        "X-Forwarded-For names the PROXY source: {body}"
    );
    drop(proxy);
}

#[tokio::test]
async fn a_v1_header_and_one_split_across_writes() {
    let backend = echo_backend("b").await;
    let (port, plain) = (free_port(), free_port());
    let (_proxy, _) = start_proxy(config(port, plain, REQUIRED, backend.addr)).await;

    let v1 = v1_header("203.0.113.8");
    let (status, _) = raw_get(port, &[&v1], "/guarded").await.unwrap();
    assert_eq!(status, 403);

    let v1 = v1_header("192.0.2.44");
    let (a, b) = v1.split_at(9);
    let (status, body) = raw_get(port, &[a, b], "/open").await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("192.0.2.44"), "{body}");

    let v2 = v2_header([203, 0, 113, 9], 1);
    let (a, rest) = v2.split_at(5);
    let (b, c) = rest.split_at(12);
    let (status, _) = raw_get(port, &[a, b, c], "/guarded").await.unwrap();
    assert_eq!(status, 403);
}

#[tokio::test]
async fn without_a_header_required_closes_and_optional_serves_the_peer() {
    let backend = echo_backend("b").await;
    let (port, plain) = (free_port(), free_port());
    let (proxy, _) = start_proxy(config(port, plain, REQUIRED, backend.addr)).await;
    assert_eq!(raw_get(port, &[], "/open").await, None);
    let malformed = b"PROXY TCP4 nonsense\r\n";
    assert_eq!(raw_get(port, &[malformed], "/open").await, None);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains(r#"coxswain_proxy_proxy_protocol_refused_total{reason="missing"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"coxswain_proxy_proxy_protocol_refused_total{reason="malformed"} 1"#),
        "{metrics}"
    );
    drop(proxy);

    let (port, plain) = (free_port(), free_port());
    let (_proxy, _) = start_proxy(config(port, plain, OPTIONAL, backend.addr)).await;
    let (status, body) = raw_get(port, &[], "/open").await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("127.0.0.1"), "the socket peer: {body}");
    let header = v2_header([203, 0, 113, 7], 2);
    let (status, _) = raw_get(port, &[&header], "/guarded").await.unwrap();
    assert_eq!(status, 403, "a header is still honoured when optional");
}

#[tokio::test]
async fn tls_after_the_header_on_an_https_listener() {
    let backend = echo_backend("b").await;
    let (port, plain) = (free_port(), free_port());
    let generated = rcgen::generate_simple_self_signed(vec!["a.test".to_string()]).unwrap();
    let mut cfg = (*config(port, plain, REQUIRED, backend.addr)).clone();
    for socket in &mut cfg.sockets {
        socket.listeners[0].tls = Some(TlsTermination {
            certificates: vec![coxswain_ir::TlsCertificate {
                source: "ns/a".into(),
                cert_chain_pem: generated.cert.pem(),
                key_pem: coxswain_ir::PrivateKeyPem(generated.signing_key.serialize_pem().into()),
            }],
            client_validation: None,
        });
    }
    let (_proxy, _) = start_proxy(Arc::new(cfg)).await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(generated.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = TlsConnector::from(Arc::new(tls));

    let get = |port: u16, header: Option<Vec<u8>>, path: &'static str| {
        let connector = connector.clone();
        async move {
            let mut tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
            if let Some(h) = header {
                tcp.write_all(&h).await.unwrap();
            }
            let name = ServerName::try_from("a.test").unwrap();
            let stream = connector.connect(name, tcp).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            tokio::spawn(conn);
            let req = Request::get(path)
                .header("host", "a.test")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let response = sender.send_request(req).await.unwrap();
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let (status, _) = get(port, Some(v2_header([203, 0, 113, 7], 9)), "/guarded").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = get(plain, None, "/guarded").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(port, Some(v1_header("198.51.100.3")), "/open").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("198.51.100.3"), "{body}");
    assert!(body.contains(r#""x-forwarded-proto":"https""#), "{body}");
}

/// A TCP backend answering with everything it read once the client
/// half-closed.
async fn tcp_echo() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut got = Vec::new();
                if stream.read_to_end(&mut got).await.is_ok() {
                    let _ = stream.write_all(&got).await;
                }
            });
        }
    });
    (addr, connections)
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, payload: &[u8]) -> Vec<u8> {
    // A socket that refuses may close first: then only the read matters.
    let _ = s.write_all(payload).await;
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "no close within 10s");
    out
}

#[tokio::test]
async fn a_tcp_listener_consumes_the_header_and_relays_the_rest() {
    let (backend, connections) = tcp_echo().await;
    let port = free_port();
    let route = Arc::new(L4Route {
        id: RouteId {
            kind: RouteKind::Tcp,
            namespace: "ns".into(),
            name: "db".into(),
            rule_index: 0,
            rule_name: None,
        },
        hostnames: vec![],
        backends: vec![to("pg", 1)],
    });
    let mut listener = gateway_listener("tcp", None, vec![]);
    listener.serve = Serve::Tcp(vec![route]);
    let mut s = socket(port, vec![listener]);
    s.proxy_protocol = Some(REQUIRED);
    let (_proxy, _) = start_proxy(common::config(vec![s], vec![cluster("pg", &[backend])])).await;

    let tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let mut payload = v2_header([203, 0, 113, 7], 5);
    payload.extend_from_slice(b"hello backend");
    assert_eq!(exchange(tcp, &payload).await, b"hello backend");

    // No header: closed before any backend is dialled.
    let tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    assert_eq!(exchange(tcp, b"hello").await, b"");
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn rate_limit_client_ip_buckets_by_the_proxy_source() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let key = extension_key(ExtensionKind::RateLimit, "per-client");
    let limit = Extension {
        key: key.clone(),
        spec: ExtensionSpec::RateLimit(coxswain_ir::RateLimit {
            name: "per-client".into(),
            requests: 1,
            period_ms: 3_600_000,
            burst: 1,
            key: coxswain_ir::RateLimitKey::ClientIp,
            global: None,
        }),
    };
    let routes = vec![rule_with("/limited", vec![Filter::Extension(key)])];
    let mut cfg = (*config_with_extensions(port, routes, backend.addr, vec![limit])).clone();
    cfg.sockets[0].proxy_protocol = Some(REQUIRED);
    let (_proxy, _) = start_proxy(Arc::new(cfg)).await;
    // Every connection comes from 127.0.0.1; the buckets follow the header.
    let a = v2_header([198, 51, 100, 1], 1);
    let b = v2_header([198, 51, 100, 2], 1);
    assert_eq!(raw_get(port, &[&a], "/limited").await.unwrap().0, 200);
    assert_eq!(raw_get(port, &[&a], "/limited").await.unwrap().0, 429);
    assert_eq!(raw_get(port, &[&b], "/limited").await.unwrap().0, 200);
}
