//! TLS to backends (BackendTLSPolicy): the proxy verifies the backend's
//! chain against the policy's CAs and its name against the hostname or the
//! listed subjectAltNames, sends the hostname as SNI, presents the
//! Gateway's client certificate, and never falls back to plain text.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use common::pki::{Ca, Issued};
use common::*;
use coxswain_ir::{
    BackendTls, BackendTrust, CaBundle, Config, SubjectAltName, TlsCertificate, UpstreamTls,
};
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpListener;

/// A TLS backend answering with what it saw: SNI, the client
/// certificate's presence, Host and path.
struct TlsBackend {
    addr: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

async fn tls_backend(cert: &Issued, client_ca: Option<&Ca>) -> TlsBackend {
    tls_backend_alpn(cert, client_ca, &[]).await
}

/// A TLS backend that also offers `alpn` (e.g. `h2`).
async fn tls_backend_alpn(cert: &Issued, client_ca: Option<&Ca>, alpn: &[&[u8]]) -> TlsBackend {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(vec![cert.der.clone()], cert.key_der.clone_key())
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (counted, served) = (handshakes.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, counted, served) = (acceptor.clone(), counted.clone(), served.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let (_, session) = tls.get_ref();
                let sni = session.server_name().unwrap_or("").to_string();
                let client_cert = session.peer_certificates().is_some_and(|c| !c.is_empty());
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    served.fetch_add(1, Ordering::SeqCst);
                    let body = serde_json::json!({
                        "sni": sni,
                        "client_cert": client_cert,
                        "host": req.headers().get("host").and_then(|h| h.to_str().ok())
                            .or(req.uri().authority().map(|a| a.as_str())),
                        "version": format!("{:?}", req.version()),
                        "path": req.uri().path(),
                    });
                    async move {
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(
                            body.to_string(),
                        ))))
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    TlsBackend {
        addr,
        handshakes,
        requests,
    }
}

fn verify(sni: &str, ca: &Ca, alt_names: Vec<SubjectAltName>) -> UpstreamTls {
    UpstreamTls::Verify(BackendTls {
        sni: sni.into(),
        trust: BackendTrust::CaBundles(vec![CaBundle {
            source: "ConfigMap ns/backend-ca".into(),
            pem: ca.pem().into(),
        }]),
        subject_alt_names: alt_names,
        policy: "ns/policy".into(),
    })
}

/// One listener routing everything to cluster `echo` at `backend` over
/// `tls`, presenting `client_cert` to it.
fn tls_config(
    port: u16,
    backend: SocketAddr,
    tls: UpstreamTls,
    client_cert: Option<TlsCertificate>,
) -> Arc<Config> {
    let mut listener = gateway_listener(
        "http",
        None,
        vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])],
    );
    listener.backend_client_certificate = client_cert;
    let mut echo = cluster("echo", &[backend]);
    echo.tls = Some(tls);
    config(vec![socket(port, vec![listener])], vec![echo])
}

async fn serve(cfg: Arc<Config>, port: u16) -> (coxswain_proxy::Proxy, Reply) {
    let (proxy, _) = start_proxy(cfg).await;
    let reply = get(&client(), port, "front.test", "/x").await;
    (proxy, reply)
}

