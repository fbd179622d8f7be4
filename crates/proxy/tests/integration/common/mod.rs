//! Shared test fixtures: echo backends, config builders and a client.
#![allow(dead_code)]

pub mod jwt;
pub mod pki;
mod ports;
pub mod redis;

pub use ports::free_port;

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use coxswain_ir::{
    BackendTarget, Cluster, Config, Endpoint, Filter, Header, HeaderModifier, Hostname, Listener,
    PathMatch, Route, RouteId, RouteKind, RouteMatch, Serve, Socket, Timeouts, Transport,
    UpstreamProtocol, WeightedBackend,
};
use coxswain_proxy::{ApplyReport, Proxy, ProxyOptions};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

pub const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A backend that echoes the request as JSON (or streams the body back for
/// paths under `/body`). `x-delay-ms` delays the response.
pub struct EchoBackend {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
}

type TestBody = BoxBody<Bytes, hyper::Error>;

async fn echo(
    name: String,
    hits: Arc<AtomicUsize>,
    req: Request<Incoming>,
) -> Result<Response<TestBody>, Infallible> {
    hits.fetch_add(1, Ordering::SeqCst);
    if let Some(ms) = req
        .headers()
        .get("x-delay-ms")
        .and_then(|v| v.to_str().ok()?.parse().ok())
    {
        // The delay is the behaviour under test (a slow upstream).
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if req.uri().path().starts_with("/body") {
        return Ok(Response::new(req.into_body().boxed()));
    }
    let mut headers = serde_json::Map::new();
    for name in req.headers().keys() {
        let values: Vec<&str> = req
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        headers.insert(name.to_string(), values.join(", ").into());
    }
    let body = serde_json::json!({
        "backend": name,
        "method": req.method().as_str(),
        "path": req.uri().path(),
        "query": req.uri().query(),
        "authority": req.uri().authority().map(|a| a.as_str()),
        "version": format!("{:?}", req.version()),
        "headers": headers,
    });
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|n| match n {})
            .boxed(),
    );
    response
        .headers_mut()
        .insert("x-backend", name.parse().unwrap());
    if req.headers().contains_key("x-send-hop") {
        let h = response.headers_mut();
        h.insert("connection", "x-internal".parse().unwrap());
        h.insert("x-internal", "secret".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("x-upstream-only", "kept".parse().unwrap());
    }
    Ok(response)
}

pub async fn echo_backend(name: &str) -> EchoBackend {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let (name, counter) = (name.to_string(), hits.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (name, counter) = (name.clone(), counter.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| echo(name.clone(), counter.clone(), req));
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    EchoBackend { addr, hits }
}

/// A backend that answers every request with `status` and `body`
/// (`x-backend: fixed`), counting requests.
pub async fn fixed_status_backend(
    status: StatusCode,
    body: &'static str,
) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_req: Request<Incoming>| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
                        *r.status_mut() = status;
                        r.headers_mut()
                            .insert("x-backend", "fixed".parse().unwrap());
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, hits)
}

pub fn cluster(name: &str, endpoints: &[SocketAddr]) -> Cluster {
    Cluster {
        name: name.into(),
        protocol: UpstreamProtocol::Http1,
        endpoints: endpoints
            .iter()
            .map(|&address| Endpoint { address })
            .collect(),
        tls: None,
        policy: None,
        retry_budget: None,
    }
}

pub fn to(cluster: &str, weight: u32) -> WeightedBackend {
    WeightedBackend {
        weight,
        target: BackendTarget::Cluster(cluster.into()),
        filters: vec![],
    }
}

pub fn prefix(p: &str) -> RouteMatch {
    RouteMatch {
        grpc: None,
        path: PathMatch::Prefix(p.into()),
        method: None,
        headers: vec![],
        query: vec![],
    }
}

pub fn exact(p: &str) -> RouteMatch {
    RouteMatch {
        grpc: None,
        path: PathMatch::Exact(p.into()),
        ..prefix("/")
    }
}

pub fn host(h: &str) -> Hostname {
    Hostname::parse(h).unwrap()
}

/// A route rule that tags requests with `x-route: <name>` so the echo shows
/// which rule won.
pub fn route(
    name: &str,
    hostnames: &[&str],
    matches: Vec<RouteMatch>,
    backends: Vec<WeightedBackend>,
) -> Route {
    Route {
        id: RouteId {
            kind: RouteKind::Http,
            namespace: "ns".into(),
            name: name.into(),
            rule_index: 0,
            rule_name: None,
        },
        hostnames: hostnames.iter().map(|h| host(h)).collect(),
        matches,
        filters: vec![set_request_header("x-route", name)],
        backends,
        timeouts: Timeouts::default(),
        retry: None,
        session: None,
    }
}

