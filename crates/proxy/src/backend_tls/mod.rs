//! TLS from the gateway to backends (BackendTLSPolicy). Per cluster and
//! client certificate: HTTP/2 when the backend picks it by ALPN on the
//! first connection (one multiplexed connection per endpoint), else a
//! pooled HTTP/1.1 client; and a bare connector for TCP routes. Made on
//! first use. A cluster whose policy cannot be honoured fails its requests
//! (500); nothing is ever sent in plain text instead.

mod clients;
mod connector;
mod identity;
mod trust;
mod verifier;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: held only to find or insert a client set, never across an await or I/O
use std::time::Duration;

use coxswain_ir::{BackendTls, Cluster, UpstreamProtocol, UpstreamTls};
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::crypto::ring;
use rustls::pki_types::ServerName;
use tokio::time::Instant;

use crate::connect_timing::ConnectTiming;
use crate::h2_pool::tcp_connect;
use crate::http::authority::take_host_authority;
use crate::http::body::ClientBody;
use crate::upstream::{UpstreamError, pooled_error};
pub use clients::Clients;
pub use identity::BackendIdentity;
/// The trust roots of a policy (the system store for `System`), shared with
/// JwtAuth's key-set fetches.
pub(crate) use trust::roots;
use verifier::BackendVerifier;

/// How a cluster's requests reach it over TLS.
#[derive(Debug)]
pub enum ClusterTls {
    Verify(Arc<TlsUpstream>),
    /// The policy cannot be honoured: why.
    Invalid(String),
}

impl ClusterTls {
    /// Compiles the cluster's TLS, keeping `previous` (and its pooled
    /// connections) when the settings did not change.
    pub fn compile(cluster: &Cluster, tls: &UpstreamTls, previous: Option<&ClusterTls>) -> Self {
        let h2_only = cluster.protocol == UpstreamProtocol::H2c;
        let idle = cluster
            .policy
            .as_ref()
            .and_then(|p| p.idle_timeout_ms)
            .map_or(crate::cluster::DEFAULT_IDLE, Duration::from_millis);
        match tls {
            UpstreamTls::Invalid { reason } => ClusterTls::Invalid(reason.clone()),
            UpstreamTls::Verify(settings) => match previous {
                Some(ClusterTls::Verify(kept))
                    if kept.settings == *settings
                        && kept.h2_only == h2_only
                        && kept.idle == idle =>
                {
                    ClusterTls::Verify(kept.clone())
                }
                _ => match TlsUpstream::new(settings, h2_only, idle) {
                    Ok(upstream) => ClusterTls::Verify(Arc::new(upstream)),
                    Err(reason) => {
                        tracing::warn!(policy = %settings.policy, %reason, "backend TLS unusable");
                        ClusterTls::Invalid(reason)
                    }
                },
            },
        }
    }
}

/// What the backend chose by ALPN: not known until a first connection.
const UNKNOWN: u8 = 0;
const H2: u8 = 1;
const HTTP1: u8 = 2;

/// One cluster's TLS settings and the clients made from them.
pub struct TlsUpstream {
    settings: BackendTls,
    /// `appProtocol: kubernetes.io/h2c` asked for HTTP/2: only `h2` is
    /// offered.
    h2_only: bool,
    /// How long idle pooled HTTP/1.1 connections are kept.
    idle: Duration,
    verifier: Arc<BackendVerifier>,
    server_name: ServerName<'static>,
    protocol: AtomicU8,
    /// By the listener's client certificate.
    clients: Mutex<Vec<Arc<Clients>>>,
}

impl std::fmt::Debug for TlsUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsUpstream")
            .field("policy", &self.settings.policy)
            .field("sni", &self.settings.sni)
            .finish_non_exhaustive()
    }
}

impl TlsUpstream {
    fn new(settings: &BackendTls, h2_only: bool, idle: Duration) -> Result<TlsUpstream, String> {
        let verifier = BackendVerifier::new(
            trust::roots(&settings.trust)?,
            &settings.sni,
            &settings.subject_alt_names,
            ring::default_provider().signature_verification_algorithms,
        )?;
        let server_name = ServerName::try_from(settings.sni.clone())
            .map_err(|e| format!("hostname {:?}: {e}", settings.sni))?;
        Ok(TlsUpstream {
            settings: settings.clone(),
            h2_only,
            idle,
            verifier: Arc::new(verifier),
            server_name,
            protocol: AtomicU8::new(UNKNOWN),
            clients: Mutex::new(Vec::new()),
        })
    }

