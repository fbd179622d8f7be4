//! The controller's end: accepts proxies over mutual TLS, learns each one's
//! Gateway from its certificate, and streams that Gateway's resources to it,
//! one update in flight at a time. Only the leading replica serves (the one
//! whose status writes count); the others answer UNAVAILABLE and the proxy
//! dials again.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tonic::{Request, Response, Status, Streaming};

use crate::feedback::{PoolReport, Reports};
use crate::identity::GatewayIdentity;
use crate::resources::Resources;
use crate::wire::{
    Ack, ConfigUpdate, Hello, Nack, ProxyMessage, SUBSCRIBE_PATH, proxy_message::Kind,
};

/// Each dedicated Gateway (`namespace/name`) → the resources its pool
/// serves. A Gateway absent here is not sent anything (its proxies keep
/// what they have), so a replica that has not translated yet never empties
/// a pool.
pub type Published = BTreeMap<String, Arc<Resources>>;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What every subscription shares.
#[derive(Clone)]
pub struct Hub {
    configs: watch::Receiver<Arc<Published>>,
    leading: watch::Receiver<bool>,
    reports: watch::Sender<Reports>,
    /// Connections refused: failed handshakes, certificates naming no
    /// Gateway.
    refused: watch::Sender<u64>,
    diffs: Arc<Mutex<Diffs>>,
}

/// Updates between two published sets, worked out once for all the
/// sessions of a Gateway (each would otherwise walk every resource).
#[derive(Default)]
struct Diffs {
    recent: VecDeque<(String, String, Option<ConfigUpdate>)>,
}

/// Enough for a few Gateways changing at once.
const KEPT_DIFFS: usize = 64;

/// What a session knows its proxy holds.
enum Holding {
    /// What it said in its Hello.
    Digests(BTreeMap<String, String>),
    /// A set it acknowledged.
    Set(Arc<Resources>),
}

impl Hub {
    pub fn new(
        configs: watch::Receiver<Arc<Published>>,
        leading: watch::Receiver<bool>,
        reports: watch::Sender<Reports>,
    ) -> Hub {
        Hub {
            configs,
            leading,
            reports,
            refused: watch::Sender::new(0),
            diffs: Arc::default(),
        }
    }

    /// The update from `from` to `to`, computed by the first session that
    /// asks.
    fn update_between(&self, from: &Resources, to: &Resources) -> Option<ConfigUpdate> {
        let (from_version, to_version) = (from.version(), to.version());
        let mut diffs = self.diffs.lock().unwrap_or_else(|e| e.into_inner());
        let known = diffs
            .recent
            .iter()
            .find(|(f, t, _)| *f == from_version && *t == to_version);
        if let Some((_, _, update)) = known {
            return update.clone();
        }
        let update = to.update_from(from);
        if diffs.recent.len() == KEPT_DIFFS {
            diffs.recent.pop_front();
        }
        diffs
            .recent
            .push_back((from_version, to_version, update.clone()));
        update
    }

    pub fn refused(&self) -> watch::Receiver<u64> {
        self.refused.subscribe()
    }

    fn refuse(&self, peer: std::net::SocketAddr, why: &dyn std::fmt::Display) {
        tracing::warn!(%peer, error = %why, "config stream: connection refused");
        self.refused.send_modify(|n| *n += 1);
    }

    fn report(&self, gateway: &str, change: impl FnOnce(&mut PoolReport)) {
        self.reports.send_modify(|reports| {
            change(reports.entry(gateway.to_string()).or_default());
        });
    }
}