pub fn set_request_header(name: &str, value: &str) -> Filter {
    Filter::RequestHeaders(HeaderModifier {
        set: vec![Header {
            name: name.into(),
            value: value.into(),
        }],
        ..HeaderModifier::default()
    })
}

pub fn gateway_listener(name: &str, hostname: Option<&str>, routes: Vec<Route>) -> Listener {
    Listener {
        gateway: "ns/gw".into(),
        name: name.into(),
        hostname: hostname.map(host),
        tls: None,
        serve: Serve::Http(routes.into_iter().map(Arc::new).collect()),
        listener_set: None,
        backend_client_certificate: None,
        access_log: None,
    }
}

pub fn socket(port: u16, listeners: Vec<Listener>) -> Socket {
    Socket {
        transport: Transport::Tcp,
        proxy_protocol: None,
        address: LOCALHOST,
        port,
        listeners,
    }
}

pub fn config(sockets: Vec<Socket>, mut clusters: Vec<Cluster>) -> Arc<Config> {
    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    Arc::new(Config {
        ir_version: coxswain_ir::IR_VERSION,
        sockets,
        clusters: clusters.into_iter().map(Arc::new).collect(),
        extensions: Vec::new(),
    })
}

/// The HTTP routes of a listener built by [`gateway_listener`].
pub fn routes_mut(listener: &mut Listener) -> &mut Vec<Arc<Route>> {
    match &mut listener.serve {
        Serve::Http(routes) => routes,
        other => panic!("not an HTTP listener: {other:?}"),
    }
}

/// A one-socket config: every route on a hostname-less listener, cluster
/// `echo` pointing at `backend`.
pub fn simple_config(port: u16, routes: Vec<Route>, backend: SocketAddr) -> Arc<Config> {
    config(
        vec![socket(port, vec![gateway_listener("http", None, routes)])],
        vec![cluster("echo", &[backend])],
    )
}

pub async fn start_proxy(config: Arc<Config>) -> (Proxy, ApplyReport) {
    start_proxy_with(config, ProxyOptions::default()).await
}

pub async fn start_proxy_with(config: Arc<Config>, options: ProxyOptions) -> (Proxy, ApplyReport) {
    let proxy = Proxy::new(options);
    let report = proxy.apply(config).await;
    assert!(report.failed.is_empty(), "bind failed: {:?}", report.failed);
    (proxy, report)
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not json ({e}): {:?}", self.body))
    }

    /// The `x-route` header the backend saw.
    pub fn route(&self) -> String {
        self.json()["headers"]["x-route"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub type TestClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> TestClient {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

pub fn request(port: u16, host: &str, path: &str) -> http::request::Builder {
    Request::get(format!("http://127.0.0.1:{port}{path}")).header("host", host)
}

pub async fn send(client: &TestClient, req: http::request::Builder) -> Reply {
    let response = client
        .request(req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

pub async fn get(client: &TestClient, port: u16, host: &str, path: &str) -> Reply {
    send(client, request(port, host, path)).await
}

/// An origin that accepts any upgrade (as `text/html`, to tempt the
/// filter) and then echoes the tunnel's bytes.
pub async fn upgrading_origin() -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                              Connection: Upgrade\r\nContent-Type: text/html\r\n\r\n";
                stream.write_all(answer.as_bytes()).await.unwrap();
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

/// Polls `check` until it holds, failing after a deadline.
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends raw bytes on a fresh connection and reads until the peer closes
/// (the request should carry `Connection: close`) or 10 s pass. Returns what
/// came back, lossily as text. For requests a well-behaved client would
/// never send.
pub async fn raw_exchange(port: u16, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect((LOCALHOST, port))
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "no close within 10 s; got {:?}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of a raw HTTP/1.1 response (0 when there is none).
pub fn raw_status(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The key of a Coxswain filter resource in namespace `default`.
pub fn extension_key(kind: coxswain_ir::ExtensionKind, name: &str) -> coxswain_ir::ExtensionKey {
    coxswain_ir::ExtensionKey {
        kind,
        namespace: "default".into(),
        name: name.into(),
    }
}

/// A rule on prefix `path` to cluster `echo` with exactly `filters`.
pub fn rule_with(path: &str, filters: Vec<Filter>) -> Route {
    let mut r = route(
        path.trim_start_matches('/'),
        &[],
        vec![prefix(path)],
        vec![to("echo", 1)],
    );
    r.filters = filters;
    r
}

/// [`simple_config`] with `extensions` in the config's table (sorted).
pub fn config_with_extensions(
    port: u16,
    routes: Vec<Route>,
    backend: SocketAddr,
    mut extensions: Vec<coxswain_ir::Extension>,
) -> Arc<Config> {
    extensions.sort_by(|a, b| a.key.cmp(&b.key));
    let mut config = (*simple_config(port, routes, backend)).clone();
    config.extensions = extensions;
    Arc::new(config)
}