    /// The clients for a listener presenting `identity`, or why there are
    /// none (an unusable client certificate).
    pub fn clients(
        &self,
        identity: Option<&Arc<BackendIdentity>>,
        connect_timeout: Duration,
    ) -> Result<Arc<Clients>, String> {
        let mut all = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = all.iter().find(|c| c.is_for(identity)) {
            return Ok(found.clone());
        }
        let made = Arc::new(Clients::build(
            self.verifier.clone(),
            &self.server_name,
            identity,
            self.h2_only,
            (connect_timeout, self.idle),
        )?);
        all.retain(|c| c.is_live());
        all.push(made.clone());
        Ok(made)
    }

    /// A connector and name for a TCP route's connection to the backend.
    pub fn stream(
        &self,
        identity: Option<&Arc<BackendIdentity>>,
        connect_timeout: Duration,
    ) -> Result<(tokio_rustls::TlsConnector, ServerName<'static>), String> {
        let clients = self.clients(identity, connect_timeout)?;
        Ok((clients.stream.clone(), self.server_name.clone()))
    }

    /// Sends `req` (addressed as HTTP/1.1: `https://endpoint`, with `Host`)
    /// over HTTP/2 when the backend chose it, else over pooled HTTP/1.1.
    pub async fn send(
        &self,
        clients: &Clients,
        endpoint: SocketAddr,
        connect_timeout: Duration,
        req: Request<ClientBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let dial = || async {
            let tcp = tcp_connect(endpoint, connect_timeout).await?;
            let handshake = clients.h2_dial.connect(self.server_name.clone(), tcp);
            let tls = tokio::time::timeout(connect_timeout, handshake)
                .await
                .map_err(|_| UpstreamError::connect("TLS handshake timed out"))?
                .map_err(UpstreamError::connect)?;
            if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                self.protocol.store(H2, Ordering::Relaxed);
                return clients
                    .h2
                    .handshake(endpoint, TokioIo::new(tls))
                    .await
                    .map(Some);
            }
            if self.h2_only {
                return Err(UpstreamError::connect(
                    "the backend did not agree to HTTP/2",
                ));
            }
            // Dropped: the pooled client opens its own HTTP/1.1 connections.
            self.protocol.store(HTTP1, Ordering::Relaxed);
            Ok(None)
        };
        let mut dialed = None;
        if self.protocol.load(Ordering::Relaxed) == UNKNOWN && clients.h2.cached(endpoint).is_none()
        {
            let started = Instant::now();
            if dial().await?.is_none() {
                return clients.http1.request(req).await.map_err(pooled_error);
            }
            // This request waited for the HTTP/2 connection it goes on.
            dialed = Some(ConnectTiming::since(started));
        }
        if self.protocol.load(Ordering::Relaxed) == HTTP1 {
            return clients.http1.request(req).await.map_err(pooled_error);
        }
        let req =
            as_h2(req, endpoint).ok_or_else(|| UpstreamError::request("invalid authority"))?;
        let connect = || async {
            dial()
                .await?
                .ok_or_else(|| UpstreamError::connect("the backend stopped offering HTTP/2"))
        };
        let mut response = clients.h2.send(endpoint, req, connect).await?;
        if let Some(timing) = dialed {
            response.extensions_mut().insert(timing);
        }
        Ok(response)
    }
}

/// The HTTP/1.1-shaped request as HTTP/2: `Host` moves into `:authority`.
fn as_h2(req: Request<ClientBody>, endpoint: SocketAddr) -> Option<Request<ClientBody>> {
    let (mut parts, body) = req.into_parts();
    let authority = take_host_authority(&mut parts.headers, endpoint)?;
    let path_and_query = parts.uri.path_and_query().cloned()?;
    parts.uri = Uri::builder()
        .scheme("https")
        .authority(authority)
        .path_and_query(path_and_query)
        .build()
        .ok()?;
    parts.version = Version::HTTP_2;
    Some(Request::from_parts(parts, body))
}