/// Serves subscriptions on `listener` until the returned future is dropped.
/// Each handshake uses the newest `tls` (a renewed certificate applies to
/// the next connection; open ones carry on).
pub async fn serve(
    listener: TcpListener,
    tls: watch::Receiver<Arc<rustls::ServerConfig>>,
    hub: Hub,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next() => continue,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "config stream: accept failed");
                continue;
            }
        };
        let acceptor = TlsAcceptor::from(tls.borrow().clone());
        let hub = hub.clone();
        connections.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return hub.refuse(peer, &format!("TLS handshake: {e}")),
                Err(_) => return hub.refuse(peer, &"TLS handshake timed out"),
            };
            let identity = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .ok_or(crate::identity::IdentityError::NoCertificate)
                .and_then(|cert| GatewayIdentity::from_certificate(cert));
            let identity = match identity {
                Ok(identity) => identity,
                Err(e) => return hub.refuse(peer, &e),
            };
            let service = hyper::service::service_fn(move |request| {
                let hub = hub.clone();
                let identity = identity.clone();
                async move { Ok::<_, Infallible>(route(request, hub, identity).await) }
            });
            let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "config stream: connection ended");
            }
        });
    }
}

async fn route(
    request: http::Request<Incoming>,
    hub: Hub,
    identity: GatewayIdentity,
) -> http::Response<tonic::body::Body> {
    if request.uri().path() != SUBSCRIBE_PATH {
        return Status::unimplemented("coxswain.stream.v1.ConfigStream has one method, Subscribe")
            .into_http();
    }
    let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
    grpc.streaming(Subscribe { hub, identity }, request).await
}

struct Subscribe {
    hub: Hub,
    identity: GatewayIdentity,
}

type Updates = std::pin::Pin<Box<dyn Stream<Item = Result<ConfigUpdate, Status>> + Send>>;

impl tower_service::Service<Request<Streaming<ProxyMessage>>> for Subscribe {
    type Response = Response<Updates>;
    type Error = Status;
    type Future = std::future::Ready<Result<Self::Response, Status>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Status>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Streaming<ProxyMessage>>) -> Self::Future {
        if !*self.hub.leading.borrow() {
            return std::future::ready(Err(Status::unavailable(
                "this controller replica does not lead; dial again",
            )));
        }
        // One update in flight: the session waits for the answer to each.
        let (tx, rx) = mpsc::channel(1);
        let session = Session {
            hub: self.hub.clone(),
            gateway: self.identity.to_string(),
            out: tx,
        };
        tokio::spawn(session.run(request.into_inner()));
        let updates = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        std::future::ready(Ok(Response::new(Box::pin(updates))))
    }
}

struct Session {
    hub: Hub,
    gateway: String,
    out: mpsc::Sender<Result<ConfigUpdate, Status>>,
}

/// Why a session ended.
enum End {
    /// The proxy hung up or broke the protocol.
    Proxy,
    /// This replica stopped leading.
    Deposed,
}

impl Session {
    async fn run(self, mut inbound: Streaming<ProxyMessage>) {
        let hello = match inbound.message().await {
            Ok(Some(ProxyMessage {
                kind: Some(Kind::Hello(hello)),
            })) => hello,
            _ => {
                let _ = self
                    .out
                    .send(Err(Status::invalid_argument(
                        "the first message must be Hello",
                    )))
                    .await;
                return;
            }
        };
        tracing::info!(gateway = %self.gateway, node = %hello.node, held = hello.held.len(), "config stream: proxy subscribed");
        self.hub.report(&self.gateway, |r| r.connected += 1);
        let end = self.stream(hello, &mut inbound).await;
        self.hub.report(&self.gateway, |r| {
            r.connected = r.connected.saturating_sub(1);
        });
        if let End::Deposed = end {
            let _ = self
                .out
                .send(Err(Status::unavailable(
                    "this controller replica no longer leads",
                )))
                .await;
        }
        tracing::info!(gateway = %self.gateway, "config stream: proxy left");
    }