#[tokio::test]
async fn a_trusted_backend_is_reached_over_tls_with_the_hostname_as_sni() {
    let ca = Ca::new("backend-ca");
    let backend = tls_backend(&ca.server(&["svc.test"], &[]), None).await;
    let port = free_port();
    let (_proxy, reply) = serve(
        tls_config(port, backend.addr, verify("svc.test", &ca, vec![]), None),
        port,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let seen = reply.json();
    assert_eq!(seen["sni"], "svc.test");
    assert_eq!(seen["host"], "front.test", "Host is the client's");
    assert_eq!(seen["path"], "/x");
    assert_eq!(seen["client_cert"], false);
}

#[tokio::test]
async fn connections_to_a_tls_backend_are_pooled() {
    let ca = Ca::new("backend-ca");
    let backend = tls_backend(&ca.server(&["svc.test"], &[]), None).await;
    let port = free_port();
    let (_proxy, _) = start_proxy(tls_config(
        port,
        backend.addr,
        verify("svc.test", &ca, vec![]),
        None,
    ))
    .await;
    let client = client();
    for _ in 0..5 {
        assert_eq!(
            get(&client, port, "front.test", "/").await.status,
            StatusCode::OK
        );
    }
    assert_eq!(backend.requests.load(Ordering::SeqCst), 5);
    // The first connection learns that the backend does not pick h2 (it
    // is closed); from then on one pooled HTTP/1.1 connection serves.
    assert_eq!(backend.handshakes.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_backend_that_picks_h2_by_alpn_gets_http2_with_the_host_as_authority() {
    let ca = Ca::new("backend-ca");
    let cert = ca.server(&["svc.test"], &[]);
    let backend = tls_backend_alpn(&cert, None, &[b"h2", b"http/1.1"]).await;
    let port = free_port();
    let (_proxy, _) = start_proxy(tls_config(
        port,
        backend.addr,
        verify("svc.test", &ca, vec![]),
        None,
    ))
    .await;
    let client = client();
    for _ in 0..3 {
        let reply = get(&client, port, "front.test", "/h2").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let seen = reply.json();
        assert_eq!(seen["version"], "HTTP/2.0");
        assert_eq!(seen["host"], "front.test");
        assert_eq!(seen["sni"], "svc.test");
    }
    assert_eq!(
        backend.handshakes.load(Ordering::SeqCst),
        1,
        "one multiplexed connection"
    );

    // A backend offering only HTTP/1.1 keeps getting HTTP/1.1.
    let plain = tls_backend_alpn(&cert, None, &[b"http/1.1"]).await;
    let port = free_port();
    let (_proxy2, _) = start_proxy(tls_config(
        port,
        plain.addr,
        verify("svc.test", &ca, vec![]),
        None,
    ))
    .await;
    for _ in 0..3 {
        let reply = get(&client, port, "front.test", "/h1").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        assert_eq!(reply.json()["version"], "HTTP/1.1");
    }
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    let ca = Ca::new("backend-ca");
    let backend = tls_backend(&ca.server(&["other.test"], &[]), None).await;
    let port = free_port();
    let (_proxy, reply) = serve(
        tls_config(port, backend.addr, verify("svc.test", &ca, vec![]), None),
        port,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    assert_eq!(backend.requests.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_certificate_from_an_untrusted_ca_is_refused() {
    let (trusted, other) = (Ca::new("trusted"), Ca::new("other"));
    let backend = tls_backend(&other.server(&["svc.test"], &[]), None).await;
    let port = free_port();
    let (_proxy, reply) = serve(
        tls_config(
            port,
            backend.addr,
            verify("svc.test", &trusted, vec![]),
            None,
        ),
        port,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    assert_eq!(backend.requests.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn subject_alt_names_replace_the_hostname_check() {
    let ca = Ca::new("backend-ca");
    let cert = ca.server(&["alt.test"], &["spiffe://cluster.local/ns/app/sa/web"]);
    let backend = tls_backend(&cert, None).await;
    let cases = [
        (
            vec![SubjectAltName::Hostname("alt.test".into())],
            StatusCode::OK,
        ),
        (
            vec![SubjectAltName::Hostname("nope.test".into())],
            StatusCode::BAD_GATEWAY,
        ),
        (
            vec![SubjectAltName::Uri(
                "spiffe://cluster.local/ns/app/sa/web".into(),
            )],
            StatusCode::OK,
        ),
        (
            vec![SubjectAltName::Uri(
                "spiffe://cluster.local/ns/app/sa/db".into(),
            )],
            StatusCode::BAD_GATEWAY,
        ),
        (
            vec![
                SubjectAltName::Uri("spiffe://cluster.local/ns/app/sa/db".into()),
                SubjectAltName::Hostname("alt.test".into()),
            ],
            StatusCode::OK,
        ),
    ];
    for (alt_names, expected) in cases {
        let port = free_port();
        let description = format!("{alt_names:?}");
        // The SNI names the service, which the certificate does not carry.
        let (_proxy, reply) = serve(
            tls_config(port, backend.addr, verify("svc.test", &ca, alt_names), None),
            port,
        )
        .await;
        assert_eq!(reply.status, expected, "{description}: {}", reply.text());
        if expected == StatusCode::OK {
            assert_eq!(reply.json()["sni"], "svc.test", "{description}");
        }
    }
}

#[tokio::test]
async fn an_unusable_policy_fails_requests_instead_of_sending_plain_text() {
    let plain = echo_backend("plain").await;
    let port = free_port();
    let invalid = UpstreamTls::Invalid {
        reason: "no valid CA certificate".into(),
    };
    let (_proxy, reply) = serve(tls_config(port, plain.addr, invalid, None), port).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    // A CA bundle with no certificate in it is just as unusable.
    let port = free_port();
    let empty = UpstreamTls::Verify(BackendTls {
        sni: "svc.test".into(),
        trust: BackendTrust::CaBundles(vec![CaBundle {
            source: "ConfigMap ns/empty".into(),
            pem: "".into(),
        }]),
        subject_alt_names: vec![],
        policy: "ns/policy".into(),
    });
    let (_proxy2, reply) = serve(tls_config(port, plain.addr, empty, None), port).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        plain.hits.load(Ordering::SeqCst),
        0,
        "nothing sent in plain text"
    );
}

#[tokio::test]
async fn the_gateway_presents_its_client_certificate_to_backends() {
    let (ca, client_ca) = (Ca::new("backend-ca"), Ca::new("client-ca"));
    let backend = tls_backend(&ca.server(&["svc.test"], &[]), Some(&client_ca)).await;

    let port = free_port();
    let gateway_cert = client_ca.client_named("gateway").ir;
    let (_proxy, reply) = serve(
        tls_config(
            port,
            backend.addr,
            verify("svc.test", &ca, vec![]),
            Some(gateway_cert),
        ),
        port,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["client_cert"], true);

    // Without one the backend refuses the handshake.
    let port = free_port();
    let (_proxy2, reply) = serve(
        tls_config(port, backend.addr, verify("svc.test", &ca, vec![]), None),
        port,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn a_new_ca_applies_after_reload() {
    let (old, new) = (Ca::new("old"), Ca::new("new"));
    let backend = tls_backend(&new.server(&["svc.test"], &[]), None).await;
    let port = free_port();
    let (proxy, _) = start_proxy(tls_config(
        port,
        backend.addr,
        verify("svc.test", &old, vec![]),
        None,
    ))
    .await;
    let client = client();
    assert_eq!(
        get(&client, port, "front.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    proxy
        .apply(tls_config(
            port,
            backend.addr,
            verify("svc.test", &new, vec![]),
            None,
        ))
        .await;
    assert_eq!(
        get(&client, port, "front.test", "/").await.status,
        StatusCode::OK
    );
}

/// A TCP listener whose route goes to cluster `echo` at `backend`.
fn tcp_tls_config(
    port: u16,
    backend: SocketAddr,
    tls: UpstreamTls,
    client_cert: Option<TlsCertificate>,
) -> Arc<Config> {
    use coxswain_ir::{L4Route, RouteId, RouteKind, Serve};
    let route = Arc::new(L4Route {
        id: RouteId {
            kind: RouteKind::Tcp,
            namespace: "ns".into(),
            name: "tcp".into(),
            rule_index: 0,
            rule_name: None,
        },
        hostnames: vec![],
        backends: vec![to("echo", 1)],
    });
    let mut listener = gateway_listener("tcp", None, vec![]);
    listener.serve = Serve::Tcp(vec![route]);
    listener.backend_client_certificate = client_cert;
    let mut echo = cluster("echo", &[backend]);
    echo.tls = Some(tls);
    config(vec![socket(port, vec![listener])], vec![echo])
}

const RAW_GET: &[u8] = b"GET /tcp HTTP/1.1\r\nHost: raw.test\r\nConnection: close\r\n\r\n";

#[tokio::test]
async fn tcp_routes_reach_a_policied_backend_over_tls() {
    let (ca, client_ca) = (Ca::new("backend-ca"), Ca::new("client-ca"));
    let backend = tls_backend(&ca.server(&["svc.test"], &[]), Some(&client_ca)).await;
    let port = free_port();
    let gateway_cert = client_ca.client_named("gateway").ir;
    let (_proxy, _) = start_proxy(tcp_tls_config(
        port,
        backend.addr,
        verify("svc.test", &ca, vec![]),
        Some(gateway_cert),
    ))
    .await;
    let response = raw_exchange(port, RAW_GET).await;
    assert_eq!(raw_status(&response), 200, "{response}");
    assert!(response.contains(r#""sni":"svc.test""#), "{response}");
    assert!(response.contains(r#""client_cert":true"#), "{response}");
}

#[tokio::test]
async fn tcp_connections_to_an_unverifiable_backend_are_closed() {
    let (trusted, other) = (Ca::new("trusted"), Ca::new("other"));
    let backend = tls_backend(&other.server(&["svc.test"], &[]), None).await;
    let port = free_port();
    let (_proxy, _) = start_proxy(tcp_tls_config(
        port,
        backend.addr,
        verify("svc.test", &trusted, vec![]),
        None,
    ))
    .await;
    assert_eq!(raw_exchange(port, RAW_GET).await, "");

    let plain = echo_backend("plain").await;
    let port = free_port();
    let invalid = UpstreamTls::Invalid {
        reason: "no valid CA certificate".into(),
    };
    let (_proxy2, _) = start_proxy(tcp_tls_config(port, plain.addr, invalid, None)).await;
    assert_eq!(raw_exchange(port, RAW_GET).await, "");
    assert_eq!(
        plain.hits.load(Ordering::SeqCst),
        0,
        "nothing sent in plain text"
    );
    assert_eq!(backend.requests.load(Ordering::SeqCst), 0);
}
