//! The proxy's end: dials the controller, says what it holds, applies each
//! update through an [`Applier`] and answers it. Reconnects with jittered
//! backoff whenever the stream ends, keeping what it serves meanwhile; the
//! credentials are read again on every dial, so a rotated certificate is
//! picked up without a restart.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use coxswain_ir::{Config, UnboundSocket};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::TlsConnector;
use tonic::Request;

use crate::parts::Joiner;
use crate::pki::Credentials;
use crate::resources::Resources;
use crate::wire::{Ack, Hello, Nack, ProxyMessage, SUBSCRIBE_PATH, proxy_message::Kind};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
// Short enough that a proxy finds a new leader within a few seconds of
// the Lease changing hands; a fleet redialling every 2-3 s costs nothing.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// A first update carries the Gateway's whole config: gRPC's default 4 MiB
/// is about 4,000 routes on one listener. The peer is our own authenticated
/// controller, so the bound only guards against a runaway.
pub const MAX_UPDATE_BYTES: usize = 512 * 1024 * 1024;

/// Where and as whom to subscribe.
#[derive(Clone, Debug)]
pub struct Subscription {
    /// HOST:PORT of the controller's stream.
    pub endpoint: String,
    /// The name the controller's certificate must carry.
    pub server_name: String,
    /// A directory of `ca.crt`, `tls.crt`, `tls.key`.
    pub credentials: PathBuf,
    /// This proxy's name, for the controller's logs.
    pub node: String,
}

/// Serves what arrives. `apply` returns the sockets it could not bind, or
/// why the config was not applied at all (the proxy keeps the previous).
pub trait Applier: Send {
    fn apply(
        &mut self,
        resources: &Resources,
        config: Arc<Config>,
    ) -> impl Future<Output = Result<Vec<UnboundSocket>, String>> + Send;
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read the stream credentials: {0}")]
    Credentials(#[from] crate::pki::PkiError),
    #[error("{0}")]
    Tls(#[from] crate::tls::TlsError),
    #[error("cannot connect to {endpoint}: {error}")]
    Connect { endpoint: String, error: String },
    #[error("HTTP/2: {0}")]
    Http2(#[from] hyper::Error),
    #[error("stream: {0}")]
    Status(#[from] tonic::Status),
}

/// Subscribes forever, starting from `held` (what is served already).
pub async fn subscribe(
    subscription: Subscription,
    mut held: Resources,
    applier: &mut impl Applier,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let mut progressed = false;
        match session(&subscription, &mut held, applier, &mut progressed).await {
            Ok(()) => tracing::info!("config stream ended; dialling again"),
            Err(e) => {
                tracing::warn!(error = %e, endpoint = %subscription.endpoint, "config stream unavailable; serving the current config")
            }
        }
        if progressed {
            backoff = FIRST_BACKOFF;
        }
        // Up to half again as long, so a fleet does not redial in step.
        let jitter = backoff.mul_f64(rand::random::<f64>() / 2.0);
        tokio::time::sleep(backoff + jitter).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn session(
    subscription: &Subscription,
    held: &mut Resources,
    applier: &mut impl Applier,
    progressed: &mut bool,
) -> Result<(), SessionError> {
    let credentials = Credentials::read_dir(&subscription.credentials)?;
    let connector = TlsConnector::from(crate::tls::client_config(&credentials)?);
    let server_name = crate::tls::server_name(&subscription.server_name)?;
    let connect_error = |error: String| SessionError::Connect {
        endpoint: subscription.endpoint.clone(),
        error,
    };
    let tls = tokio::time::timeout(CONNECT_TIMEOUT, async {
        let tcp = TcpStream::connect(&subscription.endpoint)
            .await
            .map_err(|e| connect_error(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        connector
            .connect(server_name, tcp)
            .await
            .map_err(|e| connect_error(format!("TLS: {e}")))
    })
    .await
    .map_err(|_| connect_error("timed out".to_string()))??;
    let (send, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tls))
        .await?;
    let driver = tokio::spawn(connection);
    let result = exchange(subscription, send, held, applier, progressed).await;
    driver.abort();
    result
}

async fn exchange(
    subscription: &Subscription,
    send: hyper::client::conn::http2::SendRequest<tonic::body::Body>,
    held: &mut Resources,
    applier: &mut impl Applier,
    progressed: &mut bool,
) -> Result<(), SessionError> {
    let (tx, rx) = mpsc::channel(4);
    let hello = Hello {
        node: subscription.node.clone(),
        ir_version: coxswain_ir::IR_VERSION,
        held: held.held(),
    };
    let _ = tx.try_send(message(Kind::Hello(hello)));
    let outbound = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut grpc = tonic::client::Grpc::new(H2 {
        send,
        authority: subscription.server_name.clone(),
    })
    .max_decoding_message_size(MAX_UPDATE_BYTES);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::from_static(SUBSCRIBE_PATH);
    let response = grpc
        .streaming(
            Request::new(outbound),
            path,
            tonic_prost::ProstCodec::default(),
        )
        .await?;
    let mut updates: tonic::Streaming<crate::wire::ConfigUpdate> = response.into_inner();
    let mut joiner = Joiner::default();
    while let Some(part) = updates.message().await? {
        *progressed = true;
        let version = part.version.clone();
        let update = match joiner.push(part, MAX_UPDATE_BYTES) {
            Ok(Some(update)) => update,
            Ok(None) => continue,
            Err(e) => {
                let nack = Nack {
                    version,
                    error: e.to_string(),
                };
                tracing::error!(version = %nack.version, error = %nack.error, "config stream: update rejected; serving the previous config");
                if tx.send(message(Kind::Nack(nack))).await.is_err() {
                    break;
                }
                continue;
            }
        };
        let answer = match held.apply(&update) {
            Ok((undo, config)) => match applier.apply(held, config).await {
                Ok(unbound) => {
                    drop(undo);
                    tracing::info!(%version, upserts = update.upserts.len(), removals = update.removals.len(), "config stream: update applied");
                    Kind::Ack(Ack {
                        version,
                        unbound: serde_json::to_vec(&unbound).unwrap_or_default(),
                    })
                }
                Err(error) => {
                    held.revert(undo);
                    Kind::Nack(Nack { version, error })
                }
            },
            Err(e) => Kind::Nack(Nack {
                version,
                error: e.to_string(),
            }),
        };
        if let Kind::Nack(nack) = &answer {
            tracing::error!(version = %nack.version, error = %nack.error, "config stream: update rejected; serving the previous config");
        }
        if tx.send(message(answer)).await.is_err() {
            break;
        }
    }
    Ok(())
}

fn message(kind: Kind) -> ProxyMessage {
    ProxyMessage { kind: Some(kind) }
}

/// One HTTP/2 connection as tonic's transport; requests get the
/// controller's name as their authority.
struct H2 {
    send: hyper::client::conn::http2::SendRequest<tonic::body::Body>,
    authority: String,
}

type Pending = Pin<
    Box<dyn Future<Output = Result<http::Response<hyper::body::Incoming>, hyper::Error>> + Send>,
>;

impl tower_service::Service<http::Request<tonic::body::Body>> for H2 {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = Pending;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        self.send.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<tonic::body::Body>) -> Pending {
        let path = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".to_string());
        if let Ok(uri) = format!("https://{}{path}", self.authority).parse() {
            *request.uri_mut() = uri;
        }
        Box::pin(self.send.send_request(request))
    }
}
