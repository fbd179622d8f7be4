//! RequestMirror: copies reach every mirror (body, rule edits and all),
//! sampling is honoured, and a mirror that is slow, stalled or gone never
//! delays or fails the request it copies.

use crate::common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use coxswain_ir::{Cluster, Filter, Mirror, Route, UpstreamProtocol};
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What a recording backend received.
#[derive(Debug)]
struct Seen {
    method: Method,
    version: http::Version,
    path: String,
    /// `Host`, or the HTTP/2 `:authority`.
    host: Option<String>,
    headers: HeaderMap,
    /// The whole body, or why it could not be read.
    body: Result<Bytes, String>,
}

/// A backend that reports every request it gets (after reading its body)
/// and answers 200.
async fn recording_backend() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .map_err(|e| e.to_string());
                        let host = parts.uri.authority().map(|a| a.to_string()).or_else(|| {
                            let host = parts.headers.get("host")?;
                            host.to_str().ok().map(str::to_string)
                        });
                        let _ = tx.send(Seen {
                            method: parts.method,
                            version: parts.version,
                            path: parts
                                .uri
                                .path_and_query()
                                .map(|p| p.to_string())
                                .unwrap_or_default(),
                            host,
                            headers: parts.headers,
                            body,
                        });
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from("mirror"))))
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, rx)
}

/// The next request a recording backend got; fails rather than hangs.
async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    let next = tokio::time::timeout(Duration::from_secs(10), seen.recv());
    next.await.expect("no mirror request arrived").unwrap()
}

/// A backend that accepts connections and never answers.
async fn silent_backend() -> SocketAddr {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    addr
}

fn mirror(cluster: &str, numerator: u32, denominator: u32) -> Filter {
    Filter::Mirror(Mirror {
        cluster: cluster.into(),
        numerator,
        denominator,
    })
}

/// Route `r` to cluster `echo`, with `filters` after its `x-route` edit.
fn mirrored_route(filters: Vec<Filter>) -> Route {
    let mut r = route("r", &[], vec![prefix("/")], vec![to("echo", 1)]);
    r.filters.extend(filters);
    r
}

async fn serve(route: Route, clusters: Vec<Cluster>) -> (coxswain_proxy::Proxy, u16) {
    let port = free_port();
    let cfg = config(
        vec![socket(
            port,
            vec![gateway_listener("http", None, vec![route])],
        )],
        clusters,
    );
    let (proxy, _) = start_proxy(cfg).await;
    (proxy, port)
}

fn metrics(proxy: &coxswain_proxy::Proxy) -> String {
    let mut out = String::new();
    proxy.render_metrics(&mut out);
    out
}

#[tokio::test]
async fn every_mirror_gets_the_request_as_the_rule_left_it_body_included() {
    let primary = echo_backend("primary").await;
    let (a, mut seen_a) = recording_backend().await;
    let (b, mut seen_b) = recording_backend().await;
    let mut backend_ref = to("echo", 1);
    backend_ref.filters = vec![set_request_header("x-backend-only", "1")];
    let mut r = mirrored_route(vec![
        mirror("mirror-a", 1, 1),
        set_request_header("x-after-mirror", "yes"),
        mirror("mirror-b", 100, 100),
    ]);
    r.backends = vec![backend_ref];
    let (proxy, port) = serve(
        r,
        vec![
            cluster("echo", &[primary.addr]),
            cluster("mirror-a", &[a]),
            Cluster {
                protocol: UpstreamProtocol::H2c,
                ..cluster("mirror-b", &[b])
            },
        ],
    )
    .await;
    // Many frames, within what a copy may lag (so no scheduling can cut it).
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let req = Request::post(format!("http://127.0.0.1:{port}/body/upload?q=1"))
        .header("host", "shop.example")
        .body(Full::new(Bytes::from(body.clone())))
        .unwrap();
    let response = client().request(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let echoed = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        echoed.len(),
        body.len(),
        "the primary streamed the whole body"
    );
    for (seen, version) in [
        (&mut seen_a, Version::HTTP_11),
        (&mut seen_b, Version::HTTP_2),
    ] {
        let got = next(seen).await;
        assert_eq!(got.method, Method::POST);
        assert_eq!(got.version, version, "in the mirror cluster's protocol");
        assert_eq!(got.path, "/body/upload?q=1");
        assert_eq!(got.host.as_deref(), Some("shop.example"));
        assert_eq!(got.headers["x-route"], "r");
        assert_eq!(got.headers["x-after-mirror"], "yes", "all rule edits apply");
        assert!(
            !got.headers.contains_key("x-backend-only"),
            "not the primary's"
        );
        assert_eq!(
            got.body.as_deref(),
            Ok(&body[..]),
            "the whole body, unchanged"
        );
    }
    let text = metrics(&proxy);
    for cluster in ["mirror-a", "mirror-b"] {
        let line = format!(
            "coxswain_proxy_mirror_requests_total{{route=\"ns/r/0\",upstream=\"{cluster}\"}} 1"
        );
        assert!(text.contains(&line), "{line} in\n{text}");
    }
}