    async fn stream(&self, hello: Hello, inbound: &mut Streaming<ProxyMessage>) -> End {
        // A proxy that holds nothing serves nothing yet (and is not ready):
        // it is sent even an empty config.
        let mut fresh = hello.held.is_empty();
        let mut holding =
            Holding::Digests(hello.held.into_iter().map(|h| (h.name, h.digest)).collect());
        let mut configs = self.hub.configs.clone();
        let mut leading = self.hub.leading.clone();
        // A version the proxies rejected is not offered again.
        let mut rejected: Option<String> = None;
        let mut acked: Option<String> = None;
        loop {
            if !*leading.borrow_and_update() {
                return End::Deposed;
            }
            let desired = configs.borrow_and_update().get(&self.gateway).cloned();
            if let Some(desired) = desired {
                let version = desired.version();
                let update = match &holding {
                    Holding::Digests(held) => desired.update_for(held),
                    Holding::Set(held) => self.hub.update_between(held, &desired),
                };
                let update = match update {
                    None if fresh => Some(desired.confirmation()),
                    update => update,
                };
                match update {
                    None if acked.as_ref() != Some(&version) => {
                        // It already serves exactly this (say, from its
                        // last-good copy).
                        self.acknowledged(&version, Vec::new());
                        acked = Some(version);
                        holding = Holding::Set(desired.clone());
                    }
                    Some(update) if rejected.as_ref() != Some(&version) => {
                        match self.send(update, inbound, &mut leading).await {
                            Ok(Answer::Ack(ack)) if ack.version == version => {
                                holding = Holding::Set(desired.clone());
                                fresh = false;
                                let unbound =
                                    serde_json::from_slice(&ack.unbound).unwrap_or_default();
                                self.acknowledged(&version, unbound);
                                acked = Some(version);
                            }
                            Ok(Answer::Ack(_)) => return End::Proxy,
                            Ok(Answer::Nack(nack)) => {
                                tracing::warn!(gateway = %self.gateway, version = %nack.version, error = %nack.error, "config stream: proxy rejected config");
                                self.hub.report(&self.gateway, |r| {
                                    r.rejected = Some((nack.version.clone(), nack.error.clone()));
                                });
                                rejected = Some(version);
                            }
                            Err(end) => return end,
                        }
                        continue;
                    }
                    _ => {}
                }
            }
            tokio::select! {
                changed = configs.changed() => if changed.is_err() { return End::Proxy },
                changed = leading.changed() => if changed.is_err() { return End::Deposed },
                message = inbound.message() => match message {
                    Ok(Some(_)) => {} // nothing unasked is expected; ignored
                    _ => return End::Proxy,
                },
            }
        }
    }

    fn acknowledged(&self, version: &str, unbound: Vec<coxswain_ir::UnboundSocket>) {
        self.hub.report(&self.gateway, |r| {
            r.acked = Some(version.to_string());
            r.unbound = unbound;
            if r.rejected.as_ref().is_some_and(|(v, _)| v == version) {
                r.rejected = None;
            }
        });
    }

    /// Sends `update` and waits for its answer.
    async fn send(
        &self,
        update: ConfigUpdate,
        inbound: &mut Streaming<ProxyMessage>,
        leading: &mut watch::Receiver<bool>,
    ) -> Result<Answer, End> {
        let bytes = prost::Message::encoded_len(&update) as u64;
        for part in crate::parts::split(update, crate::parts::PART_BYTES) {
            if self.out.send(Ok(part)).await.is_err() {
                return Err(End::Proxy);
            }
        }
        self.hub.report(&self.gateway, |r| {
            r.updates_sent += 1;
            r.bytes_sent += bytes;
        });
        loop {
            tokio::select! {
                message = inbound.message() => return match message {
                    Ok(Some(ProxyMessage { kind: Some(Kind::Ack(ack)) })) => Ok(Answer::Ack(ack)),
                    Ok(Some(ProxyMessage { kind: Some(Kind::Nack(nack)) })) => Ok(Answer::Nack(nack)),
                    _ => Err(End::Proxy),
                },
                changed = leading.changed() => {
                    if changed.is_err() || !*leading.borrow() {
                        return Err(End::Deposed);
                    }
                }
            }
        }
    }
}

enum Answer {
    Ack(Ack),
    Nack(Nack),
}
