//! TCP, TLS passthrough, TLS termination to TCP, and UDP listeners, with
//! real sockets on loopback.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use coxswain_ir::{
    L4Route, Listener, PrivateKeyPem, RouteId, RouteKind, Serve, Socket, TlsCertificate,
    TlsTermination, Transport,
};
use coxswain_proxy::{ProxyOptions, UdpOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

/// A TCP backend that answers with `<name>:` followed by everything it
/// read, once the client half-closed; counts connections.
struct TcpBackend {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

async fn tcp_backend(name: &'static str) -> TcpBackend {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut got = Vec::new();
                // Reads to EOF: proves the client's half-close arrived.
                if stream.read_to_end(&mut got).await.is_ok() {
                    let mut reply = format!("{name}:").into_bytes();
                    reply.extend_from_slice(&got);
                    let _ = stream.write_all(&reply).await;
                }
            });
        }
    });
    TcpBackend { addr, connections }
}

fn l4_route(
    kind: RouteKind,
    name: &str,
    hostnames: &[&str],
    backends: Vec<coxswain_ir::WeightedBackend>,
) -> Arc<L4Route> {
    Arc::new(L4Route {
        id: RouteId {
            kind,
            namespace: "ns".into(),
            name: name.into(),
            rule_index: 0,
            rule_name: None,
        },
        hostnames: hostnames.iter().map(|h| host(h)).collect(),
        backends,
    })
}

fn listener(name: &str, hostname: Option<&str>, tls: Option<&TestCert>, serve: Serve) -> Listener {
    Listener {
        gateway: "ns/gw".into(),
        name: name.into(),
        hostname: hostname.map(host),
        tls: tls.map(|c| TlsTermination {
            certificates: vec![c.ir.clone()],
            client_validation: None,
        }),
        serve,
        listener_set: None,
        backend_client_certificate: None,
        access_log: None,
    }
}

fn tcp_socket(port: u16, listeners: Vec<Listener>) -> Socket {
    Socket {
        transport: Transport::Tcp,
        proxy_protocol: None,
        address: LOCALHOST,
        port,
        listeners,
    }
}