#[tokio::test]
async fn a_zero_share_mirrors_nothing_and_a_full_share_everything() {
    let primary = echo_backend("primary").await;
    let (all, mut seen_all) = recording_backend().await;
    let (none, mut seen_none) = recording_backend().await;
    let r = mirrored_route(vec![mirror("none", 0, 100), mirror("all", 5, 5)]);
    let clusters = vec![
        cluster("echo", &[primary.addr]),
        cluster("all", &[all]),
        cluster("none", &[none]),
    ];
    let (proxy, port) = serve(r, clusters).await;
    let c = client();
    for i in 0..20 {
        let reply = get(&c, port, "h", &format!("/get/{i}")).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    for i in 0..20 {
        let got = next(&mut seen_all).await;
        assert!(got.path.starts_with("/get/"), "{i}: {}", got.path);
        assert_eq!(got.body.as_deref(), Ok(&b""[..]));
    }
    assert!(seen_none.try_recv().is_err(), "0% mirrors nothing");
    let text = metrics(&proxy);
    assert!(
        text.contains("coxswain_proxy_mirror_requests_total{route=\"ns/r/0\",upstream=\"all\"} 20")
    );
    assert!(
        text.contains("coxswain_proxy_mirror_requests_total{route=\"ns/r/0\",upstream=\"none\"} 0")
    );
}

#[tokio::test]
async fn a_mirror_that_never_answers_or_is_gone_does_not_touch_the_primary() {
    let primary = echo_backend("primary").await;
    let silent = silent_backend().await;
    let gone = {
        let l = std::net::TcpListener::bind((LOCALHOST, 0)).unwrap();
        l.local_addr().unwrap() // closed again: connections are refused
    };
    let mut r = mirrored_route(vec![
        mirror("silent", 1, 1),
        mirror("gone", 1, 1),
        mirror("empty", 1, 1),
    ]);
    r.timeouts.request_ms = Some(60_000);
    let clusters = vec![
        cluster("echo", &[primary.addr]),
        cluster("silent", &[silent]),
        cluster("gone", &[gone]),
        cluster("empty", &[]),
    ];
    let (proxy, port) = serve(r, clusters).await;
    let c = client();
    // Bounded so that a regression fails instead of hanging the suite; the
    // silent mirror's own deadline (the route's 60 s) is far beyond it.
    let replies = tokio::time::timeout(Duration::from_secs(20), async {
        let mut statuses = Vec::new();
        for i in 0..5 {
            statuses.push(get(&c, port, "h", &format!("/p/{i}")).await.status);
        }
        statuses
    })
    .await
    .expect("the primary must not wait for its mirrors");
    assert!(replies.iter().all(|s| *s == StatusCode::OK), "{replies:?}");
    assert_eq!(primary.hits.load(std::sync::atomic::Ordering::SeqCst), 5);
    wait_until(
        "the refused and endpoint-less mirrors counted as failed",
        || {
            let text = metrics(&proxy);
            async move {
                text.contains(
                    "coxswain_proxy_mirror_failures_total{route=\"ns/r/0\",upstream=\"gone\"} 5",
                ) && text.contains(
                    "coxswain_proxy_mirror_failures_total{route=\"ns/r/0\",upstream=\"empty\"} 5",
                )
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_mirror_that_stops_reading_is_cut_off_and_the_upload_completes() {
    let primary = echo_backend("primary").await;
    // Accepts, then never reads: the mirror's body backs up.
    let stalled = silent_backend().await;
    let r = mirrored_route(vec![mirror("stalled", 1, 1)]);
    let clusters = vec![
        cluster("echo", &[primary.addr]),
        cluster("stalled", &[stalled]),
    ];
    let (proxy, port) = serve(r, clusters).await;
    let body = vec![7u8; 16 * 1024 * 1024];
    let req = Request::post(format!("http://127.0.0.1:{port}/body/big"))
        .header("host", "h")
        .body(Full::new(Bytes::from(body.clone())))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(30), async {
        let response = client().request(req).await.unwrap();
        let status = response.status();
        let echoed = response.into_body().collect().await.unwrap().to_bytes();
        (status, echoed.len())
    })
    .await
    .expect("a stalled mirror must not hold the upload back");
    assert_eq!(response, (StatusCode::OK, body.len()));
    wait_until("the cut-off mirror counted as failed", || {
        let text = metrics(&proxy);
        async move {
            text.contains(
                "coxswain_proxy_mirror_failures_total{route=\"ns/r/0\",upstream=\"stalled\"} 1",
            )
        }
    })
    .await;
}
