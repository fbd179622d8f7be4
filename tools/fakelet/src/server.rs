//! The kubelet's HTTPS port, as far as the apiserver needs it for
//! `kubectl logs`: `/containerLogs/{namespace}/{pod}/{container}`.
//!
//! The certificate is self-signed and made at start-up. The apiserver does
//! not verify kubelet serving certificates unless it is started with
//! `--kubelet-certificate-authority`, so leave that flag out.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::logs::{self, LogQuery};

type Body = BoxBody<Bytes, Infallible>;

const FOLLOW_POLL: Duration = Duration::from_millis(200);

pub fn tls_acceptor(names: Vec<String>) -> anyhow::Result<TlsAcceptor> {
    let certified = rcgen::generate_simple_self_signed(names).context("making a certificate")?;
    let cert = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state_dir: PathBuf,
    mut shutdown: watch::Receiver<bool>,
) {
    let state_dir = Arc::new(state_dir);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let acceptor = acceptor.clone();
        let state_dir = state_dir.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(tls) => tls,
                Err(e) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |req| {
                let state_dir = state_dir.clone();
                async move { Ok::<_, Infallible>(handle(&state_dir, &req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response
}

async fn handle(state_dir: &Path, req: &Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    if path == "/healthz" {
        return text(StatusCode::OK, "ok".into());
    }
    let Some(rest) = path.strip_prefix("/containerLogs/") else {
        return text(
            StatusCode::NOT_FOUND,
            format!("{path} is not served by the fakelet\n"),
        );
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let [namespace, pod, container] = parts.as_slice() else {
        return text(
            StatusCode::BAD_REQUEST,
            "want /containerLogs/{namespace}/{pod}/{container}\n".into(),
        );
    };
    let query = LogQuery::parse(req.uri().query().unwrap_or(""));
    let Some(pod_dir) = find_pod_dir(state_dir, namespace, pod) else {
        return text(
            StatusCode::NOT_FOUND,
            format!("pod {namespace}/{pod} is not running on this node\n"),
        );
    };
    let Some(log) = logs::pick_run(&pod_dir, container, query.previous) else {
        return text(
            StatusCode::NOT_FOUND,
            format!("no logs for container {container:?} in pod {namespace}/{pod}\n"),
        );
    };
    let stored = tokio::fs::read(&log).await.unwrap_or_default();
    let first = logs::render(&stored, &query);
    if !query.follow {
        return Response::new(Full::new(Bytes::from(first)).boxed());
    }
    follow(log, stored.len(), first, query)
}

/// Sends what is there, then new lines as they arrive, until the log file
/// goes away (the pod was removed) or the client leaves.
fn follow(log: PathBuf, offset: usize, first: Vec<u8>, query: LogQuery) -> Response<Body> {
    let rest_query = LogQuery {
        timestamps: query.timestamps,
        ..Default::default()
    };
    let first = futures::stream::once(async move { Ok(Frame::data(Bytes::from(first))) });
    let more = futures::stream::unfold((log, offset), move |(log, mut offset)| {
        let rest_query = rest_query.clone();
        async move {
            loop {
                tokio::time::sleep(FOLLOW_POLL).await;
                let data = tokio::fs::read(&log).await.ok()?;
                let complete = data
                    .get(offset..)
                    .and_then(|new| new.iter().rposition(|b| *b == b'\n'))
                    .map(|last| offset + last + 1);
                if let Some(end) = complete {
                    let chunk = logs::render(data.get(offset..end).unwrap_or(&[]), &rest_query);
                    offset = end;
                    return Some((Ok(Frame::data(Bytes::from(chunk))), (log, offset)));
                }
            }
        }
    });
    Response::new(BodyExt::boxed(StreamBody::new(first.chain(more))))
}

fn find_pod_dir(state_dir: &Path, namespace: &str, pod: &str) -> Option<PathBuf> {
    let prefix = format!("{namespace}_{pod}_");
    std::fs::read_dir(state_dir.join("pods"))
        .ok()?
        .filter_map(|entry| entry.ok())
        .find(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .map(|entry| entry.path())
}

/// Binds the HTTPS port.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the kubelet port {addr}"))
}