/// Writes `payload`, half-closes, and reads the reply to EOF.
async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut s: S,
    payload: &[u8],
) -> String {
    s.write_all(payload).await.unwrap();
    s.shutdown().await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn tcp_relays_both_ways_with_half_close() {
    let backend = tcp_backend("pg").await;
    let port = free_port();
    let route = l4_route(RouteKind::Tcp, "db", &[], vec![to("pg", 1)]);
    let cfg = config(
        vec![tcp_socket(
            port,
            vec![listener("tcp", None, None, Serve::Tcp(vec![route]))],
        )],
        vec![cluster("pg", &[backend.addr])],
    );
    let (proxy, _) = start_proxy(cfg).await;
    let client = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    assert_eq!(exchange(client, b"select 1").await, "pg:select 1");
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains(r#"coxswain_proxy_l4_connections_total{route="ns/db/0"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"coxswain_proxy_l4_bytes_total{route="ns/db/0",direction="in"} 8"#));
}

#[tokio::test]
async fn tcp_weights_and_oldest_route_decide() {
    let a = tcp_backend("a").await;
    let b = tcp_backend("b").await;
    let port = free_port();
    // Two routes on one listener: the first (oldest) serves; inside it the
    // zero-weight backend never does.
    let first = l4_route(RouteKind::Tcp, "older", &[], vec![to("a", 1), to("b", 0)]);
    let second = l4_route(RouteKind::Tcp, "newer", &[], vec![to("b", 1)]);
    let cfg = config(
        vec![tcp_socket(
            port,
            vec![listener("tcp", None, None, Serve::Tcp(vec![first, second]))],
        )],
        vec![cluster("a", &[a.addr]), cluster("b", &[b.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    for _ in 0..20 {
        let client = TcpStream::connect((LOCALHOST, port)).await.unwrap();
        assert_eq!(exchange(client, b"x").await, "a:x");
    }
    assert_eq!(b.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn tcp_refused_endpoint_moves_on_and_no_backend_closes() {
    let good = tcp_backend("good").await;
    let dead: SocketAddr = (LOCALHOST, free_port()).into();
    let port = free_port();
    let port_none = free_port();
    let route = l4_route(RouteKind::Tcp, "db", &[], vec![to("pg", 1)]);
    let nothing = l4_route(RouteKind::Tcp, "none", &[], vec![to("missing", 1)]);
    let cfg = config(
        vec![
            tcp_socket(
                port,
                vec![listener("tcp", None, None, Serve::Tcp(vec![route]))],
            ),
            tcp_socket(
                port_none,
                vec![listener("tcp", None, None, Serve::Tcp(vec![nothing]))],
            ),
        ],
        vec![cluster("pg", &[dead, good.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    for _ in 0..4 {
        let client = TcpStream::connect((LOCALHOST, port)).await.unwrap();
        assert_eq!(exchange(client, b"q").await, "good:q");
    }
    let client = TcpStream::connect((LOCALHOST, port_none)).await.unwrap();
    assert_eq!(exchange(client, b"q").await, "", "closed without a backend");
}

struct TestCert {
    der: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    ir: TlsCertificate,
}

fn self_signed(name: &str) -> TestCert {
    let generated = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    TestCert {
        der: generated.cert.der().clone(),
        key: PrivateKeyDer::try_from(generated.signing_key.serialize_der()).unwrap(),
        ir: TlsCertificate {
            source: format!("ns/{name}"),
            cert_chain_pem: generated.cert.pem(),
            key_pem: PrivateKeyPem(generated.signing_key.serialize_pem().into()),
        },
    }
}

fn client_config(roots: &[&TestCert]) -> Arc<rustls::ClientConfig> {
    let mut store = rustls::RootCertStore::empty();
    for r in roots {
        store.add(r.der.clone()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth(),
    )
}

async fn tls_connect(
    port: u16,
    sni: &str,
    roots: &[&TestCert],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect((LOCALHOST, port)).await?;
    let name = ServerName::try_from(sni.to_string()).unwrap();
    tokio_rustls::TlsConnector::from(client_config(roots))
        .connect(name, tcp)
        .await
}

/// A TLS backend terminating with `cert`, answering like [`tcp_backend`].
async fn tls_backend(name: &'static str, cert: &TestCert) -> SocketAddr {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.der.clone()], cert.key.clone_key())
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut got = Vec::new();
                if tls.read_to_end(&mut got).await.is_ok() {
                    let mut reply = format!("{name}:").into_bytes();
                    reply.extend_from_slice(&got);
                    let _ = tls.write_all(&reply).await;
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    addr
}

/// Passthrough: the client verifies the *backend's* certificate, so the
/// gateway cannot have terminated TLS; SNI picks the route (exact before
/// wildcard); a name no route or listener owns is closed.
#[tokio::test]
async fn tls_passthrough_splices_by_sni() {
    let abc = self_signed("abc.example.com");
    let other = self_signed("other.example.com");
    let abc_backend = tls_backend("abc", &abc).await;
    let other_backend = tls_backend("other", &other).await;
    let port = free_port();
    let routes = vec![
        l4_route(
            RouteKind::Tls,
            "exact",
            &["abc.example.com"],
            vec![to("abc", 1)],
        ),
        l4_route(
            RouteKind::Tls,
            "wild",
            &["*.example.com"],
            vec![to("other", 1)],
        ),
    ];
    let cfg = config(
        vec![tcp_socket(
            port,
            vec![listener(
                "tls",
                Some("*.example.com"),
                None,
                Serve::TlsPassthrough(routes),
            )],
        )],
        vec![
            cluster("abc", &[abc_backend]),
            cluster("other", &[other_backend]),
        ],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let stream = tls_connect(port, "abc.example.com", &[&abc]).await.unwrap();
    assert_eq!(exchange(stream, b"hi").await, "abc:hi");
    let stream = tls_connect(port, "other.example.com", &[&other])
        .await
        .unwrap();
    assert_eq!(exchange(stream, b"yo").await, "other:yo");
    let err = tls_connect(port, "abc.example.org", &[&abc])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
        ),
        "{err:?}"
    );
}

/// PROXY protocol on a passthrough socket: the header is read before the
/// ClientHello and not forwarded (the backend's own TLS handshake would
/// fail on it); a connection without one is closed.
#[tokio::test]
async fn tls_passthrough_after_a_proxy_header_forwards_only_the_tls_stream() {
    let abc = self_signed("abc.example.com");
    let backend = tls_backend("abc", &abc).await;
    let port = free_port();
    let routes = vec![l4_route(RouteKind::Tls, "exact", &[], vec![to("abc", 1)])];
    let mut socket = tcp_socket(
        port,
        vec![listener("tls", None, None, Serve::TlsPassthrough(routes))],
    );
    socket.proxy_protocol = Some(coxswain_ir::ProxyProtocol { optional: false });
    let cfg = config(vec![socket], vec![cluster("abc", &[backend])]);
    let (_proxy, _) = start_proxy(cfg).await;

    let mut tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    tcp.write_all(b"PROXY TCP4 203.0.113.7 127.0.0.1 4000 443\r\n")
        .await
        .unwrap();
    let name = ServerName::try_from("abc.example.com").unwrap();
    let stream = tokio_rustls::TlsConnector::from(client_config(&[&abc]))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(exchange(stream, b"hi").await, "abc:hi");

    assert!(tls_connect(port, "abc.example.com", &[&abc]).await.is_err());
}

/// Terminate: the gateway presents its certificate and the backend gets
/// the plain byte stream. Mixed with a passthrough listener on the same
/// port, told apart by SNI.
#[tokio::test]
async fn tls_terminate_and_passthrough_share_a_port() {
    let gateway_cert = self_signed("tls.example.com");
    let abc = self_signed("abc.example.com");
    let plain = tcp_backend("plain").await;
    let passthrough = tls_backend("passthrough", &abc).await;
    let port = free_port();
    let cfg = config(
        vec![tcp_socket(
            port,
            vec![
                listener(
                    "abc",
                    Some("abc.example.com"),
                    None,
                    Serve::TlsPassthrough(vec![l4_route(
                        RouteKind::Tls,
                        "p",
                        &[],
                        vec![to("pt", 1)],
                    )]),
                ),
                listener(
                    "terminate",
                    Some("tls.example.com"),
                    Some(&gateway_cert),
                    Serve::Tcp(vec![l4_route(
                        RouteKind::Tls,
                        "t",
                        &[],
                        vec![to("plain", 1)],
                    )]),
                ),
            ],
        )],
        vec![
            cluster("pt", &[passthrough]),
            cluster("plain", &[plain.addr]),
        ],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let stream = tls_connect(port, "tls.example.com", &[&gateway_cert])
        .await
        .unwrap();
    assert_eq!(exchange(stream, b"decrypted").await, "plain:decrypted");
    let stream = tls_connect(port, "abc.example.com", &[&abc]).await.unwrap();
    assert_eq!(
        exchange(stream, b"end-to-end").await,
        "passthrough:end-to-end"
    );
}

/// A UDP backend that answers every datagram with `<name>:<datagram>`.
async fn udp_backend(name: &'static str) -> SocketAddr {
    let socket = UdpSocket::bind((LOCALHOST, 0)).await.unwrap();
    let addr = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 2048];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let mut reply = format!("{name}:").into_bytes();
            reply.extend_from_slice(&buf[..n]);
            let _ = socket.send_to(&reply, from).await;
        }
    });
    addr
}

fn udp_config(port: u16, backend: SocketAddr) -> std::sync::Arc<coxswain_ir::Config> {
    let route = l4_route(RouteKind::Udp, "dns", &[], vec![to("dns", 1)]);
    config(
        vec![Socket {
            transport: Transport::Udp,
            proxy_protocol: None,
            address: LOCALHOST,
            port,
            listeners: vec![listener("udp", None, None, Serve::Udp(vec![route]))],
        }],
        vec![cluster("dns", &[backend])],
    )
}

/// Connected client sockets only accept replies from the address they sent
/// to: every reply must come from the listener's own address and port.
async fn udp_ask(port: u16, payload: &str) -> String {
    udp_ask_from(&udp_client(port).await, payload).await
}

/// A client socket connected to the listener on `port`. Held while others
/// are made, so that each gets a port of its own (a session per client).
async fn udp_client(port: u16) -> UdpSocket {
    let client = UdpSocket::bind((LOCALHOST, 0)).await.unwrap();
    client.connect((LOCALHOST, port)).await.unwrap();
    client
}

async fn udp_ask_from(client: &UdpSocket, payload: &str) -> String {
    client.send(payload.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 2048];
    let n = tokio::time::timeout(Duration::from_secs(10), client.recv(&mut buf))
        .await
        .expect("a reply within 10 s")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test]
async fn udp_sessions_relay_replies_to_each_client() {
    let backend = udp_backend("dns").await;
    let port = free_port();
    let (proxy, _) = start_proxy(udp_config(port, backend)).await;
    // Many clients, each from its own port, each gets its own answer.
    let mut clients = Vec::new();
    for i in 0..50 {
        clients.push(udp_client(port).await);
        let answer = udp_ask_from(&clients[i], &format!("q{i}")).await;
        assert_eq!(answer, format!("dns:q{i}"));
    }
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains(r#"coxswain_proxy_l4_connections_total{route="ns/dns/0"} 50"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn udp_session_cap_evicts_the_least_recent() {
    let backend = udp_backend("dns").await;
    let port = free_port();
    let options = ProxyOptions {
        udp: UdpOptions {
            session_timeout: Duration::from_secs(60),
            max_sessions: 4,
        },
        ..ProxyOptions::default()
    };
    let (proxy, _) = start_proxy_with(udp_config(port, backend), options).await;
    let mut clients = Vec::new();
    for i in 0..10 {
        clients.push(udp_client(port).await);
        let answer = udp_ask_from(&clients[i], &format!("{i}")).await;
        assert_eq!(answer, format!("dns:{i}"));
    }
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains(r#"coxswain_proxy_udp_session_evictions_total{route="ns/dns/0"} 6"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"coxswain_proxy_l4_active_connections{route="ns/dns/0"} 4"#));
}

/// TCP and UDP on the same port number are two sockets.
#[tokio::test]
async fn tcp_and_udp_share_a_port_number() {
    let tcp = tcp_backend("tcp").await;
    let udp = udp_backend("udp").await;
    let port = free_port();
    let tcp_route = l4_route(RouteKind::Tcp, "t", &[], vec![to("t", 1)]);
    let udp_route = l4_route(RouteKind::Udp, "u", &[], vec![to("u", 1)]);
    let cfg = config(
        vec![
            tcp_socket(
                port,
                vec![listener("tcp", None, None, Serve::Tcp(vec![tcp_route]))],
            ),
            Socket {
                transport: Transport::Udp,
                proxy_protocol: None,
                address: LOCALHOST,
                port,
                listeners: vec![listener("udp", None, None, Serve::Udp(vec![udp_route]))],
            },
        ],
        vec![cluster("t", &[tcp.addr]), cluster("u", &[udp])],
    );
    let (_proxy, report) = start_proxy(cfg).await;
    assert_eq!(report.bound.len(), 2);
    let client = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    assert_eq!(exchange(client, b"a").await, "tcp:a");
    assert_eq!(udp_ask(port, "b").await, "udp:b");
}
